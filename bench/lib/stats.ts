/** The value at quantile q (0–1) of samples, sorted or not (nearest rank, no interpolation). */
export function quantile(samples: ArrayLike<number>, q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

export function median(samples: ArrayLike<number>): number {
  return quantile(samples, 0.5);
}

/** "a–b": how far the rounds of one measurement were apart, for the notes. */
export function spread(samples: readonly number[], format: (value: number) => string): string {
  return `${format(Math.min(...samples))}–${format(Math.max(...samples))}`;
}

/** 12,345 for counts and rates; 3 significant digits below 100. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3).replace(/\.?0+$/, '');
}
