import type { GatewayActivity } from 'discord-api-types/v10';
import { describe, expect, it } from 'vitest';
import { type CardContent, cardContent, unmonitoredContent } from '../../src/card/content.js';
import { DEFAULT_AVATAR_COLOURS } from '../../src/card/default-avatar.js';
import { cleanText } from '../../src/card/escape.js';
import type { CardImages } from '../../src/card/images.js';
import { CARD_WIDTH, COMPACT_WIDTH, cardHeight } from '../../src/card/layout.js';
import { type CardOptions, DEFAULT_CARD_OPTIONS } from '../../src/card/options.js';
import { renderCard } from '../../src/card/status-card.js';
import { SOURCE_COLOURS, STATUS_COLOURS, THEMES } from '../../src/card/theme.js';
import type { DiscordStatus } from '../../src/presence/model.js';
import {
  customStatusActivity,
  gameActivity,
  spotifyActivity,
  youtubeMusicActivity,
} from '../../src/simulator/activities.js';
import { solidPng } from '../../src/simulator/png.js';
import {
  byClass,
  CDN,
  fuzzText,
  type ParsedElement,
  parseCard,
  presenceOf,
  random,
  USER_ID,
  visible,
  walk,
} from './support.js';

const NOW = 1_800_000_000_000;
const PNG = `data:image/png;base64,${solidPng(16, [10, 20, 30]).toString('base64')}`;
const NO_IMAGES: CardImages = { avatar: null, emoji: null, art: null, badge: null, decoration: null };
const ALL_IMAGES: CardImages = { avatar: PNG, emoji: PNG, art: PNG, badge: PNG, decoration: PNG };

const options = (overrides: Partial<CardOptions> = {}): CardOptions => ({
  ...DEFAULT_CARD_OPTIONS,
  ...overrides,
});

function render(
  activities: GatewayActivity[] = [],
  more: {
    options?: Partial<CardOptions>;
    images?: CardImages;
    status?: DiscordStatus;
    user?: Record<string, unknown>;
    /** The presence is stale, observed this long before NOW. */
    staleForMs?: number;
  } = {},
): { svg: string; root: ParsedElement; content: CardContent } {
  const cardOptions = options(more.options);
  const presence = presenceOf({
    activities,
    status: more.status ?? 'online',
    user: more.user ?? {},
    ...(more.staleForMs === undefined
      ? {}
      : { freshness: { observed_at: NOW - more.staleForMs, stale: true } }),
  });
  const content = cardContent(presence, cardOptions, CDN);
  const svg = renderCard(content, cardOptions, more.images ?? ALL_IMAGES, NOW);
  return { svg, root: parseCard(svg), content };
}

const song = (start = NOW - 30_000, end = start + 200_000): GatewayActivity =>
  spotifyActivity({
    song: 'Midnight City',
    artists: ['M83'],
    album: "Hurry Up, We're Dreaming",
    imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
    trackId: '1eyzqe2QqGZUmfcPZtrIyt',
    start,
    end,
  });

const game = (name = 'Celeste', start = NOW - 125_000): GatewayActivity =>
  gameActivity({
    name,
    applicationId: '512035578624524288',
    details: 'Chapter 7: The Summit',
    state: '1,204 deaths',
    start,
    largeImage: '512036254624989184',
  });

const textOf = (root: ParsedElement, className: string): string[] =>
  byClass(root, className).map((element) => visible(element.text));

