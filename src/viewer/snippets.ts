import type { UserId } from '../client/types.js';

/** The snippets under the viewer: filled in for the id shown, and copied with their buttons. */

/** How long a button says "Copied". */
const COPIED_FOR_MS = 2_000;

export function fillSnippets(id: UserId): void {
  const socketOrigin = location.origin.replace(/^http/, 'ws');
  for (const node of document.querySelectorAll<HTMLElement>('[data-fill]')) {
    const fill = node.dataset.fill;
    node.textContent = fill === 'id' ? id : fill === 'socket' ? socketOrigin : location.origin;
  }
  // A link's text is its address.
  for (const link of document.querySelectorAll<HTMLAnchorElement>('a.copy-link')) {
    link.href = link.textContent ?? '';
  }
}

/** The Clipboard API needs a secure context; on plain HTTP the selection is copied the old way. */
async function copyText(source: HTMLElement): Promise<void> {
  const text = source.textContent ?? '';
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const range = document.createRange();
  range.selectNodeContents(source);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
  const copied = document.execCommand('copy');
  selection?.removeAllRanges();
  if (!copied) throw new Error('copy refused');
}

/** Shows each snippet's copy button (hidden without script) and says in `status` what was copied. */
export function setUpCopyButtons(status: HTMLElement): void {
  for (const button of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
    const copy = button.dataset.copy ?? '';
    const source = document.getElementById(copy);
    const title = document.getElementById(`${copy}-title`);
    // A button without its snippet and title stays hidden.
    if (source === null || title === null) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      try {
        await copyText(source);
        button.textContent = 'Copied';
        status.textContent = `Copied: ${title.textContent}`;
      } catch {
        button.textContent = 'Select and copy';
        status.textContent = 'Copying was refused by the browser; select the text to copy it.';
      }
      setTimeout(() => {
        button.textContent = 'Copy';
      }, COPIED_FOR_MS);
    });
  }
}
