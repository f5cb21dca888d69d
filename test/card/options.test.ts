import { describe, expect, it } from 'vitest';
import {
  CARD_QUERY_OPTIONS,
  type CardOptions,
  DEFAULT_CARD_OPTIONS,
  MAX_ACTIVITIES,
  MAX_BORDER_RADIUS,
  MAX_IDLE_MESSAGE_LENGTH,
  MAX_IGNORED_APPS,
  parseCardOptions,
} from '../../src/card/options.js';

/** The options of a query that must parse without a problem. */
function parsed(query: Record<string, unknown>): CardOptions {
  const { options, problems } = parseCardOptions(query);
  expect(problems).toEqual([]);
  return options;
}

describe('parseCardOptions', () => {
  it('defaults', () => {
    expect(parseCardOptions({})).toEqual({ options: DEFAULT_CARD_OPTIONS, problems: [] });
    expect(parseCardOptions(undefined)).toEqual({ options: DEFAULT_CARD_OPTIONS, problems: [] });
  });

  it('ignores parameters it does not know (cache busters)', () => {
    expect(parsed({ v: '2', t: 'x' })).toEqual(DEFAULT_CARD_OPTIONS);
  });

  it('theme', () => {
    expect(parsed({ theme: 'light' }).theme).toBe('light');
    expect(parsed({ theme: 'DARK' }).theme).toBe('dark');
  });

  it('bg in every hex spelling, and picks the theme that reads on it when none is given', () => {
    expect(parsed({ bg: 'fff' })).toMatchObject({ background: '#ffffff', theme: 'light' });
    expect(parsed({ bg: '#0D1117' })).toMatchObject({ background: '#0d1117', theme: 'dark' });
    expect(parsed({ bg: '0d111780' }).background).toBe('#0d111780');
    expect(parsed({ bg: 'f008' }).background).toBe('#ff000088');
    expect(parsed({ bg: 'ffffff', theme: 'dark' }).theme).toBe('dark');
  });

  it('borderRadius as a number of px', () => {
    expect(parsed({ borderRadius: '0' }).borderRadius).toBe(0);
    expect(parsed({ borderRadius: '10px' }).borderRadius).toBe(10);
    expect(parsed({ borderRadius: '4.5' }).borderRadius).toBe(4.5);
    expect(parsed({ borderRadius: String(MAX_BORDER_RADIUS) }).borderRadius).toBe(MAX_BORDER_RADIUS);
  });

  it('booleans: true/false, 1/0, yes/no, on/off in any case, and a bare flag means true', () => {
    const flags = [
      'hideProfile',
      'hideStatus',
      'hideTimestamp',
      'hideActivity',
      'hideMusic',
      'hideTag',
      'hideDecoration',
    ] as const;
    for (const name of flags) {
      for (const value of ['true', 'TRUE', '1', 'yes', 'on', ''])
        expect(parsed({ [name]: value })[name]).toBe(true);
      for (const value of ['false', 'False', '0', 'no', 'off'])
        expect(parsed({ [name]: value })[name]).toBe(false);
    }
    expect(parsed({ animated: 'false' }).animated).toBe(false);
  });

  it('idleMessage as given', () => {
    expect(parsed({ idleMessage: 'Touching grass 🌱' }).idleMessage).toBe('Touching grass 🌱');
    expect(parsed({ idleMessage: '🌱'.repeat(MAX_IDLE_MESSAGE_LENGTH) }).idleMessage).toHaveLength(
      2 * MAX_IDLE_MESSAGE_LENGTH,
    );
  });

  describe("lanyard-profile-readme's names", () => {
    it('hideSpotify hides the music, as hideMusic does', () => {
      expect(parsed({ hideSpotify: 'true' }).hideMusic).toBe(true);
      expect(parsed({ hideSpotify: 'false' }).hideMusic).toBe(false);
    });

    it('hideActivity=whenNotUsed leaves the idle panel out, and hides no activity', () => {
      expect(parsed({ hideActivity: 'whenNotUsed' })).toMatchObject({ hideIdle: true, hideActivity: false });
      expect(parsed({ hideActivity: 'true' })).toMatchObject({ hideIdle: false, hideActivity: true });
    });

    it('ignoreAppId: application ids, comma-separated, spaces allowed', () => {
      expect(parsed({ ignoreAppId: '512035578624524288, 463097721130188830' }).ignoreAppIds).toEqual([
        '512035578624524288',
        '463097721130188830',
      ]);
    });

    it('clanBackgroundColor: the server tag colour, in every hex spelling', () => {
      expect(parsed({ clanBackgroundColor: '#112233' }).tagBackground).toBe('#112233');
      expect(parsed({ clanBackgroundColor: 'abc' }).tagBackground).toBe('#aabbcc');
    });

    it('takes options that change nothing here without a problem', () => {
      expect(
        parsed({
          showDisplayName: 'true',
          hideBadges: 'true',
          hideDiscrim: 'true',
          animatedDecoration: 'true',
        }),
      ).toEqual(DEFAULT_CARD_OPTIONS);
    });

    it('every name is documented', () => {
      for (const name of [
        'theme',
        'bg',
        'borderRadius',
        'idleMessage',
        'animated',
        'animatedDecoration',
        'showDisplayName',
        'hideDecoration',
        'hideStatus',
        'hideTimestamp',
        'hideTag',
        'hideBadges',
        'hideProfile',
        'hideActivity',
        'hideSpotify',
        'ignoreAppId',
        'hideDiscrim',
        'clanBackgroundColor',
      ]) {
        expect(CARD_QUERY_OPTIONS).toHaveProperty(name);
      }
    });
  });

  it('layout: full or compact', () => {
    expect(parsed({}).layout).toBe('full');
    expect(parsed({ layout: 'Compact' }).layout).toBe('compact');
  });

  it('maxActivities: 1 to 4 panels', () => {
    expect(parsed({}).maxActivities).toBe(1);
    expect(parsed({ maxActivities: '3' }).maxActivities).toBe(3);
    expect(parsed({ maxActivities: String(MAX_ACTIVITIES) }).maxActivities).toBe(MAX_ACTIVITIES);
  });

  it('a repeated option counts once, with its last value', () => {
    expect(parsed({ theme: ['dark', 'light'] }).theme).toBe('light');
  });

  it.each([
    ['theme', 'blue'],
    ['theme', ''],
    ['bg', 'red'],
    ['bg', '#12345'],
    ['bg', 'url(x)'],
    ['borderRadius', '-1'],
    ['borderRadius', '41'],
    ['borderRadius', '1e1'],
    ['borderRadius', '1rem'],
    ['hideProfile', 'sure'],
    ['hideStatus', 'y'],
    ['hideTimestamp', '2'],
    ['hideActivity', 'never'],
    ['hideMusic', 'nah'],
    ['hideSpotify', 'x'],
    ['hideTag', '-'],
    ['hideDecoration', 'maybe'],
    ['animated', 'nope'],
    ['idleMessage', ''],
    ['idleMessage', '   '],
    ['idleMessage', 'x'.repeat(MAX_IDLE_MESSAGE_LENGTH + 1)],
    ['ignoreAppId', 'spotify'],
    ['ignoreAppId', Array.from({ length: MAX_IGNORED_APPS + 1 }, () => '512035578624524288').join(',')],
    ['clanBackgroundColor', 'blue'],
    ['maxActivities', '0'],
    ['maxActivities', String(MAX_ACTIVITIES + 1)],
    ['maxActivities', '1.5'],
    ['maxActivities', 'all'],
    ['layout', 'tiny'],
  ])('%s=%j falls back to the default, and the problem names the option', (name, value) => {
    const { options, problems } = parseCardOptions({
      [name]: value,
      theme: name === 'theme' ? value : 'dark',
    });
    expect(options).toEqual(DEFAULT_CARD_OPTIONS);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.startsWith(`${name}: `)).toBe(true);
  });

  it('keeps the good options of a query with bad ones', () => {
    const { options, problems } = parseCardOptions({
      theme: 'light',
      bg: 'nope',
      borderRadius: '99',
      hideStatus: '1',
    });
    expect(options).toMatchObject({ theme: 'light', background: null, borderRadius: 12, hideStatus: true });
    expect(problems.map((problem) => problem.split(':')[0])).toEqual(['bg', 'borderRadius']);
  });
});