describe('renderCard: XML validity and injection', () => {
  it('stays well-formed, self-contained SVG for hundreds of fuzzed presences', () => {
    const next = random(20261122);
    const statuses: DiscordStatus[] = ['online', 'idle', 'dnd', 'offline'];
    for (let i = 0; i < 400; i++) {
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
      const maybe = (text: string): string | null => (next() < 0.2 ? null : text);
      const activities: GatewayActivity[] = [];
      if (next() < 0.7) {
        activities.push(
          customStatusActivity({
            text: fuzzText(next),
            ...(next() < 0.5
              ? {
                  emoji:
                    next() < 0.5
                      ? { name: fuzzText(next, 2) }
                      : { name: fuzzText(next, 2), id: '887330474925178910' },
                }
              : {}),
          }),
        );
      }
      const kind = next();
      if (kind < 0.3) {
        const start = NOW - Math.floor(next() * 600_000);
        activities.push(
          spotifyActivity({
            song: fuzzText(next),
            artists: [fuzzText(next), fuzzText(next)],
            album: fuzzText(next),
            imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
            trackId: '1eyzqe2QqGZUmfcPZtrIyt',
            start,
            end: start + Math.floor(next() * 8_000_000),
          }),
        );
      } else if (kind < 0.45) {
        activities.push(
          youtubeMusicActivity({
            title: fuzzText(next),
            artist: fuzzText(next),
            album: fuzzText(next),
            videoId: 'MV_3Dpw-BRY',
            imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
            paused: next() < 0.3,
            start: NOW - 10_000,
            end: NOW + 100_000,
          }),
        );
      } else if (kind < 0.8) {
        activities.push(
          gameActivity({
            name: fuzzText(next),
            applicationId: '512035578624524288',
            details: fuzzText(next),
            state: fuzzText(next),
            start: NOW - Math.floor(next() * 20_000_000),
            largeImage: next() < 0.5 ? 'mp:external/abc/https/example.com/x.png' : '512036254624989184',
          }),
        );
      }
      const cardOptions = options({
        theme: pick(['dark', 'light'] as const),
        background: pick([null, '#123456', '#ffffff80']),
        borderRadius: pick([0, 4.5, 12, 40]),
        hideStatus: next() < 0.2,
        hideTimestamp: next() < 0.2,
        hideActivity: next() < 0.2,
        hideMusic: next() < 0.2,
        idleMessage: fuzzText(next),
        animated: next() < 0.7,
      });
      const presence = presenceOf({
        status: pick(statuses),
        activities,
        user: {
          username: fuzzText(next, 4),
          global_name: maybe(fuzzText(next)),
          avatar: next() < 0.5 ? 'a_5b8e0c1d2f3a4b5c6d7e8f9a0b1c2d3e' : null,
        },
      });
      const content = cardContent(presence, cardOptions, CDN);
      const images = next() < 0.5 ? ALL_IMAGES : NO_IMAGES;
      const svg = renderCard(content, cardOptions, images, NOW);
      let root: ParsedElement;
      try {
        root = parseCard(svg);
      } catch (error) {
        throw new Error(`fuzz case ${i} failed: ${(error as Error).message}\n${svg}`);
      }
      // What is shown of the name is the start of the name, cleaned: escaping lost or added nothing.
      const shown = visible(byClass(root, 'name')[0]?.text ?? '').replace(/…$/, '');
      expect(cleanText(content.displayName).startsWith(shown)).toBe(true);
      expect(root.attributes.width).toBe(String(CARD_WIDTH));
    }
  });

  it('shows markup in names and statuses as text, never as elements', () => {
    const evil = '<script>alert("x")</script><image href="https://evil.example/x.png"/>&amp;\'';
    const { svg, root } = render([customStatusActivity({ text: evil }), game(evil)], {
      user: { global_name: evil, username: '"><svg onload=alert(1)>' },
    });
    expect(svg).not.toContain('<script');
    expect(svg).not.toContain('evil.example/x.png"/>');
    expect([...walk(root)].filter((element) => element.tag === 'script')).toHaveLength(0);
    expect(textOf(root, 'cs')[0]).toMatch(/^<script>alert\("x"\)<\/script>/);
    expect(textOf(root, 'title')[0]).toMatch(/^<script>/);
  });

  it('inlines only base64 raster data: URIs, whatever the image source hands it', () => {
    for (const uri of [
      'https://evil.example/x.png',
      'data:image/svg+xml;base64,PHN2Zy8+',
      'data:image/png;base64,AAAA" onload="alert(1)',
      'data:text/html,<script>',
    ]) {
      const { root } = render([song()], {
        images: { avatar: uri, emoji: uri, art: uri, badge: uri, decoration: uri },
      });
      expect([...walk(root)].filter((e) => e.tag === 'image')).toHaveLength(0);
    }
  });

  it('drops characters XML cannot carry and bidi overrides from user text', () => {
    const { svg, root } = render([], {
      user: { global_name: 'a\u0000b\u0008c\uFFFEd\uD800e\u202Ef\u2066g\nh' },
    });
    expect(visible(byClass(root, 'name')[0]?.text ?? '')).toBe('abcdef' + 'g h');
    expect(svg).not.toContain('\u202E');
  });

  it('wraps user text in first-strong isolates, so right-to-left names read right to left', () => {
    const { svg, root } = render([customStatusActivity({ text: 'مرحبا بالعالم' })], {
      user: { global_name: 'שלום עולם', username: 'עברית' },
    });
    expect(svg).toContain('\u2068שלום עולם\u2069');
    expect(svg).toContain('\u2068مرحبا بالعالم\u2069');
    // Our "@" stays outside the handle's isolate, on the left.
    expect(svg).toContain('@\u2068עברית\u2069');
    expect(textOf(root, 'name')).toEqual(['שלום עולם']);
  });

  it('keeps emoji whole, including sequences and flags', () => {
    const family = '👩‍👩‍👧‍👦';
    const { root } = render([customStatusActivity({ text: `${family}🇫🇷👍🏽`, emoji: { name: '🎧' } })]);
    expect(textOf(root, 'cs')).toEqual([`🎧 ${family}🇫🇷👍🏽`]);
  });

  it('cuts long names and titles with an ellipsis', () => {
    const long = 'A display name far too long for any card to show in full, really';
    const { root } = render([song(NOW - 1000, NOW + 100_000)], { user: { global_name: long } });
    const name = textOf(root, 'name')[0] ?? '';
    expect(name.endsWith('…')).toBe(true);
    expect(long.startsWith(name.slice(0, -1))).toBe(true);
    expect(name.length).toBeLessThan(long.length);
  });
});

