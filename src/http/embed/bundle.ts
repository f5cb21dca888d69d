import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SCRIPT_NAME } from '../../embed/options.js';
import { bodyEtag } from '../etag.js';

/** embed.js gzipped may weigh this much at most: what a page pays to show a presence. */
export const EMBED_SIZE_BUDGET_GZIP_BYTES = 15 * 1024;

/** Where `npm run build` writes embed.js: beside this module's compiled file, in dist/. */
export const BUILT_BUNDLE = new URL(`./${SCRIPT_NAME}`, import.meta.url);

/** The element's source: there when the service runs from src/ (tests, `npm run dev`), not in dist/. */
const EMBED_SOURCE = new URL('../../embed/index.ts', import.meta.url);

export interface EmbedBundle {
  body: Buffer;
  etag: string;
}

/**
 * embed.js made from the element's source by esbuild (a development dependency: production serves the
 * file the build wrote). One minified IIFE, which runs the same as a classic `<script src defer>` and as
 * `<script type="module">`; the client of src/client is bundled in, so it speaks the protocol the
 * package's client speaks. ASCII output: the file reads the same under any charset a page declares.
 */
export async function buildEmbedBundle(entry: URL = EMBED_SOURCE): Promise<string> {
  const { build } = await import('esbuild');
  const result = await build({
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
  if (!file) throw new Error('esbuild wrote no embed.js');
  return file.text;
}

let loading: Promise<EmbedBundle> | null = null;

async function load(): Promise<EmbedBundle> {
  let body: Buffer;
  if (existsSync(BUILT_BUNDLE)) body = await readFile(BUILT_BUNDLE);
  else if (existsSync(EMBED_SOURCE)) body = Buffer.from(await buildEmbedBundle());
  else throw new Error(`${fileURLToPath(BUILT_BUNDLE)} is missing: \`npm run build\` writes it`);
  return { body, etag: bodyEtag(body) };
}

/**
 * embed.js, read (or, from source, built) on the first request and kept for the life of the process: a
 * service started from source serves what its source says, without a build step first.
 */
export function embedBundle(): Promise<EmbedBundle> {
  loading ??= load().catch((error: unknown) => {
    loading = null;
    throw error;
  });
  return loading;
}
