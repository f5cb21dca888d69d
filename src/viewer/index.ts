/**
 * The landing page's script: the live viewer (viewer.ts) and, in demo mode, "try the bot" (try-bot.ts).
 * Bundled for browsers by esbuild (src/http/browser-scripts.ts), on `presently/client`'s socket.
 */
import { startTryBot } from './try-bot.js';
import { startViewer } from './viewer.js';

startViewer();
startTryBot();