describe('renderCard: layout and content', () => {
  it('draws the avatar inline, ringed in the status colour', () => {
    for (const status of ['online', 'idle', 'dnd', 'offline'] as const) {
      const { root } = render([], { status });
      const ring = [...walk(root)].find((e) => e.tag === 'circle' && e.attributes.fill === 'none');
      expect(ring?.attributes.stroke).toBe(STATUS_COLOURS[status]);
      const avatar = [...walk(root)].find((e) => e.tag === 'image');
      expect(avatar?.attributes['clip-path']).toBe('url(#avatar-clip)');
    }
  });

  it("draws Discord's default avatar colour when no avatar image could be had", () => {
    const { root, content } = render([], { images: NO_IMAGES });
    const expected = DEFAULT_AVATAR_COLOURS[content.defaultAvatar];
    expect([...walk(root)].some((e) => e.tag === 'circle' && e.attributes.fill === expected)).toBe(true);
    expect([...walk(root)].filter((e) => e.tag === 'image')).toHaveLength(0);
    expect(textOf(root, 'initial')).toEqual(['N']);
  });

  it('shows the display name, the status and the @handle', () => {
    const { root } = render([], { status: 'dnd' });
    expect(textOf(root, 'name')).toEqual(['Nova']);
    expect(textOf(root, 'sub')).toEqual(['Do Not Disturb · @nova']);
  });

  it('falls back to the username when there is no display name', () => {
    const { root } = render([], { user: { global_name: null } });
    expect(textOf(root, 'name')).toEqual(['nova']);
  });

  it('shows the custom status with a unicode emoji as text, a custom emoji as an inline image', () => {
    const unicode = render([customStatusActivity({ text: 'on repeat', emoji: { name: '🎧' } })]).root;
    expect(textOf(unicode, 'cs')).toEqual(['🎧 on repeat']);
    const custom = render([
      customStatusActivity({ text: 'reading', emoji: { name: 'blob', id: '887330474925178910' } }),
    ]).root;
    expect(textOf(custom, 'cs')).toEqual(['reading']);
    expect([...walk(custom)].filter((e) => e.tag === 'image')).toHaveLength(2);
  });

  it('hideStatus leaves the custom status out', () => {
    const { root } = render([customStatusActivity({ text: 'secret' })], { options: { hideStatus: true } });
    expect(byClass(root, 'cs')).toHaveLength(0);
    expect(JSON.stringify(root)).not.toContain('secret');
  });

  it('shows music: cover art, song, artist, times and a progress bar that fills over what is left', () => {
    const { root, svg } = render([song(NOW - 30_000, NOW + 170_000)]);
    expect(textOf(root, 'label')).toEqual(['LISTENING ON SPOTIFY']);
    expect(textOf(root, 'title')).toEqual(['Midnight City']);
    expect(textOf(root, 'faint')).toEqual(['by M83']);
    const bars = [...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '4');
    expect(bars).toHaveLength(2);
    const [track, fill] = bars as [ParsedElement, ParsedElement];
    expect(fill.attributes.fill).toBe(SOURCE_COLOURS.spotify);
    const full = Number(track.attributes.width);
    expect(Number(fill.attributes.width)).toBeCloseTo(full * 0.15, 1);
    const animate = fill.children.find((e) => e.tag === 'animate');
    expect(animate?.attributes).toMatchObject({
      attributeName: 'width',
      to: track.attributes.width,
      dur: '170s',
    });
    expect(svg).toContain('>3:20</text>');
    // The elapsed time runs: strips of digits, started 30 s in the past.
    expect(svg).toContain('begin="-30s"');
    expect(byClass(root, 'eq')).toHaveLength(1);
  });

  it('joins several Spotify artists with commas', () => {
    const activity = spotifyActivity({
      song: 's',
      artists: ['A', 'B', 'C'],
      album: 'x',
      imageId: 'ab67616d0000b273fff2cb485c36a6d8f639bdba',
      trackId: '1eyzqe2QqGZUmfcPZtrIyt',
      start: NOW,
      end: NOW + 1000,
    });
    expect(textOf(render([activity]).root, 'faint')).toEqual(['by A, B, C']);
  });

  it('draws a finished track full and still', () => {
    const { root, svg } = render([song(NOW - 300_000, NOW - 100_000)]);
    const fill = [...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '4')[1];
    expect(fill?.attributes.width).toBe(
      [...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '4')[0]?.attributes.width,
    );
    expect(svg).not.toContain('<animate');
    expect(svg).toContain('>3:20</text>');
    // The equalizer rests once the song is over.
    expect(byClass(root, 'eq')).toHaveLength(0);
    expect(byClass(root, 'bars')).toHaveLength(1);
  });

  it('music without an end time: no bar, the album instead', () => {
    const { root } = render([
      youtubeMusicActivity({
        title: 'Nightcall',
        artist: 'Kavinsky',
        album: 'OutRun',
        videoId: 'MV_3Dpw-BRY',
        imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
        start: NOW - 10_000,
      }),
    ]);
    expect(textOf(root, 'label')).toEqual(['LISTENING ON YOUTUBE MUSIC']);
    expect(textOf(root, 'faint')).toEqual(['by Kavinsky', 'on OutRun']);
    expect([...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '4')).toHaveLength(0);
    expect(byClass(root, 'eq')).toHaveLength(1);
  });

  it('YouTube Music paused (no timestamps, no album): the equalizer rests', () => {
    const { root } = render([
      youtubeMusicActivity({
        title: 'Nightcall',
        artist: 'Kavinsky',
        album: 'OutRun',
        videoId: 'MV_3Dpw-BRY',
        imageUrl: 'https://i.ytimg.com/vi/MV_3Dpw-BRY/hqdefault.jpg',
        paused: true,
      }),
    ]);
    expect(textOf(root, 'title')).toEqual(['Nightcall']);
    expect(textOf(root, 'faint')).toEqual(['by Kavinsky']);
    expect(byClass(root, 'eq')).toHaveLength(0);
    expect(byClass(root, 'bars')).toHaveLength(1);
  });

  it('hideTimestamp keeps the bar and drops the times', () => {
    const { root } = render([song()], { options: { hideTimestamp: true } });
    expect(byClass(root, 'time')).toHaveLength(0);
    expect([...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '4')).toHaveLength(2);
  });

  it('shows the main activity with its elapsed time when no music plays', () => {
    const { root, svg } = render([customStatusActivity({ text: 'hi' }), game()]);
    expect(textOf(root, 'label')).toEqual(['PLAYING']);
    expect(textOf(root, 'title')).toEqual(['Celeste']);
    expect(textOf(root, 'line')).toEqual(['Chapter 7: The Summit']);
    expect(textOf(root, 'faint')).toEqual(['1,204 deaths']);
    // The clock's strips open on 2:05, the time elapsed, and run from there.
    const clock = byClass(root, 'clock')[0] as ParsedElement;
    const firsts = [...walk(clock)]
      .filter((e) => e.tag === 'g' && e.children.some((c) => c.tag === 'animateTransform'))
      .map((g) => g.children.find((c) => c.tag === 'text')?.text);
    expect(firsts).toEqual(['2', '0', '5']);
    expect(svg).toContain('begin="-5s"');
    expect(byClass(root, 'clock')).toHaveLength(1);
  });

  it('music wins over an activity; hideMusic shows the activity; hiding both shows the idle message', () => {
    expect(textOf(render([game(), song()]).root, 'title')).toEqual(['Midnight City']);
    expect(textOf(render([game(), song()], { options: { hideMusic: true } }).root, 'title')).toEqual([
      'Celeste',
    ]);
    const idle = render([game(), song()], {
      options: { hideMusic: true, hideActivity: true, idleMessage: 'Touching grass' },
    }).root;
    expect(textOf(idle, 'idle')).toEqual(['Touching grass']);
  });

  it('shows the idle message when nothing is going on, and the card is shorter', () => {
    const { root, content } = render([]);
    expect(textOf(root, 'idle')).toEqual(['Not doing anything right now']);
    expect(Number(root.attributes.height)).toBe(cardHeight(content, options()));
    expect(cardHeight(content, options())).toBeLessThan(cardHeight(render([game()]).content, options()));
  });

  it('draws placeholders for missing cover art and activity images', () => {
    const music = render([song()], { images: NO_IMAGES }).root;
    expect([...walk(music)].some((e) => e.tag === 'path' && e.attributes.fill === '#fff')).toBe(true);
    const activity = render([game()], { images: NO_IMAGES }).root;
    expect(textOf(activity, 'initial')).toEqual(['N', 'C']);
  });

  it('animated=false: no SMIL, no CSS animation, and the same content', () => {
    const { svg, root } = render([song(), customStatusActivity({ text: 'x' })], {
      options: { animated: false },
    });
    expect(svg).not.toMatch(/<animate|@keyframes|animation:/);
    expect(textOf(root, 'title')).toEqual(['Midnight City']);
    expect(textOf(root, 'time')).toEqual(['0:30', '3:20']);
  });

  it('themes, background, border radius', () => {
    const light = render([], { options: { theme: 'light' } }).svg;
    expect(light).toContain(`fill="${THEMES.light.background}"`);
    expect(light).toContain(`fill:${THEMES.light.text}`);
    const custom = render([], { options: { background: '#11223380', borderRadius: 0 } }).root;
    const card = byClass(custom, 'card')[0];
    expect(card?.attributes).toMatchObject({ fill: '#112233', 'fill-opacity': '0.502', rx: '0' });
  });

  it('a card for a user who is not monitored says so', () => {
    const content = unmonitoredContent(USER_ID, CDN);
    const svg = renderCard(content, options(), NO_IMAGES, NOW);
    const root = parseCard(svg);
    expect(textOf(root, 'name')).toEqual(['Not monitored']);
    expect(textOf(root, 'sub')).toEqual([`ID ${USER_ID}`]);
    expect(textOf(root, 'idle')[0]).toContain('shares no server');
  });

  it('has a title for screen readers', () => {
    const { root } = render([song(), customStatusActivity({ text: 'on repeat' })]);
    const title = [...walk(root)].find((e) => e.tag === 'title');
    expect(visible(title?.text ?? '')).toBe(
      'Nova (@nova): Online · on repeat · listening to Midnight City by M83 on Spotify',
    );
  });

  it('renders the same bytes for the same input and time', () => {
    expect(render([song(), game()]).svg).toBe(render([song(), game()]).svg);
  });

  it('never claims a status while the presence is stale: muted, unknown since when it was observed', () => {
    const { root } = render([song(NOW - 30_000, NOW + 170_000), game()], {
      status: 'online',
      staleForMs: 7 * 60_000,
      options: { maxActivities: 2 },
    });
    expect(textOf(root, 'sub')).toEqual(['Status unknown since 7 min ago · @nova']);
    expect(byClass(root, 'st')).toHaveLength(0);
    const greys = [...walk(root)].filter(
      (e) =>
        e.tag === 'circle' &&
        (e.attributes.fill === STATUS_COLOURS.offline || e.attributes.stroke === STATUS_COLOURS.offline),
    );
    expect(greys).toHaveLength(2);
    expect(JSON.stringify(root)).not.toContain(STATUS_COLOURS.online);
    // What was last known still shows, said to be so, and the equalizer rests.
    expect(textOf(root, 'label')).toEqual(['LAST HEARD ON SPOTIFY', 'LAST SEEN PLAYING']);
    expect(byClass(root, 'eq')).toHaveLength(0);
    const title = [...walk(root)].find((e) => e.tag === 'title');
    expect(visible(title?.text ?? '')).toMatch(/^Nova \(@nova\): Status unknown since 7 min ago · /);
    expect(visible(title?.text ?? '')).not.toContain('Online');
  });

  it('a presence that is not stale shows its status, whenever it was observed', () => {
    const { root } = render([], { status: 'idle' });
    expect(textOf(root, 'sub')).toEqual(['Idle · @nova']);
  });
});

