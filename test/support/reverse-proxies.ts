import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { freePort, outputOf } from './node-process.js';

/**
 * Real nginx and Caddy in front of the service, each started from the configuration in deploy/ with only its
 * ports, certificate paths and upstream filled in, on loopback ports of the test's choosing and with
 * everything they write in a directory of their own.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Where a binary is on the PATH (or in the sbin directories a non-root PATH may lack), or null. */
function which(binary: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
  return dirs.map((dir) => join(dir, binary)).find((path) => existsSync(path)) ?? null;
}

/**
 * Whether a proxy suite can run: every binary is installed. Where one is missing the suite is skipped with a
 * notice, unless REQUIRE_PROXIES=1 (CI sets it): there a missing binary fails the run.
 */
export function binariesAvailable(suite: string, binaries: string[], install: string): boolean {
  const missing = binaries.filter((binary) => which(binary) === null);
  if (missing.length === 0) return true;
  const message = `${suite}: ${missing.join(', ')} missing (apt-get install ${install})`;
  if (process.env.REQUIRE_PROXIES === '1') throw new Error(`REQUIRE_PROXIES=1 but ${message}`);
  console.warn(`\n[skipped] ${message}\n`);
  return false;
}

/**
 * A file of deploy/ with each of `replacements` made. A text that is no longer in the file fails the test:
 * the test must keep running the configuration people copy, not a copy of its own.
 */
export function deployFile(path: string, replacements: Record<string, string>): string {
  let text = readFileSync(join(ROOT, 'deploy', path), 'utf8');
  for (const [from, to] of Object.entries(replacements)) {
    if (!text.includes(from)) throw new Error(`deploy/${path} no longer contains ${JSON.stringify(from)}`);
    text = text.replaceAll(from, to);
  }
  return text;
}

/** A key and a self-signed certificate for 127.0.0.1, ::1 and localhost, made by openssl into `dir`. */
export function selfSignedCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-days', '2', '-subj', '/CN=presently-test', '-keyout', key, '-out', cert],
      ...['-addext', 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost'],
    ],
    { stdio: 'pipe' },
  );
  return { cert, key };
}

