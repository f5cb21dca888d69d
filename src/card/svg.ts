/** A number for an SVG attribute: at most `decimals` places, no trailing zeros, never `-0` or NaN. */
export function num(value: number, decimals = 2): string {
  if (!Number.isFinite(value)) return '0';
  const factor = 10 ** decimals;
  const rounded = Math.round(value * factor) / factor;
  return String(rounded === 0 ? 0 : rounded);
}
