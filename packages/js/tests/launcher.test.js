// The command's launcher (bin/ask-user.js), installed as npm lays it out:
// it runs this platform's package's binary (platforms.js) with the same
// arguments, streams and exit status, and says what to do when that
// package is missing. (scripts/test-dist runs it with the real binary.)
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
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

// A command that says which signal reached it, then ends with its own status.
const TRAPS = `#!/bin/sh
for signal in INT TERM HUP QUIT; do trap "echo got $signal; exit 3" $signal; done
echo ready
while :; do sleep 0.1; done
`;

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']) {
  test(`${signal} sent to the launcher alone reaches the command, and the launcher ends as it does`, { timeout: 30000 }, async (t) => {
    const launcher = installed(t, TRAPS);
    const run = spawn(process.execPath, [launcher], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => run.kill('SIGKILL'));
    let out = '';
    run.stdout.setEncoding('utf8');
    run.stdout.on('data', (chunk) => { out += chunk; });
    while (!out.includes('ready')) await once(run.stdout, 'data');
    run.kill(signal);
    // Its standard output read to the end too.
    const [code] = await once(run, 'close');
    assert.equal(out, `ready\ngot ${signal.slice(3)}\n`);
    assert.equal(code, 3);
  });
}
