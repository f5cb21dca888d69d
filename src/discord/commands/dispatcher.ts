import type { Logger } from 'pino';
import type { Metrics } from '../../ops/metrics.js';
import type { Snowflake } from '../../presence/model.js';
import type { Delivery } from '../messenger.js';
import type { Answer, Command, CommandServices, Form, Invocation, Surface } from './command.js';
import { CommandCooldown, type CooldownSettings } from './cooldown.js';
import { prefixSpelling, slashSpelling } from './prefix-words.js';

/** One command as a transport hands it over: who, where, what, and how to answer. */
export interface CommandRequest {
  userId: Snowflake;
  surface: Surface;
  form: Form;
  /** The command and its options, or what to answer instead (a usage, an unknown word). */
  invocation: Invocation | { usage: string };
  /**
   * The command the user named, even when the invocation is a usage: what is counted in
   * `presently_bot_commands_total`, and what decides whether it may be answered in a server channel.
   */
  named: string;
  /** The word a prefix message began with, for "DMs only". */
  word?: string;
  answer(answer: Answer): Promise<Delivery>;
}

export interface DispatcherOptions {
  services: CommandServices;
  commands: readonly Command[];
  /** The prefix of `?` commands. */
  prefix: string;
  logger: Logger;
  /** Per-user command budget; absent: none. */
  cooldown?: CooldownSettings;
  metrics?: Metrics;
  /** Whom the instance serves at all (ALLOWED_USER_IDS); absent: everyone. */
  serves?: (userId: Snowflake) => boolean;
}

/**
 * Runs every command, whichever way it came (slash, button, `?` message): the user's budget, the rule that
 * personal answers are never said in a server channel, and an answer when a command fails.
 */
export class CommandDispatcher {
  private readonly cooldown: CommandCooldown;

  constructor(private readonly options: DispatcherOptions) {
    this.cooldown = new CommandCooldown(options.cooldown ?? { burst: 1, perMinute: 0 }, options.services.now);
  }

  /** Resolves once the request is answered (or dropped); never rejects. */
  async run(request: CommandRequest): Promise<void> {
    const { metrics, prefix } = this.options;
    let answered = false;
    const answer = (reply: Answer | string): Promise<Delivery> => {
      answered = true;
      return request.answer(typeof reply === 'string' ? { content: reply } : reply);
    };
    // Everything from here is answered, so everything counts against the user's budget; past it the
    // command is not run and the user is told once to slow down. A `?` message is then ignored, so a
    // spammer cannot make the bot spam a channel; a slash command is answered all the same, to the user
    // alone, as Discord expects every interaction to be.
    const verdict = this.cooldown.take(request.userId);
    if (verdict.kind !== 'run') {
      metrics?.rateLimited('bot_commands');
      if (verdict.kind === 'ignore' && request.form === 'prefix') return;
      const seconds = Math.max(
        1,
        Math.ceil((verdict.kind === 'warn' ? verdict.retryAfterMs : 60_000) / 1000),
      );
      await this.safely(request, () =>
        answer(
          `Slow down, please: that is more commands than I take at once. Try again in ${seconds} s${request.form === 'prefix' ? '; until then I skip your commands without answering' : ''}.`,
        ),
      );
      return;
    }
    metrics?.botCommand(request.named);
    // A user install reaches the bot from anyone on Discord: an instance for some users answers only them.
    if (this.options.serves?.(request.userId) === false) {
      await this.safely(request, () =>
        answer(
          'This Presently instance serves only the users its operator chose, and you are not one of them.',
        ),
      );
      return;
    }
    const { commands } = this.options;
    const named = commands.find((candidate) => candidate.name === request.named);
    if (named?.personal && request.surface === 'guild' && request.form === 'prefix') {
      await this.safely(request, () =>
        answer(
          `\`${prefix}${request.word ?? ''}\` works in DMs only: send it to me in a direct message, or use ${slashSpelling(named.name)} anywhere, which answers you alone.`,
        ),
      );
      return;
    }
    const { invocation } = request;
    if ('usage' in invocation) {
      await this.safely(request, () => answer(invocation.usage));
      return;
    }
    const command = commands.find((candidate) => candidate.name === invocation.name);
    if (command === undefined) {
      await this.safely(request, () =>
        answer(`I don't know that command. ${slashSpelling('help')} lists them.`),
      );
      return;
    }
    const spell =
      request.form === 'slash'
        ? slashSpelling
        : (name: string, options?: Invocation['options']) => prefixSpelling(prefix, name, options);
    try {
      await command.run(
        {
          ...this.options.services,
          userId: request.userId,
          surface: request.surface,
          form: request.form,
          commands: this.options.commands,
          prefix,
          spell,
          answer,
        },
        invocation.options,
      );
    } catch (error) {
      this.options.logger.error(
        { err: error, command: command.name, form: request.form, userId: request.userId },
        'a command failed',
      );
      if (!answered) {
        await this.safely(request, () => answer('Sorry: that failed on my side. Try again in a moment.'));
      }
    }
  }

  /** An answer that cannot be sent is logged where the transport logs it, and goes no further. */
  private async safely(request: CommandRequest, send: () => Promise<Delivery>): Promise<void> {
    try {
      await send();
    } catch (error) {
      this.options.logger.error({ err: error, userId: request.userId }, 'could not answer a command');
    }
  }
}
