/** The oldest Node.js major Presently runs on, as `engines` in package.json says. */
export const OLDEST_NODE_MAJOR = 22;

/** The major version of a Node.js version such as `24.21.0`. */
export function nodeMajor(version: string): number {
  return Number(version.split('.')[0]);
}

/**
 * Why Presently cannot run on this Node.js, or undefined when it can. Said at start, because on an older
 * Node better-sqlite3's binary crashes the process when a database opens, with no message of its own.
 */
export function unsupportedRuntime(version: string): string | undefined {
  if (nodeMajor(version) >= OLDEST_NODE_MAJOR) return undefined;
  return `Node.js ${OLDEST_NODE_MAJOR} or newer is needed (this is ${version}); Node.js 24 LTS is the one CI runs`;
}
