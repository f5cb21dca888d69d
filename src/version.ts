import { readFileSync } from 'node:fs';
import { type ChangelogEntry, parseChangelog } from './changelog.js';

/** What `/v1/version` answers. */
export interface VersionInfo {
  version: string;
  changelog: ChangelogEntry[];
}

/** package.json's version and the CHANGELOG, read once at start-up from the package root. */
export function readVersionInfo(): VersionInfo {
  // src/ and dist/ sit at the same depth under the package root.
  const root = new URL('../', import.meta.url);
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string };
  return {
    version: pkg.version,
    changelog: parseChangelog(readFileSync(new URL('CHANGELOG.md', root), 'utf8')),
  };
}
