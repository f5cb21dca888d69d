export interface ChangelogEntry {
  version: string;
  date: string;
  changes: string[];
}

const RELEASE_HEADING = /^##\s+\[?([^\]\s]+)\]?\s*(?:[-–]\s*(\d{4}-\d{2}-\d{2}))?\s*$/;
const BULLET = /^\s*[-*]\s+(.*\S)\s*$/;

/**
 * Reads a Keep-a-Changelog style file: `## [version] - date` headings, `### Section` subheadings, and
 * bullets. Entries come out newest first, as the file lists them; a section name prefixes its bullets.
 */
export function parseChangelog(text: string): ChangelogEntry[] {
  const entries: ChangelogEntry[] = [];
  let current: ChangelogEntry | undefined;
  let section = '';
  for (const line of text.split(/\r?\n/)) {
    const heading = RELEASE_HEADING.exec(line);
    if (heading) {
      current = { version: heading[1] as string, date: heading[2] ?? '', changes: [] };
      entries.push(current);
      section = '';
      continue;
    }
    const subheading = /^###\s+(.*\S)/.exec(line);
    if (subheading) {
      section = subheading[1] as string;
      continue;
    }
    const bullet = BULLET.exec(line);
    if (bullet && current) current.changes.push(section ? `${section}: ${bullet[1]}` : (bullet[1] as string));
  }
  return entries;
}
