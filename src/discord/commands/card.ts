import { ApplicationCommandOptionType } from 'discord-api-types/v10';
import { type Command, text } from './command.js';

/** `card`: the user's card, as a link to put in a README and a preview. */
export const cardCommand: Command = {
  name: 'card',
  description: 'your status card: the link for a README or a site, and a preview',
  options: [
    {
      type: ApplicationCommandOptionType.String,
      name: 'theme',
      description: 'dark (the default) or light',
      choices: [
        { name: 'dark', value: 'dark' },
        { name: 'light', value: 'light' },
      ],
    },
  ],
  personal: false,
  async run({ userId, publicUrl, privacy, answer, form, surface }, options) {
    const theme = text(options, 'theme');
    const query = theme === '' ? '' : `?theme=${theme}`;
    const path = `/v1/users/${userId}/card.svg${query}`;
    // Said only where nobody else reads it: a `?card` in a server channel is public.
    const alone = form === 'slash' || surface !== 'guild';
    const { visibility } = alone ? await privacy.settings(userId) : { visibility: 'public' };
    const hidden =
      visibility === 'private'
        ? '\nYour visibility is private: everyone but you sees the "not monitored" card.'
        : '';
    if (publicUrl === null) {
      return answer(
        `Your card is at \`${path}\` on this instance (it does not say its address: PUBLIC_URL is unset).${hidden}`,
      );
    }
    const svg = `${publicUrl}${path}`;
    return answer({
      content: [
        `Your card: <${svg}>`,
        `In a README: \`![Discord presence](${svg})\``,
        `As a PNG, where SVG is not shown: <${publicUrl}/v1/users/${userId}/card.png${query}>${hidden}`,
      ].join('\n'),
      imageUrl: `${publicUrl}/v1/users/${userId}/card.png${query}`,
    });
  },
};
