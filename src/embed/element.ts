import type { Presence } from '../client/types.js';
import { checkedUserId } from '../client/user-id.js';
import { baseOf, DEFAULT_BASE } from './base-url.js';
import { everySecond, hasClocks, updateClocks } from './clock.js';
import { h } from './dom.js';
import { feedOf, type Reading } from './feed.js';
import { displayName } from './format.js';
import {
  DEFAULT_LAYOUT,
  DEFAULT_THEME,
  ELEMENT_ATTRIBUTES,
  type EmbedOptions,
  fieldsOf,
  layoutOf,
  themeOf,
} from './options.js';
import { messageSection, presenceSections, type Section } from './render.js';
import { adoptStyles } from './styles.js';

/** Fired on the element each time it shows a presence (`detail`: the presence) or stops showing one (`null`). */
const CHANGE_EVENT = 'presencechange';

/** The user and instance the attributes name, or why they name none. */
type Source = { id: string; base: string } | { problem: string };

/** What each section last showed: a section whose signature is unchanged is left in place. */
const signatures = new WeakMap<Element, string>();

/**
 * Puts `sections` in `container` in order, leaving in place (so unannounced) those unchanged, and
 * replacing or adding only the others.
 */
function patch(container: HTMLElement, sections: readonly Section[]): void {
  const byKey = new Map<string, Element>();
  for (const child of container.children) byKey.set((child as HTMLElement).dataset.key ?? '', child);
  const wanted = sections.map(({ key, signature, node }) => {
    const current = byKey.get(key);
    if (current && signatures.get(current) === signature) return current;
    node.dataset.key = key;
    signatures.set(node, signature);
    return node;
  });
  for (const child of [...container.children]) if (!wanted.includes(child)) child.remove();
  wanted.forEach((node, index) => {
    const at = container.children[index] ?? null;
    if (at !== node) container.insertBefore(node, at);
  });
}

/**
 * `<presently-presence user="…">`: a Discord presence, live. Its markup is in a shadow root styled by
 * its own sheet; it reads through the page's feed of its instance (feed.ts), which every element of that
 * instance shares.
 */
export class PresentlyPresence extends HTMLElement {
  static readonly observedAttributes = ELEMENT_ATTRIBUTES;
  private readonly card: HTMLDivElement;
  private watching: string | null = null;
  private unwatch: (() => void) | null = null;
  private reading: Reading | null = null;
  private stopTicking: (() => void) | null = null;
  private shown: Presence | null = null;

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    adoptStyles(root);
    // The whole card is the changing part: sections are replaced only when what they say changed.
    this.card = h('div', { class: 'card', role: 'group', 'aria-live': 'polite' });
    root.append(this.card);
  }

  connectedCallback(): void {
    this.update();
  }

  disconnectedCallback(): void {
    this.unwatch?.();
    this.unwatch = null;
    this.watching = null;
    this.reading = null;
    this.stopTicking?.();
    this.stopTicking = null;
  }

  attributeChangedCallback(): void {
    if (this.isConnected) this.update();
  }

  private source(): Source {
    const user = (this.getAttribute('user') ?? '').trim();
    if (user === '') return { problem: 'Set the user attribute to a Discord user id.' };
    const given = this.getAttribute('base');
    const base = given === null || given.trim() === '' ? DEFAULT_BASE : baseOf(given.trim());
    if (base === null) return { problem: `base “${given}” is not a web address.` };
    try {
      return { id: checkedUserId(user), base };
    } catch {
      return { problem: `“${user.slice(0, 40)}” is not a Discord user id.` };
    }
  }

  private options(): EmbedOptions {
    return {
      theme: themeOf(this.getAttribute('theme')) ?? DEFAULT_THEME,
      layout: layoutOf(this.getAttribute('layout')) ?? DEFAULT_LAYOUT,
      fields: fieldsOf(this.getAttribute('fields')).fields,
    };
  }

  /** Follows the user and instance the attributes name now, then draws. */
  private update(): void {
    const source = this.source();
    const key = 'id' in source ? `${source.base} ${source.id}` : null;
    if (key !== this.watching) {
      this.unwatch?.();
      this.unwatch = null;
      this.reading = null;
      this.watching = key;
      if ('id' in source) {
        this.unwatch = feedOf(source.base).watch(source.id, (reading) => {
          this.reading = reading;
          this.render(source);
        });
      }
    }
    this.render(source);
  }

  private render(source: Source): void {
    const options = this.options();
    const card = this.card;
    card.dataset.theme = options.theme;
    card.dataset.layout = options.layout;
    const reading = this.reading;
    const presence = reading?.kind === 'presence' ? reading.presence : null;
    let sections: Section[];
    if ('problem' in source) sections = [messageSection(source.problem)];
    else if (presence) sections = presenceSections(presence, options, source.base);
    else if (reading?.kind === 'missing') {
      sections = [
        messageSection(
          `No presence to show for ${source.id}: this Presently instance does not monitor them, or they keep it private.`,
        ),
      ];
    } else if (reading?.kind === 'unreachable') {
      sections = [messageSection(`Presently at ${source.base} cannot be reached; trying again.`)];
    } else sections = [messageSection('Loading presence…')];
    card.setAttribute(
      'aria-label',
      presence ? `${displayName(presence.discord_user)} on Discord` : 'Discord presence',
    );
    card.setAttribute('aria-busy', String(!('problem' in source) && reading === null));
    patch(card, sections);
    updateClocks(card, Date.now());
    if (hasClocks(card)) this.stopTicking ??= everySecond(() => updateClocks(card, Date.now()));
    else {
      this.stopTicking?.();
      this.stopTicking = null;
    }
    if (presence !== this.shown) {
      this.shown = presence;
      this.dispatchEvent(new CustomEvent(CHANGE_EVENT, { detail: presence }));
    }
  }
}
