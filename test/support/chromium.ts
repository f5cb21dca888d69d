import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * Debian's Chromium, driven by playwright-core (which downloads no browser of its own): for the card
 * tests and the README's example cards.
 */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Headless, and quiet: no network of its own (updates, sync, QUIC probes), no first-run pages. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function hasChromium(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/**
 * Whether a browser suite can run: Chromium is there, and so is every other path in `alsoNeeds`. Where one
 * is missing the suite is skipped with a notice, unless REQUIRE_CHROMIUM=1 (CI sets it): there a missing
 * browser fails the run instead of silently testing less. `install` is what to apt-get.
 */
export function chromiumAvailable(suite: string, alsoNeeds: string[] = [], install = 'chromium'): boolean {
  const missing = [CHROMIUM_PATH, ...alsoNeeds].filter((path) => !existsSync(path));
  if (missing.length === 0) return true;
  const message = `${suite}: ${missing.join(', ')} missing (apt-get install ${install})`;
  if (process.env.REQUIRE_CHROMIUM === '1') throw new Error(`REQUIRE_CHROMIUM=1 but ${message}`);
  console.warn(`\n[skipped] ${message}\n`);
  return false;
}

export interface Chromium {
  context: BrowserContext;
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/**
 * Chromium with a new, empty profile, removed again on close. `env` goes to the browser's processes
 * (`FONTCONFIG_FILE` chooses the fonts it may use).
 */
export async function launchChromium(
  options: { deviceScaleFactor?: number; env?: Record<string, string> } = {},
): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'presently-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      deviceScaleFactor: options.deviceScaleFactor ?? 1,
      ...(options.env ? { env: { ...process.env, ...options.env } as Record<string, string> } : {}),
      viewport: { width: 800, height: 600 },
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}

/*
 * The few browser APIs that functions run in the page use. The project compiles without the DOM library
 * (it is Node code), so they are declared here; a file that evaluates code in a page declares `document`
 * as a `PageDocument`.
 */
export interface PageImage {
  crossOrigin: string;
  id: string;
  src: string;
  naturalWidth: number;
  naturalHeight: number;
  onload: (() => void) | null;
  onerror: (() => void) | null;
}
export interface PageCanvas {
  width: number;
  height: number;
  getContext(kind: '2d'): {
    drawImage(image: PageImage, x: number, y: number): void;
    getImageData(x: number, y: number, width: number, height: number): { data: ArrayLike<number> };
  } | null;
}
export interface PageElement {
  textContent: string | null;
  href: { baseVal: string };
  width: { animVal: { value: number } };
  height: { baseVal: { value: number } };
  getBBox(): { width: number };
}
export interface PageDocument {
  createElement(tag: 'img'): PageImage;
  createElement(tag: 'canvas'): PageCanvas;
  getElementById(id: string): PageImage | null;
  body: { append(node: unknown): void; style: { background: string } };
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): ArrayLike<PageElement>;
}
declare const document: PageDocument;

/** The id of the <img> `showAsImage` puts the card in. */
export const CARD_IMAGE_ID = 'card';

/**
 * Shows `url` as an <img> on an otherwise empty page of the same origin (served by the browser driver,
 * not the service), as a README shows a card: same-origin, so no opaque origin or private-network rule is
 * in the way, and the canvas can read it back. Resolves when the image has loaded; rejects if it fails.
 */
export async function showAsImage(
  page: Page,
  url: string,
  background = 'transparent',
): Promise<{ width: number; height: number }> {
  const host = `${new URL(url).origin}/__card-page__`;
  await page.route(host, (route) =>
    route.fulfill({ contentType: 'text/html', body: '<!doctype html><body style="margin:0">' }),
  );
  await page.goto(host);
  return page.evaluate(
    async ({ src, id, background }) => {
      document.body.style.background = background;
      const img = document.createElement('img');
      img.crossOrigin = 'anonymous';
      img.id = id;
      document.body.append(img);
      await new Promise<void>((resolve, reject) => {
        img.onload = () => resolve();
        img.onerror = () => reject(new Error(`the card did not load: ${src}`));
        img.src = src;
      });
      return { width: img.naturalWidth, height: img.naturalHeight };
    },
    { src: url, id: CARD_IMAGE_ID, background },
  );
}

/** RGB of the shown card at card coordinates (its natural size), drawn through a canvas. */
export function pixelsOf(page: Page, points: [x: number, y: number][]): Promise<number[][]> {
  return page.evaluate(
    ({ id, at }) => {
      const img = document.getElementById(id);
      if (!img) throw new Error('no card shown');
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const context2d = canvas.getContext('2d');
      context2d?.drawImage(img, 0, 0);
      return at.map(([x, y]) =>
        Array.from(context2d?.getImageData(x, y, 1, 1).data ?? [], Number).slice(0, 3),
      );
    },
    { id: CARD_IMAGE_ID, at: points },
  );
}
