import { createElement } from 'react';
import TestRenderer, { type ReactTestRenderer } from 'react-test-renderer';
import WebSocket from 'ws';
import type { LanyardReply, LanyardRequest } from './lanyard-process.js';

/**
 * The program lanyard-process.ts runs: `use-lanyard` (npm) in a process of its own, so that it trusts the
 * test's certificate authority the way a browser would, through Node's own store (NODE_EXTRA_CA_CERTS), with
 * its `fetch` and its WebSocket left as they are. It renders the hooks with react-test-renderer; `ws` stands
 * in for the browser's `window.WebSocket`.
 */

const reply = (message: LanyardReply): void => {
  process.send?.(message);
};

const global = globalThis as Record<string, unknown>;
global.window ??= globalThis;
global.WebSocket = class ReportingWebSocket extends WebSocket {
  constructor(url: string | URL, ...rest: unknown[]) {
    reply({ kind: 'socket', url: String(url) });
    super(url, ...(rest as []));
  }
};
const lanyard = await import('use-lanyard');
const renderers: ReactTestRenderer[] = [];

function Watch({ hook }: { hook: () => unknown }): null {
  const presence = hook();
  if (presence !== undefined) reply({ kind: 'presence', presence });
  return null;
}

process.on('message', async (request: LanyardRequest) => {
  const options = { api: { hostname: request.hostname, secure: true } };
  if (request.kind === 'watch') {
    const hook = () => lanyard.useLanyardWS(request.id, options);
    renderers.push(TestRenderer.create(createElement(Watch, { hook })));
  } else if (request.kind === 'get') {
    const result = await lanyard.get(request.id, options);
    reply({
      kind: 'got',
      success: result.success,
      ...(result.success ? { data: result.data } : { status: result.error.code }),
    });
  } else {
    // Unmounting closes the hook's socket and stops it from reconnecting.
    for (const renderer of renderers.splice(0)) renderer.unmount();
    reply({ kind: 'unmounted' });
  }
});
reply({ kind: 'started' });
