/**
 * A strict reader of Prometheus's text exposition format (0.0.4), for tests: it throws, naming the line, on
 * anything a Prometheus server would refuse or misread, and returns the samples so tests can look values up.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)( -?\d+)?$/;

/** Parses the exposition; throws on the first line that breaks the format. */
export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a line feed');
  const families = new Map<string, Family>();
  const seenSeries = new Set<string>();
  let current: Family | undefined;
  const lines = text.slice(0, -1).split('\n');
  for (const [index, line] of lines.entries()) {
    const fail = (problem: string): never => {
      throw new Error(`line ${index + 1}: ${problem}: ${JSON.stringify(line)}`);
    };
    if (line === '') continue;
    if (line.startsWith('#')) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!match) continue; // an ordinary comment
      const [, keyword, name = '', rest = ''] = match;
      if (!METRIC_NAME.test(name)) fail('bad metric name');
      let family = families.get(name);
      if (family && family !== current) fail('metric family split in two');
      if (!family) {
        family = { name, type: '', help: '', samples: [] };
        families.set(name, family);
      }
      current = family;
      if (keyword === 'TYPE') {
        if (family.type !== '') fail('second TYPE');
        if (family.samples.length > 0) fail('TYPE after samples');
        if (!TYPES.has(rest)) fail('unknown type');
        family.type = rest;
      } else {
        if (family.help !== '') fail('second HELP');
        if (/\\(?![\\n])/.test(rest)) fail('bad escape in HELP');
        family.help = rest;
      }
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) fail('not a sample line');
    const [, name = '', rawLabels, rawValue = ''] = match as RegExpExecArray;
    const family = familyOf(name, current) ?? fail('sample outside its family (or without TYPE)');
    const labels = rawLabels ? parseLabels(rawLabels.slice(1, -1), fail) : {};
    const value = parseValue(rawValue);
    if (value === undefined) fail('bad value');
    const series = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seenSeries.has(series)) fail('duplicate series');
    seenSeries.add(series);
    family.samples.push({ name, labels, value: value as number });
  }
  for (const family of families.values()) {
    if (family.type === '' || family.help === '') throw new Error(`${family.name}: no TYPE or no HELP`);
    if (family.type === 'histogram') checkHistogram(family);
  }
  return families;
}

/** The family a sample belongs to: its own name, or a histogram's/summary's `_bucket`, `_sum`, `_count`. */
function familyOf(name: string, current: Family | undefined): Family | undefined {
  if (!current) return undefined;
  if (name === current.name) return current;
  const suffix = name.slice(current.name.length);
  const own = current.type === 'histogram' ? ['_bucket', '_sum', '_count'] : ['_sum', '_count'];
  const aggregate = current.type === 'histogram' || current.type === 'summary';
  return aggregate && name.startsWith(current.name) && own.includes(suffix) ? current : undefined;
}

function parseLabels(text: string, fail: (problem: string) => never): Record<string, string> {
  const labels: Record<string, string> = {};
  let rest = text;
  while (rest !== '') {
    const match = /^([^=]+)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/.exec(rest);
    if (!match) return fail('bad label set');
    const [whole, name = '', value = ''] = match;
    if (!LABEL_NAME.test(name) || name.startsWith('__')) fail(`bad label name ${name}`);
    if (Object.hasOwn(labels, name)) fail(`label ${name} twice`);
    labels[name] = value.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
    rest = rest.slice(whole.length);
  }
  return labels;
}

/** A float as Go's ParseFloat reads it, which is what the format asks for: NaN and Inf in any case. */
function parseValue(text: string): number | undefined {
  if (/^nan$/i.test(text)) return Number.NaN;
  if (/^\+?inf(inity)?$/i.test(text)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/i.test(text)) return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** Per label set: buckets ascending in `le`, cumulative, ending at +Inf equal to `_count`; a `_sum`. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, Sample[]>();
  for (const sample of family.samples) {
    const { le: _le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  for (const [key, samples] of groups) {
    const where = `${family.name}${key}`;
    const buckets = samples.filter((sample) => sample.name === `${family.name}_bucket`);
    const count = samples.find((sample) => sample.name === `${family.name}_count`);
    const sum = samples.find((sample) => sample.name === `${family.name}_sum`);
    if (!count || !sum || buckets.length === 0) throw new Error(`${where}: buckets, _sum and _count needed`);
    let previous = { le: Number.NEGATIVE_INFINITY, value: 0 };
    for (const bucket of buckets) {
      const le = parseValue(bucket.labels.le ?? '');
      if (le === undefined || le <= previous.le) throw new Error(`${where}: le not ascending`);
      if (bucket.value < previous.value) throw new Error(`${where}: buckets not cumulative`);
      previous = { le, value: bucket.value };
    }
    if (previous.le !== Number.POSITIVE_INFINITY || previous.value !== count.value) {
      throw new Error(`${where}: the +Inf bucket must be last and equal _count`);
    }
  }
}

/** The value of the sample with exactly these labels, or 0 if there is none. */
export function sampleValue(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const familyName = name.replace(/_(bucket|sum|count)$/, '');
  const family = families.get(name) ?? families.get(familyName);
  const sample = family?.samples.find(
    (candidate) =>
      candidate.name === name &&
      Object.entries(labels).every(([label, value]) => candidate.labels[label] === value) &&
      Object.keys(candidate.labels).length === Object.keys(labels).length,
  );
  return sample?.value ?? 0;
}

/** Scrapes `/metrics` and parses it strictly. */
export async function scrape(base: string, init?: RequestInit): Promise<Map<string, Family>> {
  const response = await fetch(`${base}/metrics`, init);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return parseExposition(await response.text());
}