describe('renderCard: profile extras and the options that shape the card', () => {
  const TAGGED = {
    primary_guild: {
      identity_guild_id: '1100000000000000001',
      identity_enabled: true,
      tag: 'PRES',
      badge: '7c4e2a9d1b3f5e6a8c0d2f4b6a8e0c1d',
    },
  };
  const DECORATED = {
    avatar_decoration_data: { asset: 'a_6e1f0c2d3b4a59687f8e9d0c1b2a3f4e', sku_id: '1', expires_at: null },
  };
  const imagesNamed = (root: ParsedElement) => [...walk(root)].filter((e) => e.tag === 'image');
  const tagOf = (root: ParsedElement) => byClass(root, 'server-tag')[0];

  it('draws the server tag after the name: its badge and text on a pill, the name cut to leave it room', () => {
    const { root, content } = render([], { user: TAGGED });
    expect(content.tag).toEqual({
      text: 'PRES',
      badgeUrl: `${CDN}/guild-tag-badges/1100000000000000001/7c4e2a9d1b3f5e6a8c0d2f4b6a8e0c1d.png?size=32`,
    });
    const tag = tagOf(root) as ParsedElement;
    expect(textOf(tag, 'tag')).toEqual(['PRES']);
    const pill = tag.children.find((e) => e.tag === 'rect') as ParsedElement;
    expect(pill.attributes.fill).toBe(THEMES.dark.tag);
    expect(tag.children.filter((e) => e.tag === 'image')).toHaveLength(1);
    // After the name, and inside the card whatever the name's length.
    const long = render([], { user: { ...TAGGED, global_name: 'W'.repeat(60) } }).root;
    const longPill = (tagOf(long) as ParsedElement).children.find((e) => e.tag === 'rect') as ParsedElement;
    expect(Number(longPill.attributes.x) + Number(longPill.attributes.width)).toBeLessThanOrEqual(
      CARD_WIDTH - 20,
    );
    expect(textOf(long, 'name')[0]?.endsWith('…')).toBe(true);
    expect(Number(pill.attributes.x)).toBeGreaterThan(122);
  });

  it('hideTag leaves the tag out; clanBackgroundColor colours the pill; a disabled tag is not shown', () => {
    expect(tagOf(render([], { user: TAGGED, options: { hideTag: true } }).root)).toBeUndefined();
    const coloured = tagOf(render([], { user: TAGGED, options: { tagBackground: '#112233' } }).root);
    expect(coloured?.children.find((e) => e.tag === 'rect')?.attributes.fill).toBe('#112233');
    const disabled = { primary_guild: { ...TAGGED.primary_guild, identity_enabled: false } };
    expect(tagOf(render([], { user: disabled }).root)).toBeUndefined();
    // Discord sends `identity_enabled: null` for tags that are shown.
    const unknown = { primary_guild: { ...TAGGED.primary_guild, identity_enabled: null } };
    expect(tagOf(render([], { user: unknown }).root)).toBeDefined();
  });

  it('draws the avatar decoration over the avatar, 1.2 times its size and centred on it; hideDecoration leaves it out', () => {
    const { root, content } = render([], { user: DECORATED });
    expect(content.decorationUrl).toBe(
      `${CDN}/avatar-decoration-presets/a_6e1f0c2d3b4a59687f8e9d0c1b2a3f4e.png?size=256&passthrough=false`,
    );
    const decoration = imagesNamed(root).find((e) => e.attributes.width === '96');
    expect(decoration?.attributes).toMatchObject({ x: '12', y: '12', height: '96' });
    expect(content.decorationUrl).not.toBeNull();
    const hidden = render([], { user: DECORATED, options: { hideDecoration: true } });
    expect(hidden.content.decorationUrl).toBeNull();
    expect(imagesNamed(hidden.root).find((e) => e.attributes.width === '96')).toBeUndefined();
  });

  it('hideProfile: the panel alone, at the top of a shorter card', () => {
    const full = render([game()]);
    const { root, content } = render([game()], { options: { hideProfile: true } });
    expect(byClass(root, 'name')).toHaveLength(0);
    expect(textOf(root, 'title')).toEqual(['Celeste']);
    expect(Number(root.attributes.height)).toBe(cardHeight(content, options({ hideProfile: true })));
    expect(Number(root.attributes.height)).toBe(Number(full.root.attributes.height) - 120 + 12);
  });

  it('hideActivity=whenNotUsed (hideIdle): no panel when nothing plays, the panel when something does', () => {
    const idle = render([], { options: { hideIdle: true } });
    expect(byClass(idle.root, 'idle')).toHaveLength(0);
    expect(Number(idle.root.attributes.height)).toBe(120);
    expect(textOf(render([game()], { options: { hideIdle: true } }).root, 'title')).toEqual(['Celeste']);
    // With the profile hidden too, the idle message is all there is to show.
    expect(textOf(render([], { options: { hideIdle: true, hideProfile: true } }).root, 'idle')).toHaveLength(
      1,
    );
  });

  it('maxActivities stacks the music and the activities in panels of their own, each with its image', () => {
    const hades = gameActivity({
      name: 'Hades',
      applicationId: '463097721130188830',
      largeImage: '463097721130188831',
      start: NOW - 1_000,
    });
    const watching = {
      ...gameActivity({ name: 'Twitch', applicationId: '802958789555421244', start: NOW - 5_000 }),
      type: 3,
    } as GatewayActivity;
    const activities = [watching, song(), game(), hades];
    const one = render(activities);
    expect(textOf(one.root, 'title')).toEqual(['Midnight City']);
    const three = render(activities, {
      options: { maxActivities: 3 },
      images: { ...ALL_IMAGES, more: [PNG, null] },
    });
    // The music, then the games in Discord's order, then (past the limit) the show.
    expect(textOf(three.root, 'title')).toEqual(['Midnight City', 'Celeste', 'Hades']);
    expect(textOf(three.root, 'label')).toEqual(['LISTENING ON SPOTIFY', 'PLAYING', 'PLAYING']);
    expect(Number(three.root.attributes.height)).toBe(Number(one.root.attributes.height) + 2 * 108);
    // Celeste's image, Hades's placeholder; every id in the card is its own.
    const ids = [...walk(three.root)].map((e) => e.attributes.id).filter((id) => id !== undefined);
    expect(new Set(ids).size).toBe(ids.length);
    const arts = [...walk(three.root)].filter((e) => e.tag === 'image' && e.attributes.width === '72');
    expect(arts).toHaveLength(2);
    // Without music the activities fill the panels, as many as there are.
    expect(textOf(render([game(), hades], { options: { maxActivities: 4 } }).root, 'title')).toEqual([
      'Celeste',
      'Hades',
    ]);
  });

  it('ignoreAppId passes over the activities of those applications', () => {
    const other = gameActivity({ name: 'Hades', applicationId: '463097721130188830', start: NOW - 1_000 });
    const { root } = render([game(), other], { options: { ignoreAppIds: ['512035578624524288'] } });
    expect(textOf(root, 'title')).toEqual(['Hades']);
    const none = render([game()], { options: { ignoreAppIds: ['512035578624524288'] } }).root;
    expect(textOf(none, 'idle')).toEqual(['Not doing anything right now']);
  });
});

