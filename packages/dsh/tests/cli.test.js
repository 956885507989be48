// End to end in the DeepSeek Harness's own command, on Node 22: the plugins
// installed as the book says, by `dsh plugin --profile headless add` (the
// command's own, running pnpm) from the tarballs `npm pack` makes, the tool
// a layer of the profile by its bundle, the provider by the row the book
// gives for the profile's cordis.patch.yml; then its headless profile (the
// agent loop, its LLM adapter, its tools) booted as `dsh --profile headless
// TASK` boots it (launch.mjs says the one step left out, and why), with a
// model server of ours on 127.0.0.1 speaking the OpenAI-compatible API its
// adapter calls. The model calls ask_user_question; the question waits in a
// real inbox; a person answers there and the model gets the answer; Ctrl-C
// withdraws it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { COMMAND, inbox, packed, REPO, started } from './support.js';

const NODE22 = process.env.ASK_USER_TEST_NODE22;
if (!NODE22) throw new Error('set ASK_USER_TEST_NODE22 to a Node 22 (scripts/test does)');
const HARNESS = fileURLToPath(new URL('../harness/node_modules/', import.meta.url));
const DSH = join(HARNESS, '@deepseek-ai/dsh');
const LAUNCH = fileURLToPath(new URL('launch.mjs', import.meta.url));

/** The book's row for a profile's cordis.patch.yml (docs/src/embedding/dsh.md). */
function providerRow() {
  const page = readFileSync(new URL('docs/src/embedding/dsh.md', REPO), 'utf8');
  const block = /```yaml\n([\s\S]*?)```/.exec(page);
  assert.ok(block, "the book's page for the harness has no yaml block");
  return block[1];
}

/** How long a run may take, at most. */
const BOUND_MS = 120_000;

/** What the model asks: one choice. */
const ARGUMENTS = {
  questions: [{
    id: 'env', question: 'Deploy where?', header: 'Deploy',
    options: [{ label: 'Staging (Recommended)' }, { label: 'Production' }],
  }],
};

/** What the model says once it has the tool's result. */
const DONE = 'The answers are in.';

let tarballs;
let work;
before(() => {
  work = mkdtempSync(join(tmpdir(), 'ask-user-dsh-cli-'));
  tarballs = packed(work);
});
after(() => rmSync(work, { recursive: true, force: true }));

/**
 * A model server on 127.0.0.1 (chat completions, streamed): offered
 * ask_user_question, it calls it with ARGUMENTS; given its result, it
 * records it and says DONE. Anything else (a session's title) it answers
 * "ok".
 */
