/**
 * `npm run build`'s last step: embed.js (src/embed/, bundled by esbuild) written where the compiled
 * service serves it from, dist/http/embed/embed.js. The bundler's options are the service's own
 * (src/http/embed/bundle.ts, compiled by the step before), the ones it builds with when run from source.
 * A bundle over its size budget fails the build.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { BUILT_BUNDLE, buildEmbedBundle, EMBED_SIZE_BUDGET_GZIP_BYTES } from '../dist/http/embed/bundle.js';

const bundle = await buildEmbedBundle(new URL('../src/embed/index.ts', import.meta.url));
const gzipped = gzipSync(bundle).length;
if (gzipped > EMBED_SIZE_BUDGET_GZIP_BYTES) {
  throw new Error(`embed.js is ${gzipped} bytes gzipped, over its budget of ${EMBED_SIZE_BUDGET_GZIP_BYTES}`);
}
await writeFile(BUILT_BUNDLE, bundle);
process.stdout.write(`${fileURLToPath(BUILT_BUNDLE)}: ${bundle.length} bytes, ${gzipped} gzipped\n`);