/** An HTTPS answer read whole. */
export interface HttpsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET over https to `[::1]:port`, trusting the certificate authority in the file `ca` (and nothing else). */
export function httpsGet(
  port: number,
  path: string,
  ca: string,
  headers: Record<string, string> = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '::1', port, path, ca: readFileSync(ca), headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

export interface ReverseProxy {
  readonly name: string;
  /** The https port, on ::1. */
  readonly httpsPort: number;
  /** The plain http port, which redirects to https. */
  readonly httpPort: number;
  /** The certificate authority a client must trust to reach `httpsPort` (a PEM file). */
  readonly ca: string;
  /** Everything the proxy wrote, for a test's failure message. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts `child`, then asks `/v1/health` through it until it answers 200 (the proxies say nothing when they
 * listen); `ca()` is the authority to trust, read again on each try (Caddy writes its own once started).
 */
async function untilProxying(
  proxy: Omit<ReverseProxy, 'ca' | 'stop'> & { child: ChildProcess; dir: string },
  ca: () => string,
): Promise<ReverseProxy> {
  const exited = once(proxy.child, 'exit');
  const stop = async (): Promise<void> => {
    if (proxy.child.exitCode === null && proxy.child.signalCode === null) {
      proxy.child.kill('SIGTERM');
      const timer = setTimeout(() => proxy.child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(proxy.dir, { recursive: true, force: true });
  };
  // The proxy ending before it proxies fails at once rather than at the deadline.
  const endedEarly = exited.then(() => {
    throw new Error(`${proxy.name} exited with ${proxy.child.exitCode}:\n${proxy.output()}`);
  });
  endedEarly.catch(() => undefined);
  try {
    await Promise.race([
      eventually(async () => {
        if (!existsSync(ca())) throw new Error(`${proxy.name} has no certificate yet:\n${proxy.output()}`);
        const { status } = await httpsGet(proxy.httpsPort, '/v1/health', ca());
        if (status !== 200) throw new Error(`${proxy.name} answered /v1/health with ${status}`);
      }, 15_000),
      endedEarly,
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  const { name, httpsPort, httpPort, output } = proxy;
  return { name, httpsPort, httpPort, output, ca: ca(), stop };
}

/**
 * nginx with deploy/nginx/presently.conf in front of the service at `127.0.0.1:upstreamPort`, TLS with a
 * self-signed certificate. Run as a user's own process: everything it writes (pid, logs, buffers) goes
 * into its directory.
 */
export async function startNginx(upstreamPort: number): Promise<ReverseProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'presently-nginx-'));
  // Run as root, nginx's workers drop to nobody and must reach their buffer directories.
  chmodSync(dir, 0o755);
  const temp = join(dir, 'temp');
  mkdirSync(temp, { mode: 0o777 });
  chmodSync(temp, 0o777);
  const { cert, key } = selfSignedCertificate(dir);
  const [httpsPort, httpPort] = [await freePort(), await freePort()];
  const site = deployFile('nginx/presently.conf', {
    'listen 80;': `listen 127.0.0.1:${httpPort};`,
    'listen [::]:80;': `listen [::1]:${httpPort};`,
    'listen 443 ssl;': `listen 127.0.0.1:${httpsPort} ssl;`,
    'listen [::]:443 ssl;': `listen [::1]:${httpsPort} ssl;`,
    'server 127.0.0.1:4001;': `server 127.0.0.1:${upstreamPort};`,
    '/etc/letsencrypt/live/presence.example.com/fullchain.pem': cert,
    '/etc/letsencrypt/live/presence.example.com/privkey.pem': key,
  });
  writeFileSync(join(dir, 'presently.conf'), site);
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      `pid ${join(dir, 'nginx.pid')};`,
      'worker_processes 1;',
      'events {}',
      'http {',
      `  access_log ${join(dir, 'access.log')};`,
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `  ${kind}_temp_path ${join(temp, kind)};`,
      ),
      `  include ${join(dir, 'presently.conf')};`,
      '}',
    ].join('\n'),
  );
  const child = spawn(
    which('nginx') ?? 'nginx',
    ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log'), '-g', 'daemon off;'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = outputOf(child);
  return untilProxying(
    {
      name: 'nginx',
      httpsPort,
      httpPort,
      child,
      dir,
      output: () => {
        const errors = join(dir, 'error.log');
        return output() + (existsSync(errors) ? readFileSync(errors, 'utf8') : '');
      },
    },
    () => cert,
  );
}

/**
 * Caddy with deploy/caddy/Caddyfile in front of the service at `127.0.0.1:upstreamPort`. The site is
 * `https://[::1]:<port>`, for which Caddy issues a certificate from its own local authority, as it does for
 * any address no public authority would certify; its admin endpoint is off and the authority is not put
 * into the system's trust.
 */
export async function startCaddy(upstreamPort: number): Promise<ReverseProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'presently-caddy-'));
  const [httpsPort, httpPort] = [await freePort(), await freePort()];
  const site = deployFile('caddy/Caddyfile', {
    'presence.example.com': `https://[::1]:${httpsPort}`,
    '127.0.0.1:4001': `127.0.0.1:${upstreamPort}`,
  });
  const storage = join(dir, 'data');
  writeFileSync(join(dir, 'site.caddyfile'), site);
  writeFileSync(
    join(dir, 'Caddyfile'),
    [
      '{',
      '\tadmin off',
      '\tskip_install_trust',
      `\thttp_port ${httpPort}`,
      `\tstorage file_system ${storage}`,
      '}',
      `import ${join(dir, 'site.caddyfile')}`,
      '',
    ].join('\n'),
  );
  const child = spawn(
    which('caddy') ?? 'caddy',
    ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '',
        HOME: dir,
        XDG_CONFIG_HOME: join(dir, 'config'),
        XDG_DATA_HOME: join(dir, 'data-home'),
      },
    },
  );
  return untilProxying({ name: 'caddy', httpsPort, httpPort, child, dir, output: outputOf(child) }, () =>
    join(storage, 'pki', 'authorities', 'local', 'root.crt'),
  );
}
