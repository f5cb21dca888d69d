import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../errors.js';
import { jsonOf, takeJsonBodies } from '../json-body.js';

/** A command line or a button press is small. */
const DEMO_BOT_BODY_LIMIT = 4 * 1024;

export interface DemoBotAnswer {
  content: string;
  ephemeral: boolean;
  buttons: Array<{ label: string; interaction: string; custom_id: string }>;
  files: Array<{ name: string; bytes: number }>;
}

/** The demo's bot, as the route needs it; a refusal is thrown as an error whose message the user reads. */
export interface DemoBotPort {
  run(line: string): Promise<DemoBotAnswer>;
  press(interaction: string, customId: string): Promise<DemoBotAnswer>;
  /** Whether an error is the user's command being refused (said back) rather than a fault. */
  refused(error: unknown): error is Error;
}

/**
 * `POST /demo/bot`, in demo mode only: the landing page's "try the bot" runs `/presently …` as the demo's
 * featured user, `{"command": "kv set key:mood value:calm"}`, or presses a button of an earlier answer,
 * `{"interaction": "…", "button": "…"}`. Answers `{success: true, data: answer}`.
 */
export const demoBotRoutes =
  (bot: DemoBotPort): FastifyPluginAsync =>
  async (app) => {
    takeJsonBodies(app);
    app.post(
      '/demo/bot',
      { schema: { hide: true }, bodyLimit: DEMO_BOT_BODY_LIMIT },
      async (request, reply) => {
        const body = jsonOf(request.body) as Record<string, unknown> | undefined;
        const { command, interaction, button } = body ?? {};
        let answer: DemoBotAnswer;
        try {
          if (typeof command === 'string') answer = await bot.run(command);
          else if (typeof interaction === 'string' && typeof button === 'string') {
            answer = await bot.press(interaction, button);
          } else {
            throw new ApiError(
              'bad_request',
              'send {"command": "help"}, or {"interaction", "button"} to press one',
            );
          }
        } catch (error) {
          if (bot.refused(error)) throw new ApiError('bad_request', error.message);
          throw error;
        }
        return reply.header('cache-control', 'no-store').send({ success: true, data: answer });
      },
    );
  };
