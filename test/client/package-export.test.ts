import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `presently/client` as a user gets it: the package built the way `npm run build` builds it (into a copy of
 * the package, so the worktree's dist is left alone), then imported by its own name through `exports`.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
let pkg: string;

beforeAll(async () => {
  pkg = await mkdtemp(join(tmpdir(), 'presently-package-'));
  await copyFile(join(ROOT, 'package.json'), join(pkg, 'package.json'));
  await symlink(join(ROOT, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  await run(process.execPath, [
    join(ROOT, 'node_modules/typescript/bin/tsc'),
    '-p',
    join(ROOT, 'tsconfig.build.json'),
    '--outDir',
    join(pkg, 'dist'),
  ]);
}, 120_000);

afterAll(async () => {
  if (pkg) await rm(pkg, { recursive: true, force: true });
});

describe('the presently/client export', () => {
  it('resolves by the package name to the built client', async () => {
    await writeFile(
      join(pkg, 'consumer.mjs'),
      [
        "const client = await import('presently/client');",
        "const api = new client.PresentlyClient({ baseUrl: 'https://presently.example' });",
        "console.log(JSON.stringify({ names: Object.keys(client).sort(), card: api.cardUrl('1') }));",
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, [join(pkg, 'consumer.mjs')], { cwd: pkg });
    const { names, card } = JSON.parse(stdout) as { names: string[]; card: string };
    expect(names).toEqual(expect.arrayContaining(['PresentlyClient', 'PresentlyError', 'PresentlySocket']));
    expect(card).toBe('https://presently.example/v1/users/1/card.svg');
  });

  it('loads no server code: the built client imports only its own files', async () => {
    const index = await readFile(join(pkg, 'dist/client/index.js'), 'utf8');
    const files = ['index', 'rest', 'socket', 'frames', 'backoff', 'emitter', 'errors', 'types'];
    for (const file of [...files, 'events', 'event-stream', 'user-id']) {
      const source = await readFile(join(pkg, `dist/client/${file}.js`), 'utf8');
      const specifiers = [...source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => match[1]);
      for (const specifier of specifiers) expect(specifier, `${file}.js`).toMatch(/^\.\/[a-z-]+\.js$/);
    }
    expect(index).toContain('PresentlySocket');
  });

  it('comes with types a TypeScript user compiles against (no DOM library needed)', async () => {
    await writeFile(
      join(pkg, 'consumer.ts'),
      [
        "import { PresentlyClient, PresentlyError, type Presence, type PresenceUpdate } from 'presently/client';",
        "import WebSocket from 'ws';",
        "const api = new PresentlyClient({ baseUrl: 'https://presently.example', apiKey: 'prs_x' });",
        "const presence: Promise<Presence> = api.presence('1');",
        "const socket = api.socket({ WebSocket, subscribe: ['1'], compression: 'zlib_json' });",
        "socket.on('update', (update: PresenceUpdate) => update.now_playing?.song);",
        "api.events(['1'], (update: PresenceUpdate) => update.user_id, { onError: () => undefined }).close();",
        'const error = new PresentlyError("user_not_monitored", 404, "m");',
        'export { error, presence };',
      ].join('\n'),
    );
    await writeFile(
      join(pkg, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022'],
          types: ['node'],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
        },
        files: ['consumer.ts'],
      }),
    );
    const checked = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', pkg], {
      cwd: pkg,
    }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(checked).toBe('');
  });
});
