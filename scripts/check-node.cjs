'use strict';
/*
 * Refuses a Node.js that package.json's `engines` does not allow, before a build or a test run spends its
 * time failing on it (better-sqlite3's binary crashes an old Node when a database opens). CommonJS with no
 * dependencies and nothing newer than Node 6 knows, so that the Node it refuses can run it and say why.
 *
 *   node scripts/check-node.cjs [version]   exits 1 with what to do; the version is this Node's by default
 */
// biome-ignore lint/style/useNodejsImportProtocol: `node:` is unknown to the Node versions this refuses.
const fs = require('fs');
// biome-ignore lint/style/useNodejsImportProtocol: as above.
const path = require('path');

const ROOT = path.join(__dirname, '..');

/** [major, minor, patch] of `1`, `1.2`, `v1.2.3` (pre-release and build tags are ignored), or null. */
function parseVersion(text) {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:[-+].*)?$/.exec(text);
  if (!match) return null;
  return [Number(match[1]), Number(match[2] || 0), Number(match[3] || 0)];
}

/** Whether `version` is at least `oldest`. */
function atLeast(version, oldest) {
  const differs = [0, 1, 2].filter((i) => version[i] !== oldest[i])[0];
  return differs === undefined || version[differs] > oldest[differs];
}

/** The oldest version `engines.node` allows: it is written `>=<version>`. */
function oldestAllowed(range) {
  const match = /^>=\s*(\S+)$/.exec(range.trim());
  const oldest = match && parseVersion(match[1]);
  if (!oldest) throw new Error(`package.json "engines.node" is not ">=<version>": ${JSON.stringify(range)}`);
  return oldest;
}

function readText(file) {
  return fs.readFileSync(path.join(ROOT, file), 'utf8');
}

/**
 * What is wrong with running on Node.js `version` (e.g. `20.20.2`), with what to do about it; null if
 * nothing. `where` names the binary, when it is the one running.
 */
function nodeProblem(version, where) {
  const range = JSON.parse(readText('package.json')).engines.node;
  const parsed = parseVersion(version);
  if (parsed && atLeast(parsed, oldestAllowed(range))) return null;
  const wanted = readText('.nvmrc').trim();
  const packageName = `node-linux-${process.arch}`;
  const home = `~/node${wanted}/node_modules/${packageName}`;
  return [
    `Presently needs Node.js ${range} (package.json "engines"); this is Node.js ${version}${where ? ` (${where})` : ''}.`,
    `Use Node.js ${wanted} (.nvmrc), the version CI runs:`,
    '  with nvm:    nvm install && nvm use',
    `  without nvm: npm install --prefix ~/node${wanted} ${packageName}@${wanted}`,
    `               export PATH=${home}/bin:$PATH npm_config_nodedir=${home}`,
    '               (docs/testing.md)',
    'then `npm ci` again: better-sqlite3 was built for the Node.js that installed it.',
  ].join('\n');
}

module.exports = { nodeProblem };

if (require.main === module) {
  const problem = process.argv[2]
    ? nodeProblem(process.argv[2])
    : nodeProblem(process.versions.node, process.execPath);
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
}
