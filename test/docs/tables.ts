import { readFileSync } from 'node:fs';

/**
 * The tables of docs/ as tests read them: the reference facts they hold (docs/api.md's routes and error
 * codes, docs/socket.md's close codes) are checked against the code and the running service.
 */

/** The cells of a Markdown table row, trimmed; not a row: null. */
function cellsOf(line: string): string[] | null {
  if (!line.startsWith('|')) return null;
  return line
    .slice(1, -1)
    .split('|')
    .map((cell) => cell.trim());
}

/** The rows of the Markdown table that follows `heading` on `page`, as cells. */
export function tableAfter(page: string, heading: string): string[][] {
  const text = readFileSync(`docs/${page}`, 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`docs/${page} has no "${heading}"`);
  const lines = text.slice(start + heading.length + 2).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    const cells = cellsOf(line);
    if (cells === null) break;
    rows.push(cells);
  }
  return rows;
}

const METHOD = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)$/;

/**
 * `METHOD /path` of every row of docs/api.md's route tables (its "Routes" section), as the page writes
 * paths (`:id`), without the query. A cell may hold several paths (`/v1/openapi.json`, `/docs`), or
 * extensions of the one before it (`/:id.png` `.jpg`).
 */
export function documentedRoutes(): string[] {
  const text = readFileSync('docs/api.md', 'utf8');
  const section = text.split(/^## /m).find((part) => part.startsWith('Routes\n'));
  if (section === undefined) throw new Error('docs/api.md has no "## Routes"');
  const routes: string[] = [];
  for (const line of section.split('\n')) {
    const [method = '', paths = ''] = cellsOf(line) ?? [];
    if (!METHOD.test(method)) continue;
    let previous = '';
    for (const [, token = ''] of paths.matchAll(/`([^`]+)`/g)) {
      const path = token.startsWith('.') ? previous.replace(/\.[a-z]+$/, token) : (token.split('?')[0] ?? '');
      routes.push(`${method} ${path}`);
      previous = path;
    }
  }
  return routes;
}

/** [code, status] of every row of docs/api.md's error table. */
export function documentedErrors(): [string, number][] {
  return tableAfter('api.md', '## Errors').map(([, status, code]) => [
    code?.replaceAll('`', '') ?? '',
    Number(status),
  ]);
}
