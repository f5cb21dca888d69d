import type { BrowserContext } from 'playwright-core';
import { solidPng } from '../../src/simulator/png.js';

/**
 * The players' own hosts (album art on i.scdn.co, …) answer a browser with a small image: it reaches nothing
 * beyond loopback, and a page shows what it would show online, with no failed request.
 */
export async function answerImagesOffline(context: BrowserContext): Promise<void> {
  const image = solidPng(64, [0x1d, 0xb9, 0x54]);
  await context.route(
    (url) => url.protocol === 'https:',
    (route) => route.fulfill({ status: 200, contentType: 'image/png', body: image }),
  );
}