async function fakeModel(t) {
  const results = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => { body += chunk; });
    request.on('end', () => {
      const { model, messages = [], tools = [] } = JSON.parse(body || '{}');
      const chunk = (delta, finish = null) => response.write(`data: ${JSON.stringify({
        id: 'chunk', object: 'chat.completion.chunk', created: 0, model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })}\n\n`);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const result = messages.find((m) => m.role === 'tool');
      if (result) {
        results.push(result.content);
        chunk({ role: 'assistant', content: DONE });
        chunk({}, 'stop');
      } else if (tools.some((tool) => tool.function?.name === 'ask_user_question')) {
        chunk({
          role: 'assistant',
          tool_calls: [{
            index: 0, id: 'call_1', type: 'function',
            function: { name: 'ask_user_question', arguments: JSON.stringify(ARGUMENTS) },
          }],
        });
        chunk({}, 'tool_calls');
      } else {
        chunk({ role: 'assistant', content: 'ok' });
        chunk({}, 'stop');
      }
      response.end('data: [DONE]\n\n');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  return { port: server.address().port, results };
}

/**
 * `dsh --profile headless TASK` in a home of its own: the plugins installed
 * and loaded as the book says, a model of ours, ask-user on the PATH with
 * the answerers of `config` (the user's config file). The child, its output
 * so far, and its end.
 */
async function dsh(t, task, { port, config }) {
  const home = mkdtempSync(join(work, 'home-'));
  mkdirSync(join(home, 'config', 'ask-user'), { recursive: true });
  writeFileSync(join(home, 'config', 'ask-user', 'config.toml'), readFileSync(config));
  const env = {
    ...process.env,
    // ask-user and the pnpm `dsh plugin` runs.
    PATH: `${dirname(COMMAND)}:${join(HARNESS, '.bin')}:${process.env.PATH}`,
    XDG_CONFIG_HOME: join(home, 'config'),
    DSH_HOME: home,
    DSH_TELEMETRY_DISABLED: '1',
  };
  // The book's line, with this run's tarballs.
  const page = readFileSync(new URL('docs/src/embedding/dsh.md', REPO), 'utf8');
  assert.ok(page.includes('\ndsh plugin --profile headless add ./packages/js/ask-user-0.1.0.tgz '
    + './packages/dsh/ask-user-dsh-0.1.0.tgz\n'), "the book's dsh plugin line changed");
  const bin = join(realpathSync(DSH), 'lib', 'bin.js');
  const added = execFileSync(NODE22, [bin, 'plugin', '--profile', 'headless', 'add', ...tarballs],
    { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000 });
  assert.match(added, /ask-user-dsh/);
  const profile = join(home, 'profiles', 'headless');
  assert.deepEqual(JSON.parse(readFileSync(join(profile, 'package.json'))).dsh.profile.bundles,
    ['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-headless', 'ask-user-dsh'],
    'the tool did not become a layer of the profile');
  writeFileSync(join(profile, 'cordis.patch.yml'), providerRow());
  // The model: this test's overlay (a --patch file).
  const overlay = join(home, 'overlay.yml');
  writeFileSync(overlay, `
- id: llm-pi-ai
  config:
    providers:
      ours:
        displayName: A model of ours
        apiKeyEnv: TEST_MODEL_KEY
        api: openai-completions
        baseURL: http://127.0.0.1:${port}/v1
        compat:
          supportsDeveloperRole: false
          maxTokensField: max_tokens
        models:
          - id: test-model
            name: Test model
            contextWindow: 65536
            maxTokens: 4096
- id: agent-default-model
  config:
    provider: ours
    model: test-model
`);
  return started(t, NODE22, [LAUNCH, task], {
    cwd: home,
    env: { ...env, DSH_PACKAGE: DSH, DSH_OVERLAY: overlay, TEST_MODEL_KEY: 'test' },
  }, BOUND_MS);
}

test('the model asks in the harness, a person answers in the inbox, and the model gets it', async (t) => {
  const box = await inbox(t);
  const model = await fakeModel(t);
  const run = await dsh(t, 'Deploy the release', { port: model.port, config: box.config });
  const waiting = await box.waitFor('waiting');
  assert.match(waiting.session, /^dsh-/);
  assert.equal(waiting.questions[0].question, 'Deploy where?');
  await box.answer(waiting.id, [{ id: 'env', selected: ['Production'] }]);
  assert.equal(await run.ended, 0, run.said.err);
  assert.equal(run.said.out.trim(), DONE);
  assert.deepEqual(model.results, ['{"answers":[{"id":"env","selected":["Production"]}]}']);
});

test('Ctrl-C while the question waits leaves it in the inbox, its agent gone', async (t) => {
  const box = await inbox(t);
  const model = await fakeModel(t);
  const run = await dsh(t, 'Deploy the release', { port: model.port, config: box.config });
  const waiting = await box.waitFor('waiting');
  run.child.kill('SIGINT');
  assert.equal(await run.ended, 130, run.said.err);
  const left = await box.waitFor((q) => q.agentWaiting === false);
  assert.equal(left.id, waiting.id);
  assert.equal(left.state, 'waiting', 'kept for the same questions asked again');
  assert.deepEqual(model.results, [], 'the model got a result of a cancelled call');
});
