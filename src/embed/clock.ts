import { clockText, progressAt } from './format.js';

/**
 * The running clocks of a rendering: an activity's elapsed time and a track's position, marked with
 * `data-start` (and `data-end` for a track) so the rendering keeps no list of them. One timer a page.
 */

const TICK_MS = 1_000;
const ticking = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | null = null;

/** Calls `tick` every second until the returned function is called. */
export function everySecond(tick: () => void): () => void {
  ticking.add(tick);
  timer ??= setInterval(() => {
    for (const each of ticking) each();
  }, TICK_MS);
  return () => {
    ticking.delete(tick);
    if (ticking.size === 0 && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };
}

/** Whether `root` shows anything that runs. */
export function hasClocks(root: ParentNode): boolean {
  return root.querySelector('[data-start]') !== null;
}

/** Sets every clock of `root` to `now`: elapsed times, track positions and progress bars. */
export function updateClocks(root: ParentNode, now: number): void {
  for (const node of root.querySelectorAll<HTMLElement>('[data-start]')) {
    const start = Number(node.dataset.start);
    const end = node.dataset.end === undefined ? null : Number(node.dataset.end);
    const elapsed = clockText((end === null ? now : Math.min(now, end)) - start);
    if (end === null || node.getAttribute('role') !== 'progressbar') {
      node.textContent = elapsed;
      continue;
    }
    const share = progressAt(start, end, now);
    const fill = node.firstElementChild as HTMLElement | null;
    // A CSSOM property, which a page's CSP allows where a style attribute would be refused.
    if (fill) fill.style.transform = `scaleX(${share.toFixed(4)})`;
    node.setAttribute('aria-valuenow', String(Math.round(((end - start) * share) / 1000)));
    node.setAttribute('aria-valuetext', `${elapsed} of ${clockText(end - start)}`);
  }
}
