import { spawnSync } from 'node:child_process';
import { setPriority } from 'node:os';

/** An attack's processes run at this niceness, in the idle scheduling class where the machine allows it. */
const ATTACKER_NICENESS = 19;

/**
 * Puts an attack's process below every process it is measured against, as an attacker on other machines
 * would be: in Linux's idle scheduling class (https://man7.org/linux/man-pages/man7/sched.7.html) a process
 * of any other class that wakes takes the core from it at once, where at niceness 19 alone it keeps the
 * core to the end of its slice. Returns which it got, for the notes.
 */
export function lowestPriority(pid: number): string {
  setPriority(pid, ATTACKER_NICENESS);
  const chrt = spawnSync('chrt', ['--idle', '--pid', '0', String(pid)], { stdio: 'ignore' });
  return chrt.status === 0 ? 'in the idle scheduling class' : `at niceness ${ATTACKER_NICENESS}`;
}
