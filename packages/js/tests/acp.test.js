// The ACP example (examples/acp-agent.mjs) started by an editor's side of
// ACP on the official client library (host/tests/npm/acp-client.mjs), as
// an editor starts an agent: the batch is one form in the editor, laid out
// by the `ask-user` command the repository builds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { REPO } from './support.js';

const CLIENT = fileURLToPath(new URL('host/tests/npm/acp-client.mjs', REPO));
const AGENT = fileURLToPath(new URL('../examples/acp-agent.mjs', import.meta.url));
const COMMAND = process.env.ASK_USER_COMMAND ?? fileURLToPath(new URL('target/debug/ask-user', REPO));
const DEPLOY = readFileSync(new URL('examples/deploy.json', REPO), 'utf8');

/** The client's report of a run in `mode` (answering with `content`). */
async function run(t, mode, content) {
  const dir = mkdtempSync(join(tmpdir(), 'ask-user-acp-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const report = join(dir, 'report.json');
  const args = [CLIENT, report, mode, DEPLOY, ...(content ? [JSON.stringify(content)] : [])];
  const client = spawn(process.execPath, args, {
    env: { ...process.env, ASK_USER_COMMAND: COMMAND, ACP_AGENT: JSON.stringify([process.execPath, AGENT]) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const [status] = await once(client, 'exit');
  assert.equal(status, 0, 'the ACP client ends its session');
  const seen = JSON.parse(readFileSync(report, 'utf8'));
  return { ...seen, result: JSON.parse(seen.message) };
}

test("the editor's form answers the batch, laid out as the Rust host lays it out", async (t) => {
  const seen = await run(t, 'accept', {
    q01_target: 'Production',
    q02_checks: ['Load test'],
    q03_note: 'from the editor',
  });
  assert.equal(seen.forms.length, 1);
  const [form] = seen.forms;
  assert.equal(form.mode, 'form');
  assert.equal(form.sessionId, 'session-1');
  assert.deepEqual(Object.keys(form.requestedSchema.properties),
    ['q01_target', 'q01_target_own', 'q02_checks', 'q02_checks_own', 'q03_note']);
  assert.equal(seen.result.code, null, seen.result.text);
  assert.deepEqual(JSON.parse(seen.result.text).answers, [
    { id: 'target', selected: ['Production'] },
    { id: 'checks', selected: ['Load test'] },
    { id: 'note', selected: [], custom: 'from the editor' },
  ]);
  assert.equal(seen.stopReason, 'end_turn');
});

test('a declined form ends the ask ASK_CANCELLED', async (t) => {
  const seen = await run(t, 'decline');
  assert.equal(seen.result.code, 'ASK_CANCELLED');
  assert.match(seen.result.text, /declined the form/);
});

test('stopping the turn withdraws the open form', async (t) => {
  const seen = await run(t, 'cancel');
  assert.equal(seen.withdrawn, 'cancel_request', 'the form got $/cancel_request');
  assert.equal(seen.result.code, 'ASK_ABORTED');
  assert.equal(seen.stopReason, 'cancelled');
});

test('an editor without forms is passed over', async (t) => {
  const seen = await run(t, 'no-forms');
  assert.deepEqual(seen.forms, []);
  // The example's one answerer passed: nobody else was there.
  assert.equal(seen.result.code, 'NO_PROVIDER');
});

test('an editor that fails the form is passed over', async (t) => {
  const seen = await run(t, 'fail');
  assert.equal(seen.forms.length, 1);
  // As the Rust host's answerer does: the next answerer's turn (here
  // nobody's), not an internal error.
  assert.equal(seen.result.code, 'NO_PROVIDER');
});
