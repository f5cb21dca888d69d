import { byId, element } from './dom.js';

/**
 * The demo's "try the bot" (on the page in demo mode only): `/presently …` run as the featured user through
 * the simulated Discord (`POST /demo/bot`), its answers shown as Discord would show them.
 */

/** `POST /demo/bot`'s answer, as the panel reads it. */
interface BotAnswer {
  content: string;
  ephemeral: boolean;
  buttons: { label: string; interaction: string; custom_id: string }[];
  files: { name: string; bytes: number }[];
}

type BotRequest = { command: string } | { interaction: string; button: string };

type Envelope = { success: true; data: BotAnswer } | { success: false; error: { message: string } };

export function startTryBot(): void {
  const panel = document.getElementById('try-bot');
  if (panel === null) return;
  panel.hidden = false;
  const form = byId('bot-form', HTMLFormElement);
  const input = byId('bot-command', HTMLInputElement);
  const out = byId('bot-answer', HTMLElement);

  const show = (answer: BotAnswer): void => {
    const children: Node[] = [element('pre', { class: 'bot-message' }, answer.content || ' ')];
    for (const file of answer.files) {
      children.push(element('p', { class: 'hint' }, `📎 ${file.name} (${file.bytes} bytes)`));
    }
    if (answer.ephemeral) children.push(element('p', { class: 'hint' }, 'Only you can see this.'));
    for (const button of answer.buttons) {
      const press = element('button', { type: 'button', class: 'danger' }, button.label);
      press.addEventListener(
        'click',
        () => void send({ interaction: button.interaction, button: button.custom_id }),
      );
      children.push(press);
    }
    out.replaceChildren(...children);
  };

  const send = async (body: BotRequest): Promise<void> => {
    out.replaceChildren(element('p', {}, 'Presently is thinking…'));
    try {
      const response = await fetch('/demo/bot', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const envelope = (await response.json()) as Envelope;
      if (envelope.success) show(envelope.data);
      else out.replaceChildren(element('p', { class: 'error', role: 'alert' }, envelope.error.message));
    } catch {
      out.replaceChildren(element('p', { class: 'error', role: 'alert' }, 'The service did not answer.'));
    }
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void send({ command: input.value });
  });
}
