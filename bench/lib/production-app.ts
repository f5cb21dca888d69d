import { type App, type AppOptions, startApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { setHeapGrowth } from '../../src/ops/heap-growth.js';

/**
 * The service started as src/main.ts starts it (the heap's growth set, then startApp), on loopback against
 * the simulated Discord the driver names (TOKEN, API_URL, CDN_URL), with `env` for the rest.
 */
export function startProductionApp(env: Record<string, string>, options: AppOptions): Promise<App> {
  const config = loadConfig({
    DISCORD_TOKEN: process.env.TOKEN as string,
    DISCORD_API_URL: process.env.API_URL as string,
    DISCORD_CDN_URL: process.env.CDN_URL as string,
    HOST: '127.0.0.1',
    PORT: '0',
    ...env,
  });
  setHeapGrowth(config.heapGrowingPercent);
  return startApp(config, options);
}
