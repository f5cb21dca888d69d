/**
 * `npm run build`'s last step: the browser scripts (embed.js from src/embed/, the landing page's viewer
 * from src/viewer/), bundled by esbuild and written where the compiled service serves them from, in dist/.
 * The bundler's options are the service's own (src/http/browser-scripts.ts, compiled by the step before), the
 * ones it builds with when run from source. A script over its size budget fails the build.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { BROWSER_SCRIPTS, builtScript, bundleBrowserScript } from '../dist/http/browser-scripts.js';

const SOURCE = new URL('../src/', import.meta.url);

for (const script of BROWSER_SCRIPTS) {
  const bundle = bundleBrowserScript(script, SOURCE);
  const gzipped = gzipSync(bundle).length;
  if (gzipped > script.budgetGzipBytes) {
    throw new Error(
      `${script.file} is ${gzipped} bytes gzipped, over its budget of ${script.budgetGzipBytes}`,
    );
  }
  const file = builtScript(script);
  await writeFile(file, bundle);
  process.stdout.write(`${fileURLToPath(file)}: ${bundle.length} bytes, ${gzipped} gzipped\n`);
}
