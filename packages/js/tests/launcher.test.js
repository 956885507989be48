// The command's launcher (bin/ask-user.js), installed as npm lays it out:
// it runs this platform's package's binary (platforms.js) with the same
// arguments, streams and exit status, and says what to do when that
// package is missing. (scripts/test-dist runs it with the real binary.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { PLATFORMS, thisPlatform } from '../platforms.js';

const here = fileURLToPath(new URL('..', import.meta.url));

/** node_modules with the ask-user package and, when `binary` is given, this platform's. */
function installed(t, binary) {
  const root = mkdtempSync(join(tmpdir(), 'ask-user-launcher-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const main = join(root, 'node_modules/ask-user');
  for (const file of ['package.json', 'platforms.js', 'bin']) cpSync(join(here, file), join(main, file), { recursive: true });
  if (binary) {
    const platform = join(root, 'node_modules', thisPlatform().package, 'bin');
    mkdirSync(platform, { recursive: true });
    writeFileSync(join(platform, 'ask-user'), binary);
    chmodSync(join(platform, 'ask-user'), 0o755);
  }
  return join(main, 'bin/ask-user.js');
}

test('this machine is one the command is built for, by its own package', () => {
  const platform = thisPlatform();
  assert.ok(platform, `${process.platform}-${process.arch}`);
  assert.equal(new Set(PLATFORMS.map((p) => p.package)).size, PLATFORMS.length);
  assert.equal(new Set(PLATFORMS.map((p) => p.target)).size, PLATFORMS.length);
});

test("the launcher runs the platform's binary with the arguments, the streams and the exit status", (t) => {
  const launcher = installed(t, '#!/bin/sh\necho "args: $*"\nread line\necho "read: $line" >&2\nexit 7\n');
  const ran = spawnSync(process.execPath, [launcher, 'mcp', '--config', 'a b'], { input: 'hello\n', encoding: 'utf8' });
  assert.equal(ran.status, 7);
  assert.equal(ran.stdout, 'args: mcp --config a b\n');
  assert.equal(ran.stderr, 'read: hello\n');
});

test("without the platform's package, the launcher says what to do", (t) => {
  const launcher = installed(t, null);
  const ran = spawnSync(process.execPath, [launcher, 'mcp'], { encoding: 'utf8' });
  assert.equal(ran.status, 1);
  assert.match(ran.stderr, new RegExp(`the package ${thisPlatform().package}, which carries the command for this machine, is not installed`));
  assert.match(ran.stderr, /without --omit=optional/);
});
