// The README's quick start for this package, run as written: in a folder of
// its own where `ask-user` is this package (as `npm install ./packages/js`
// links it) and ask_user_tool.wasm is the component.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { REPO } from './support.js';

/** The first ```js block under the README's heading for this package. */
function quickStart() {
  const readme = readFileSync(new URL('README.md', REPO), 'utf8');
  const section = readme.slice(readme.indexOf('### From JavaScript'));
  const block = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(block, 'the README has no js block under "From JavaScript"');
  return block[1];
}

test('the README quick start works as written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ask-user-js-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(fileURLToPath(new URL('..', import.meta.url)), join(dir, 'node_modules', 'ask-user'));
  copyFileSync(process.env.ASK_USER_COMPONENT, join(dir, 'ask_user_tool.wasm'));
  writeFileSync(join(dir, 'quickstart.mjs'), quickStart());

  const child = spawn(process.execPath, ['quickstart.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  child.stderr.on('data', (chunk) => { err += chunk; });
  const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = await once(child, 'exit');
  clearTimeout(bound);
  assert.equal(code, 0, `the quick start failed:\n${err}`);
  assert.equal(out, '{"answers":[{"id":"q","selected":["Yes"]}]}\n');
});
