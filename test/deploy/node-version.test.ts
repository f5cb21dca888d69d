import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { outputOf } from '../support/node-process.js';

/**
 * An unsupported Node.js is refused before any work, with the version needed (package.json's `engines`)
 * and how to get it: by `npm ci` (engine-strict in .npmrc), by `npm start` before it builds, by `npm test`
 * and by vitest itself before a test starts. The machine's own older Node, where it has one (Debian's
 * /usr/bin/node is 20), runs them for real.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENGINES = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }
).engines.node;
const NVMRC = readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim();
const CHECK = join(ROOT, 'scripts/check-node.cjs');

interface Run {
  code: number | null;
  output: string;
}

async function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own, so that what npm started goes too.
    detached: true,
  });
  const output = outputOf(child);
  // What was not refused (a build, the service) is ended: the test fails on its output.
  const timer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 15_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, output: output() } satisfies Run;
}

/** The refusal names the version needed, the one found, and both ways to get the right one. */
function expectRefusal(result: Run, version: string): void {
  expect(result.code, result.output).not.toBe(0);
  expect(result.output).toContain(`Presently needs Node.js ${ENGINES} (package.json "engines")`);
  expect(result.output).toContain(`this is Node.js ${version}`);
  expect(result.output).toContain('nvm install && nvm use');
  expect(result.output).toContain(`npm install --prefix ~/node${NVMRC} node-linux-${process.arch}@${NVMRC}`);
  expect(result.output).toContain('docs/testing.md');
}

describe('scripts/check-node.cjs', () => {
  it('refuses a version below engines, naming it and the fix', async () => {
    expectRefusal(await run(process.execPath, [CHECK, '20.20.2']), '20.20.2');
    expectRefusal(await run(process.execPath, [CHECK, '21.7.3']), '21.7.3');
  });

  it('passes this Node, and the versions engines allows, saying nothing', async () => {
    for (const args of [[CHECK], [CHECK, ENGINES.replace('>=', '')], [CHECK, `${NVMRC}.0.0`]]) {
      expect(await run(process.execPath, args)).toEqual({ code: 0, output: '' });
    }
  });
});

/** The machine's older Node (and its npm, beside it), or null: then the suite below is skipped. */
function olderNode(): { node: string; version: string; env: NodeJS.ProcessEnv } | null {
  const node = '/usr/bin/node';
  if (!existsSync(node) || !existsSync(join(dirname(node), 'npm'))) return null;
  const probe = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  const version = probe.stdout.trim();
  if (probe.status !== 0 || Number(version.split('.')[0]) >= Number(NVMRC)) return null;
  // Its directory first on the PATH: npm, its scripts and npm's own `#!/usr/bin/env node` run on it.
  return { node, version, env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH}` } };
}

const older = olderNode();
if (!older) console.warn('\n[skipped] an older Node.js: no /usr/bin/node older than .nvmrc with its npm\n');

describe.runIf(older)(`on the machine's older Node.js`, () => {
  const { node, version, env } = older ?? { node: '', version: '', env: {} };
  const scratch = mkdtempSync(join(tmpdir(), 'presently-old-node-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('the check refuses it by itself', async () => {
    const result = await run(node, [CHECK], { env });
    expectRefusal(result, version);
    expect(result.output).toContain(`(${node})`);
  });

  it('npm start refuses it before building', async () => {
    const result = await run('npm', ['start'], { env });
    expectRefusal(result, version);
    expect(result.output).toContain('prebuild');
    expect(result.output).not.toContain('tsc -p');
  });

  it('npm test and vitest refuse it before a test starts', async () => {
    expectRefusal(await run('npm', ['test', '--', 'test/presence/nothing-here'], { env }), version);
    const vitest = await run(node, ['node_modules/vitest/vitest.mjs', 'run', 'test/presence/nothing-here'], {
      env,
    });
    expectRefusal(vitest, version);
    expect(vitest.output).not.toMatch(/Test Files/);
  });

  it('npm ci refuses it before installing anything (engine-strict)', async () => {
    for (const file of ['package.json', 'package-lock.json', '.npmrc']) {
      copyFileSync(join(ROOT, file), join(scratch, file));
    }
    const args = ['ci', '--dry-run', '--ignore-scripts', '--offline'];
    const refused = await run('npm', args, { cwd: scratch, env });
    expect(refused.code, refused.output).not.toBe(0);
    expect(refused.output).toContain('EBADENGINE');
    expect(refused.output).toContain(`Required: {"node":"${ENGINES}"}`);
    expect(refused.output).toContain(`"node":"v${version}"`);
    // The same files on this Node install.
    const accepted = await run('npm', args, { cwd: scratch });
    expect(accepted.code, accepted.output).toBe(0);
  });
});
