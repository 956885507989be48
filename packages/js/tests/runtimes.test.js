// The tool composed with a seam plug (`ask-user component --plug`) in
// Node through jco, with no seam of the test's own: WASI p2 from jco's
// preview2-shim is all it imports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, writeFile, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { transpileBytes } from '@bytecodealliance/jco-transpile';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');

test('the answers plug answers in jco with no seam of ours', async () => {
  const command = process.env.ASK_USER_COMMAND;
  assert.ok(command, 'set ASK_USER_COMMAND to the ask-user command (scripts/test does)');
  // Inside the package, so that jco's output finds preview2-shim.
  const dir = await mkdtemp(join(here, '..', 'node_modules', '.runtimes-'));
  try {
    const wasm = join(dir, 'ask-user.wasm');
    execFileSync(command, ['component', '--plug', 'answers', '--out', wasm]);
    const { files } = await transpileBytes(await readFile(wasm), { name: 'ask-user' });
    for (const [name, data] of Object.entries(files)) {
      await mkdir(dirname(join(dir, name)), { recursive: true });
      await writeFile(join(dir, name), data);
    }
    const answers = await readFile(join(repo, 'examples', 'deploy.answers.json'), 'utf8');
    // The component's environment, as a host gives it through the shim.
    const { _setEnv } = await import('@bytecodealliance/preview2-shim/cli');
    _setEnv({ ASK_USER_ANSWERS: answers });
    const { tool } = await import(pathToFileURL(join(dir, 'ask-user.js')).href);
    const args = await readFile(join(repo, 'examples', 'deploy.json'), 'utf8');
    const output = tool.execute(args);
    assert.deepEqual(JSON.parse(output.text), JSON.parse(answers));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
