// ask-user's answerers as the harness's provider, against a real inbox
// (`ask-user inbox serve`, the command scripts/test built): the harness's
// own tool asks, the question waits in the inbox with what the harness
// sent (a plan's detail and intent too), a person answers there, and the
// model gets the answer; the turn cancelled withdraws it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { promisify } from 'node:util';
import * as provider from '../src/provider.js';
import { COMMAND, harness, inbox } from './support.js';

/** The harness's own tool, and ask-user's chain as its provider. */
async function harnessAsking(t, config) {
  const h = await harness(t, 'reference');
  const fiber = h.app.plugin(provider, { command: COMMAND, config });
  await fiber;
  h.fibers.push(fiber);
  return h;
}

test('the harness\'s question waits in the inbox, and the answer given there reaches the model', async (t) => {
  const box = await inbox(t);
  const h = await harnessAsking(t, box.config);
  const call = h.call({
    questions: [{
      id: 'db', question: 'Which database?', header: 'Storage',
      options: [{ label: 'SQLite (Recommended)', description: 'one file' }, { label: 'PostgreSQL' }],
    }],
  });
  const waiting = await box.waitFor('waiting');
  assert.equal(waiting.session, 'dsh-session-1');
  assert.equal(waiting.questions[0].header, 'Storage');
  await box.answer(waiting.id, [{ id: 'db', selected: ['PostgreSQL'] }]);
  const result = await call;
  assert.equal(result.isError, false, JSON.stringify(result));
  assert.deepEqual(result.value, { answers: [{ id: 'db', selected: ['PostgreSQL'] }] });
});

test('a plan\'s detail and intent reach the inbox as the harness sent them', async (t) => {
  const box = await inbox(t);
  const h = await harnessAsking(t, box.config);
  const asked = h.app.userQuestions.ask({
    questions: [{
      id: 'plan', question: 'Go ahead with this plan?', detail: '1. Add the table\n2. Migrate',
      options: [{ label: 'Approve' }, { label: 'Revise' }],
      intent: { kind: 'plan-review', approve: 'Approve' },
    }],
    agent: h.root,
    signal: new AbortController().signal,
  });
  const waiting = await box.waitFor('waiting');
  const [question] = waiting.questions;
  assert.equal(question.detail, '1. Add the table\n2. Migrate');
  assert.deepEqual(question.intent, { kind: 'plan-review', approve: 'Approve' });
  await box.answer(waiting.id, [{ id: 'plan', selected: ['Approve'] }]);
  assert.deepEqual(await asked, { answers: [{ id: 'plan', selected: ['Approve'] }] });
});

test('the turn cancelled is ASK_ABORTED, its question left in the inbox, its agent gone', async (t) => {
  const box = await inbox(t);
  const h = await harnessAsking(t, box.config);
  const turn = new AbortController();
  const call = h.call({ questions: [{ id: 'q', question: 'Deploy now?' }] }, { signal: turn.signal });
  await box.waitFor('waiting');
  turn.abort();
  const result = await call;
  assert.equal(result.isError, true);
  const left = await box.waitFor((q) => q.agentWaiting === false);
  assert.equal(left.questions[0].question, 'Deploy now?');
  assert.equal(left.state, 'waiting', 'kept for the same questions asked again');
});

test('a person dismissing it is ASK_CANCELLED, coded as the harness codes it', async (t) => {
  const box = await inbox(t);
  const h = await harnessAsking(t, box.config);
  const call = h.call({ questions: [{ id: 'q', question: 'Deploy now?' }] });
  const waiting = await box.waitFor('waiting');
  await promisify(execFile)(COMMAND, ['inbox', 'dismiss', waiting.id], { env: box.env });
  const result = await call;
  assert.deepEqual(result.error.info, { name: 'UserQuestionError', code: 'ASK_CANCELLED' });
});

test('a command that is not there fails the ask, saying what to do', async (t) => {
  const h = await harness(t, 'reference');
  const fiber = h.app.plugin(provider, { command: '/nonexistent/ask-user' });
  await fiber;
  h.fibers.push(fiber);
  const result = await h.call({ questions: [{ id: 'q', question: 'Deploy now?' }] });
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /cannot run \/nonexistent\/ask-user: .*Install ask-user/);
});
