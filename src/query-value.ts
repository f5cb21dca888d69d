/**
 * A query parameter's value, given once or several times (`?theme=dark&theme=light`): the last, as a
 * browser's form and most servers read it. Undefined when absent or not text.
 */
export function lastQueryValue(query: unknown, name: string): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  const value = (query as Record<string, unknown>)[name];
  const last = Array.isArray(value) ? value[value.length - 1] : value;
  return typeof last === 'string' ? last : undefined;
}
