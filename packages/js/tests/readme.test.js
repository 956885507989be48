// The book's quick start for this package (docs/src/embedding/javascript.md),
// run as written where a user
// would run it: the tarball `npm pack` makes of this folder, installed into a
// fresh folder outside the repository, with no component file and no Rust
// binary beside it.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { REPO } from './support.js';

/** The first ```js block of the book's page for this package. */
function quickStart() {
  const page = readFileSync(new URL('docs/src/embedding/javascript.md', REPO), 'utf8');
  const block = /```js\n([\s\S]*?)```/.exec(page);
  assert.ok(block, "the book's page for JavaScript has no js block");
  return block[1];
}

test('the packed package carries the component and the README quick start works as written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ask-user-js-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', timeout: 300_000 });
  const packed = npm(['pack', '--silent', '--pack-destination', dir], fileURLToPath(new URL('..', import.meta.url))).trim();
  const tarball = join(dir, packed.split('\n').pop());
  const listing = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' });
  assert.ok(listing.includes('package/ask_user_tool.wasm'), listing);

  const work = join(dir, 'work');
  mkdirSync(work);
  writeFileSync(join(work, 'package.json'), '{"private": true}');
  npm(['install', '--silent', '--prefer-offline', '--no-audit', '--no-fund', tarball], work);
  const shipped = readFileSync(new URL('host/runtime/component/ask_user_tool.wasm', REPO));
  assert.deepEqual(readFileSync(join(work, 'node_modules', 'ask-user', 'ask_user_tool.wasm')), shipped);
  writeFileSync(join(work, 'quickstart.mjs'), quickStart());

  const child = spawn(process.execPath, ['quickstart.mjs'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; });
  const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = await once(child, 'exit');
  clearTimeout(bound);
  assert.equal(code, 0, `the quick start failed:\n${err}`);
  assert.equal(out, '{"answers":[{"id":"q","selected":["Yes"]}]}\n');
  assert.deepEqual(readdirSync(work).sort(), ['node_modules', 'package-lock.json', 'package.json', 'quickstart.mjs']);
  // The component came transpiled: jco (an optional peer) was not installed.
  assert.deepEqual(readdirSync(join(work, 'node_modules')).filter((n) => !n.startsWith('.')), ['ask-user']);
  // Another component needs it, and says so.
  const other = execFileSync(process.execPath, ['--input-type=module', '-e', `
    import { Host } from 'ask-user';
    try { await Host.load('quickstart.mjs'); } catch (error) { console.log(error.message); }`],
  { cwd: work, encoding: 'utf8' });
  assert.match(other, /needs jco: npm install @bytecodealliance\/jco-transpile/);
});
