import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { type DefaultValue, VARIABLES, type Variable } from '../../src/config-variables.js';

/**
 * docs/configuration.md against src/config-variables.ts, the one home of the variables and their defaults:
 * the same variables, each with the default the code takes, and no variable read that the table leaves out.
 */

interface Row {
  names: string[];
  stated: string;
}

/** The page's table: each row's variables (a cell may name several) and its default cell. */
function documentedRows(): Row[] {
  const page = readFileSync('docs/configuration.md', 'utf8');
  return page
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [names = '', stated = ''] = line.slice(1).split(' | ');
      return {
        names: [...names.matchAll(/`([A-Z0-9_]+)`/g)].map((match) => match[1] as string),
        stated: stated.trim(),
      };
    });
}

const shown = (value: Exclude<DefaultValue, null>): string =>
  `\`${Array.isArray(value) ? value.join(',') : String(value)}\``;

/** Whether the page's cell states the variable's default. */
function states(cell: string, variable: Variable): boolean {
  if (variable.stated !== undefined)
    return cell === variable.stated || cell.startsWith(`${variable.stated} `);
  if (variable.default === null) return cell === 'unset';
  const value = shown(variable.default);
  if (Array.isArray(variable.default)) return cell.includes(value);
  const demo = variable.demoDefault === undefined ? '' : `; in demo mode ${shown(variable.demoDefault)}`;
  return cell === `${value}${demo}`;
}

/** Every variable loadConfig reads, whether set or not, with and without a token. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  for (const env of [{}, { DISCORD_TOKEN: 'token' }]) {
    const watched = new Proxy(env as Record<string, string | undefined>, {
      get(target, name: string) {
        read.add(name);
        return target[name];
      },
    });
    loadConfig(watched, 1024 ** 3);
  }
  return read;
}

describe('docs/configuration.md', () => {
  const rows = documentedRows();
  const documented = rows.flatMap((row) => row.names);

  it('lists every variable the service reads, once, and no other', () => {
    expect([...documented].sort()).toEqual(Object.keys(VARIABLES).sort());
    expect(new Set(documented).size).toBe(documented.length);
    expect([...variablesRead()].sort()).toEqual(Object.keys(VARIABLES).sort());
  });

  it('states each default as the code takes it', () => {
    const wrong = rows.flatMap(({ names, stated }) =>
      names
        .filter((name) => !states(stated, VARIABLES[name as keyof typeof VARIABLES]))
        .map((name) => `${name}: the page says ${stated}`),
    );
    expect(wrong).toEqual([]);
  });

  it('takes the defaults the table gives', () => {
    const config = loadConfig({ DISCORD_TOKEN: 'token' }, 1024 ** 3);
    expect(config.port).toBe(VARIABLES.PORT.default);
    expect(config.rateLimitRead).toBe(VARIABLES.RATE_LIMIT_READ.default);
    expect(config.database).toEqual({
      kind: 'sqlite',
      path: VARIABLES.DATABASE_URL.default.slice('sqlite:'.length),
    });
    expect(loadConfig({}, 1024 ** 3).database).toEqual({
      kind: 'sqlite',
      path: VARIABLES.DATABASE_URL.demoDefault.slice('sqlite:'.length),
    });
  });
});
