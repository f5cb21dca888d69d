import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, type TestContext } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config.js';
import { APP_SOURCES, appIdsVariable } from '../../src/presence/normalize/music-apps.js';
import { eventually } from '../support/eventually.js';
import { type Harness, startHarness } from '../support/harness.js';
import { freePort } from '../support/node-process.js';
import { binariesAvailable } from '../support/reverse-proxies.js';

/**
 * The recipes of deploy/ that cannot run here as they would in production (no systemd as PID 1, no
 * registry to pull base images from), checked as far as this machine goes: by systemd's and Compose's own
 * checkers, by running their health checks against the real service, and by the names they use being the
 * ones the service reads.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
const PACKAGE = JSON.parse(read('package.json')) as { main: string };
const DEFAULT_PORT = loadConfig({}).port;

/** Every environment variable src/config.ts reads. */
const KNOWN_VARIABLES = new Set([
  ...[...read('src/config.ts').matchAll(/'([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1] as string),
  ...APP_SOURCES.map(appIdsVariable),
]);

/** The service with one monitored user, answering on loopback. */
async function service({ onTestFinished }: TestContext): Promise<Harness> {
  const h = await startHarness({
    setup: (sim) =>
      sim.createGuild({
        id: '600000000000000001',
        name: 'Guild',
        members: [{ user: { id: '80351110224678912', username: 'user' }, presence: { status: 'online' } }],
      }),
  });
  onTestFinished(() => h.close());
  await h.simulator.waitForReady();
  return h;
}

const statusOf = async (h: Harness, path: string): Promise<number> =>
  (await fetch(`${h.base}${path}`)).status;

describe('systemd unit (deploy/systemd)', () => {
  const unit = join(ROOT, 'deploy/systemd/presently.service');
  const settings = (name: string): string[] =>
    [...read('deploy/systemd/presently.service').matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].map(
      (match) => match[1] as string,
    );
  const available = binariesAvailable('systemd unit', ['systemd-analyze'], 'systemd');

  it.runIf(available)('systemd-analyze verify finds nothing to say', () => {
    const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    expect({ status: verify.status, output: verify.stdout + verify.stderr }).toEqual({
      status: 0,
      output: '',
    });
  });

  it.runIf(available)("is rated OK or better by systemd-analyze security's exposure", () => {
    // The threshold counts in tenths of the exposure level printed.
    const security = spawnSync('systemd-analyze', ['security', '--offline=yes', '--threshold=20', unit], {
      encoding: 'utf8',
    });
    expect(security.stdout).toMatch(
      /Overall exposure level for presently\.service: \d\.\d (OK|SAFE|PERFECT)/,
    );
    expect(security.status).toBe(0);
  });

  it('runs the build as a user of its own, in a directory it may write, restarted when it fails', () => {
    expect(settings('ExecStart')).toEqual([`/usr/bin/node /opt/presently/${PACKAGE.main}`]);
    expect(settings('DynamicUser')).toEqual(['yes']);
    expect(settings('WorkingDirectory')).toEqual([`/var/lib/${settings('StateDirectory')[0]}`]);
    expect(settings('Restart')).toEqual(['on-failure']);
  });

  it('its environment file names only variables the service reads, and loads', () => {
    const env = Object.fromEntries(
      read('deploy/systemd/presently.env')
        .split('\n')
        .filter((line) => line.trim() !== '' && !line.startsWith('#'))
        .map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );
    expect(Object.keys(env).filter((name) => !KNOWN_VARIABLES.has(name))).toEqual([]);
    const config = loadConfig(env);
    expect(config).toMatchObject({ host: '127.0.0.1', port: DEFAULT_PORT, discordToken: null });
    expect(config.trustProxy).not.toBeNull();
  });
});

describe('Dockerfile (deploy/docker)', () => {
  const dockerfile = read('deploy/docker/Dockerfile');
  const instructions = (name: string): string[] =>
    [...dockerfile.replaceAll('\\\n', ' ').matchAll(new RegExp(`^${name} (.*)$`, 'gm'))].map(
      (match) => match[1] as string,
    );

  it('copies from the repository only what is there', () => {
    const sources = instructions('COPY')
      .filter((copy) => !copy.startsWith('--from'))
      .flatMap((copy) => copy.split(/\s+/).slice(0, -1));
    expect(sources.filter((source) => !existsSync(join(ROOT, source)))).toEqual([]);
  });

  it("runs package.json's main, not as root, on the service's default port", () => {
    expect(JSON.parse(instructions('CMD').at(-1) as string)).toEqual(['node', `/app/${PACKAGE.main}`]);
    expect(instructions('USER')).toEqual(['node']);
    expect(instructions('EXPOSE')).toEqual([String(DEFAULT_PORT)]);
  });

  it('its HEALTHCHECK passes while the service answers, and fails where nothing listens', async (context) => {
    const healthcheck = instructions('HEALTHCHECK')[0] as string;
    const [command, ...args] = JSON.parse(healthcheck.slice(healthcheck.indexOf('CMD ') + 4)) as string[];
    // Spawned, not run synchronously: the service answering it runs in this process.
    const check = async (port: number): Promise<number | null> => {
      const child = spawn(command as string, args, { env: { PATH: process.env.PATH, PORT: String(port) } });
      const [code] = (await once(child, 'exit')) as [number | null];
      return code;
    };
    const h = await service(context);
    expect(await check(Number(new URL(h.base).port))).toBe(0);
    expect(await check(await freePort())).toBe(1);
  });
});

describe('compose.yaml (deploy/docker)', () => {
  const available = binariesAvailable('compose.yaml', ['docker-compose'], 'docker-compose');
  const compose = (...args: string[]) =>
    spawnSync('docker-compose', ['--file', join(ROOT, 'deploy/docker/compose.yaml'), ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, DISCORD_TOKEN: 'token-of-the-test' },
    });

  it.runIf(available)('is valid to Compose, with a single and a scale profile', () => {
    const profiles = compose('config', '--profiles');
    expect(profiles.stderr).toBe('');
    expect(profiles.stdout.split('\n').filter(Boolean).sort()).toEqual(['scale', 'single']);
  });

  it.runIf(available)("each node's environment is a configuration of its topology", () => {
    const config = compose('config');
    expect(config.status).toBe(0);
    const { services } = parse(config.stdout) as {
      services: Record<string, { environment?: Record<string, string>; profiles?: string[] }>;
    };
    const env = (name: string): Record<string, string> => services[name]?.environment ?? {};
    const nodes = ['presently', 'ingest', 'api'];
    expect(
      nodes.flatMap((name) => Object.keys(env(name))).filter((name) => !KNOWN_VARIABLES.has(name)),
    ).toEqual([]);

    expect(loadConfig(env('presently'))).toMatchObject({
      role: 'all',
      redisUrl: null,
      database: { kind: 'sqlite' },
    });
    expect(loadConfig(env('ingest'))).toMatchObject({ role: 'ingest', database: { kind: 'postgres' } });
    expect(loadConfig(env('api'))).toMatchObject({ role: 'api', database: { kind: 'postgres' } });

    // The nodes reach the Redis and PostgreSQL of the same file, as the database's own user.
    const postgres = env('postgres');
    for (const node of ['ingest', 'api']) {
      const database = new URL(env(node).DATABASE_URL as string);
      expect(services[database.hostname]?.profiles).toEqual(['scale']);
      expect([database.username, database.password, database.pathname]).toEqual([
        postgres.POSTGRES_USER,
        postgres.POSTGRES_PASSWORD,
        `/${postgres.POSTGRES_DB}`,
      ]);
      expect(services[new URL(env(node).REDIS_URL as string).hostname]?.profiles).toEqual(['scale']);
    }
  });
});

describe('Kubernetes probes (deploy/kubernetes)', () => {
  interface Probe {
    httpGet: { path: string; port: string };
  }
  const spec = parse(read('deploy/kubernetes/probes.yaml')) as {
    ports: { name: string; containerPort: number }[];
    startupProbe: Probe;
    livenessProbe: Probe;
    readinessProbe: Probe;
  };

  it("probe the container's port, the service's default", () => {
    expect(spec.ports).toEqual([{ name: 'http', containerPort: DEFAULT_PORT }]);
    for (const probe of [spec.startupProbe, spec.livenessProbe, spec.readinessProbe]) {
      expect(probe.httpGet.port).toBe('http');
    }
  });

  it('liveness and start-up pass while a node is not ready, and readiness fails then', async (context) => {
    const h = await service(context);
    const paths = [spec.startupProbe, spec.livenessProbe, spec.readinessProbe].map(
      (probe) => probe.httpGet.path,
    );
    await eventually(async () =>
      expect(await Promise.all(paths.map((path) => statusOf(h, path)))).toEqual([200, 200, 200]),
    );
    // A close Discord says must not be retried: the node is up, and cannot do its job.
    h.simulator.faults.closeConnection(4014);
    await eventually(async () => expect(await statusOf(h, spec.readinessProbe.httpGet.path)).toBe(503));
    expect(await statusOf(h, spec.livenessProbe.httpGet.path)).toBe(200);
    expect(await statusOf(h, spec.startupProbe.httpGet.path)).toBe(200);
  });
});
