import type { UserId } from '../client/types.js';

/** Discord sends a few updates in a row (one per shared server); the card is fetched once for them. */
const CARD_REFRESH_DELAY_MS = 250;

function cardUrl(id: UserId, revision: number): string {
  return `/v1/users/${id}/card.svg${revision > 0 ? `?v=${revision}` : ''}`;
}

/**
 * The status card of the id shown, in its figure, loaded again when the presence changes (a new `?v=`
 * each time, past any cache). A new image is swapped in once it has loaded, so the card never flashes empty.
 */
export class LiveCard {
  private revision = 0;
  private refresh: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly figure: HTMLElement) {}

  /** The card of `id`, as last loaded. */
  show(id: UserId): void {
    this.load(id, this.revision);
  }

  /** `id`'s presence changed: its card is loaded again, once for a burst of changes. */
  changed(id: UserId): void {
    clearTimeout(this.refresh);
    this.refresh = setTimeout(() => this.load(id, ++this.revision), CARD_REFRESH_DELAY_MS);
  }

  private load(id: UserId, revision: number): void {
    const figure = this.figure;
    const next = new Image();
    next.id = 'card';
    next.alt = `Status card of user ${id}`;
    next.addEventListener('load', () => {
      if (figure.dataset.id !== id) return;
      const current = figure.querySelector('#card');
      if (current) current.replaceWith(next);
      else figure.append(next);
    });
    figure.dataset.id = id;
    next.src = cardUrl(id, revision);
  }
}
