import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { SCRIPT_NAME } from '../embed/options.js';

/**
 * The service's browser scripts, each bundled from browser TypeScript (on src/client) by esbuild: embed.js
 * and the landing page's viewer. `npm run build` writes them into dist/ (scripts/build-browser.mjs); a
 * service run from source (tests, `npm run dev`) bundles each in memory the first time it is asked for.
 */
export interface BrowserScript {
  /** Its entry module, under src/; the tsconfig.json beside it is the bundle's. */
  entry: string;
  /** Where `npm run build` writes it, under dist/: beside the module that serves it. */
  file: string;
  /** Gzipped, it may weigh this much at most: `npm run build` fails past it. */
  budgetGzipBytes: number;
}

/** embed.js gzipped may weigh this much at most: what a page pays to show a presence. */
export const EMBED_SIZE_BUDGET_GZIP_BYTES = 15 * 1024;

export const EMBED_SCRIPT: BrowserScript = {
  entry: 'embed/index.ts',
  file: `http/embed/${SCRIPT_NAME}`,
  budgetGzipBytes: EMBED_SIZE_BUDGET_GZIP_BYTES,
};

/** The landing page's script: the live viewer and the demo's "try the bot". */
export const VIEWER_SCRIPT: BrowserScript = {
  entry: 'viewer/index.ts',
  file: 'http/page/viewer.js',
  budgetGzipBytes: 8 * 1024,
};

export const BROWSER_SCRIPTS: readonly BrowserScript[] = [EMBED_SCRIPT, VIEWER_SCRIPT];

/** src/ when the service runs from source, dist/ when built: this module is http/browser-scripts under it. */
const ROOT = new URL('../', import.meta.url);

/** Where `npm run build` writes the script, beside this module's compiled file in dist/. */
export function builtScript(script: BrowserScript): URL {
  return new URL(script.file, ROOT);
}

/**
 * The script made from its source under `sourceRoot` by esbuild (a development dependency, loaded only
 * here: production serves the file the build wrote). One minified IIFE, which runs the same as a classic
 * `<script src defer>` and as `<script type="module">`; the client of src/client is bundled in, so it
 * speaks the protocol the package's client speaks. ASCII output: the file reads the same under any charset
 * a page declares.
 */
export function bundleBrowserScript(script: BrowserScript, sourceRoot: URL = ROOT): string {
  const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
  const entry = new URL(script.entry, sourceRoot);
  const result = esbuild.buildSync({
    entryPoints: [fileURLToPath(entry)],
    tsconfig: fileURLToPath(new URL('./tsconfig.json', entry)),
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
  });
  const [file] = result.outputFiles;
  if (!file) throw new Error(`esbuild wrote nothing for ${script.entry}`);
  return file.text;
}

const loaded = new Map<BrowserScript, Buffer>();

function load(script: BrowserScript): Buffer {
  const built = builtScript(script);
  if (existsSync(built)) return readFileSync(built);
  if (existsSync(new URL(script.entry, ROOT))) return Buffer.from(bundleBrowserScript(script));
  throw new Error(`${fileURLToPath(built)} is missing: \`npm run build\` writes it`);
}

/**
 * The script, read (or, from source, bundled) the first time it is asked for and kept for the life of the
 * process: a service started from source serves what its source says, without a build step first.
 */
export function browserScript(script: BrowserScript): Buffer {
  let body = loaded.get(script);
  if (body === undefined) {
    body = load(script);
    loaded.set(script, body);
  }
  return body;
}