describe('renderCard: the compact layout', () => {
  const compact = (activities: GatewayActivity[], more: Parameters<typeof render>[1] = {}) =>
    render(activities, { ...more, options: { layout: 'compact', ...more.options } });

  it('is one row: 400 × 80, the avatar, the name and what the user is doing', () => {
    const { root } = compact([customStatusActivity({ text: 'on repeat' }), game()]);
    expect([root.attributes.width, root.attributes.height]).toEqual([String(COMPACT_WIDTH), '80']);
    expect(textOf(root, 'cname')).toEqual(['Nova']);
    expect(textOf(root, 'cline')).toEqual(['Playing Celeste']);
    expect([...walk(root)].filter((e) => e.tag === 'image' && e.attributes.width === '48')).toHaveLength(1);
  });

  it('shows the music with a bar that opens where the track is and fills over what is left', () => {
    const { root } = compact([song(NOW - 50_000, NOW + 150_000)]);
    expect(textOf(root, 'cline')).toEqual(['Spotify: Midnight City · M83']);
    const bars = [...walk(root)].filter((e) => e.tag === 'rect' && e.attributes.height === '3');
    const [track, fill] = bars as [ParsedElement, ParsedElement];
    expect(Number(fill.attributes.width)).toBeCloseTo(Number(track.attributes.width) / 4, 1);
    expect(fill.children.find((e) => e.tag === 'animate')?.attributes).toMatchObject({ dur: '150s' });
  });

  it('rings the avatar grey while the presence is stale', () => {
    const { root } = compact([], { status: 'dnd', staleForMs: 60_000 });
    const ring = [...walk(root)].find((e) => e.tag === 'circle' && e.attributes.fill === 'none');
    expect(ring?.attributes.stroke).toBe(STATUS_COLOURS.offline);
  });

  it('falls back to the custom status, then the idle message; long lines end in an ellipsis', () => {
    expect(textOf(compact([customStatusActivity({ text: 'heads down' })]).root, 'cline')).toEqual([
      'heads down',
    ]);
    expect(textOf(compact([]).root, 'cline')).toEqual(['Not doing anything right now']);
    const long = compact([gameActivity({ name: 'W'.repeat(80), applicationId: '512035578624524288' })]).root;
    expect(textOf(long, 'cline')[0]?.endsWith('…')).toBe(true);
  });
});
