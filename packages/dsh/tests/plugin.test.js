// ask-user's tool plugin in the real harness: registered in place of the
// reference, its schema one the registry and Code Mode take, the call's
// agent and signal carried to the harness's seam, and gone when unloaded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertSupportedJsonSchema, jsonSchemaToTs } from '@deepseek-ai/dsh-tools';
import * as reference from '@deepseek-ai/dsh-tool-ask-user';
import { harness, services, TOOLS } from './support.js';

const ONE = { questions: [{ id: 'q', question: 'Which?', options: [{ label: 'A' }, { label: 'B' }] }] };

test('the tool is registered with a schema the registry and Code Mode take', async (t) => {
  const h = await harness(t, 'ask-user');
  const [schema] = h.app.tools.schemas().filter((s) => s.name === 'ask_user_question');
  assert.ok(schema, 'no ask_user_question in the registry');
  assert.match(schema.description, /Pause and ask the user/);
  assertSupportedJsonSchema(schema.parameters);
  // Code Mode's SDK types the arguments (not `unknown`, as it would a
  // schema of references).
  const types = jsonSchemaToTs(schema.parameters);
  for (const field of ['questions:', 'id: string;', 'label: string;', 'multi_select?: boolean;']) {
    assert.ok(types.includes(field), `Code Mode's type has no ${field}: ${types}`);
  }
});

test('it takes the place of the reference: the two cannot both be registered', async (t) => {
  const h = await harness(t, 'ask-user');
  const fiber = h.app.plugin(reference);
  t.after(() => fiber.dispose());
  // The registry refuses the second one; the first stays, and answers.
  await assert.rejects(async () => { await fiber; }, /"ask_user_question" is already registered/);
  h.app.userQuestions.registerProvider({
    ask: async () => ({ answers: [{ id: 'q', selected: ['A'] }] }),
  });
  const result = await h.call(ONE);
  assert.equal(result.isError, false);
  assert.match(result.content[0].text, /^\{"answers":\[\{"id":"q","selected":\["A"\]\}\]\}$/);
});

test('the call\'s agent and signal reach the harness\'s seam, and cancelling the turn is ASK_ABORTED', async (t) => {
  const h = await harness(t, 'ask-user');
  let seen;
  let asked;
  const reached = new Promise((resolve) => { asked = resolve; });
  h.app.userQuestions.registerProvider({
    ask: (request) => {
      seen = request;
      asked();
      return new Promise(() => {});
    },
  });
  const turn = new AbortController();
  const call = h.call(ONE, { signal: turn.signal });
  await reached;
  assert.equal(seen.agent, h.root, 'the provider saw another agent');
  assert.equal(seen.signal.aborted, false);
  turn.abort();
  const result = await call;
  assert.equal(result.error.info.code, 'ASK_ABORTED');
  assert.equal(seen.signal.aborted, true, 'the provider\'s signal did not abort');
});

test('a component that cannot be loaded fails the plugin, saying which', async (t) => {
  const { app } = await services(t);
  const [askUser] = TOOLS['ask-user'];
  const fiber = app.plugin(askUser, { component: '/nonexistent/tool.wasm' });
  await assert.rejects(async () => { await fiber; }, /nonexistent\/tool\.wasm/);
});

test('unloaded, the tool is gone from the registry', async (t) => {
  const h = await harness(t, 'ask-user');
  const names = () => h.app.tools.schemas().map((s) => s.name);
  assert.ok(names().includes('ask_user_question'));
  await h.fibers.at(-1).dispose();
  assert.ok(!names().includes('ask_user_question'), 'the tool stayed after its plugin was unloaded');
});
