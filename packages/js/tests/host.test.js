// What the package does beyond the table: the definition, the answerers'
// order and request, waiting for a human without blocking Node, calls at
// once, cancellation, time limits, answerer mistakes, a component that
// works too long, closing.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { AskError, Component, Host } from '../src/index.js';
import { component } from './support.js';

const ONE = JSON.stringify({
  questions: [{ id: 'q', question: 'Which?', options: [{ label: 'A' }, { label: 'B' }] }],
});

/** A host on the shared component, closed when the test ends. */
function hostFor(t, options) {
  const host = new Host(component, options);
  t.after(() => host.close());
  return host;
}

/** A promise and the function that settles it. */
function later() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

/** An answerer that never answers; `asked` when it is asked, `stopped` when told to stop. */
function neverAnswers(host) {
  const asked = later();
  const stopped = later();
  host.answerer((request, { signal }) => {
    signal.addEventListener('abort', stopped.resolve);
    asked.resolve();
    return new Promise(() => {});
  });
  return { asked: asked.promise, stopped: stopped.promise };
}

test('the definition is the tool\'s', async (t) => {
  const definition = await hostFor(t).definition();
  assert.equal(definition.name, 'ask_user_question');
  assert.equal(definition.inputSchema.type, 'object');
  assert.ok('questions' in definition.inputSchema.properties);
  assert.equal(definition.outputSchema.type, 'object');
});

test('answerers are tried in order and see the seam\'s request', async (t) => {
  const host = hostFor(t);
  const seen = [];
  host.answerer((request) => {
    seen.push(request);
    return null; // passes
  });
  host.answerer(() => [{ id: 'q', selected: ['A', 'B'] }]);
  const args = JSON.stringify({
    questions: [{
      id: 'q', question: 'Which?', header: 'Pick', multiSelect: true,
      options: [{ label: 'A', description: 'first', icon: 'rocket' }, { label: 'B' }],
    }],
  });
  const result = await host.execute(args, { caller: host.agents.root('s') });
  assert.deepEqual(result.structuredContent, { answers: [{ id: 'q', selected: ['A', 'B'] }] });
  assert.deepEqual(seen, [{
    questions: [{
      id: 'q', question: 'Which?', header: 'Pick', multiSelect: true,
      options: [{ label: 'A', description: 'first', icon: 'rocket' }, { label: 'B' }],
    }],
  }]);
});

test('calls wait for their humans at once, in any order', async (t) => {
  const host = hostFor(t);
  const waiting = new Map();
  const bothAsked = later();
  host.answerer(async (request) => {
    const answer = later();
    waiting.set(request.questions[0].question, answer.resolve);
    if (waiting.size === 2) bothAsked.resolve();
    return answer.promise;
  });
  const ask = (question) => host.execute(
    JSON.stringify({ questions: [{ id: 'q', question, options: [{ label: 'A' }, { label: 'B' }] }] }),
    { caller: host.agents.root(question) },
  );
  const first = ask('first?');
  const second = ask('second?');
  await bothAsked.promise;
  // Answered in the other order: neither call holds up the other.
  waiting.get('second?')([{ id: 'q', selected: ['B'] }]);
  assert.equal((await second).content[0].text, '{"answers":[{"id":"q","selected":["B"]}]}');
  waiting.get('first?')([{ id: 'q', selected: ['A'] }]);
  assert.equal((await first).content[0].text, '{"answers":[{"id":"q","selected":["A"]}]}');
});

test('a call past maxCalls is HOST_BUSY; a slot freed takes calls again', async (t) => {
  const host = hostFor(t, { maxCalls: 1 });
  const asked = later();
  const answer = later();
  host.answerer(() => {
    asked.resolve();
    return answer.promise;
  });
  const first = host.execute(ONE, { caller: host.agents.root('first') });
  await asked.promise;
  const busy = await host.execute(ONE, { caller: host.agents.root('second') });
  assert.deepEqual(busy.error, { name: 'ToolSandboxError', code: 'HOST_BUSY' });
  assert.match(busy.content[0].text, /at most 1 calls of the tool at once/);
  answer.resolve([{ id: 'q', selected: ['A'] }]);
  assert.equal((await first).isError, false);
  const again = await host.execute(ONE, { caller: host.agents.root('third') });
  assert.equal(again.isError, false);
});

test('aborting the call is ASK_ABORTED, and the answerer is told to stop', async (t) => {
  const host = hostFor(t);
  const { asked, stopped } = neverAnswers(host);
  const abort = new AbortController();
  const call = host.execute(ONE, { caller: host.agents.root('s'), signal: abort.signal });
  await asked;
  abort.abort();
  const result = await call;
  assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'ASK_ABORTED' });
  await stopped;
});

test('a question still waiting is withdrawn when its agent, or one above it, ends', async (t) => {
  // A relayed sub-agent's question, its root ending while it waits (as the
  // Rust host does): the answerer is told to stop, the call ends CALLER_NOT_LIVE.
  const host = hostFor(t, { delegated: 'relay' });
  const { asked, stopped } = neverAnswers(host);
  const root = host.agents.root('session-1');
  const reviewer = host.agents.delegate('reviewer', root);
  const call = host.execute(ONE, { caller: reviewer });
  await asked;
  host.agents.end(root);
  const result = await call;
  assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'CALLER_NOT_LIVE' });
  assert.match(result.content[0].text, /while its question waited/);
  await stopped;
});

test('a call aborted before it asks never reaches an answerer', async (t) => {
  const host = hostFor(t);
  let asked = 0;
  host.answerer(() => {
    asked += 1;
    return [{ id: 'q', selected: ['A'] }];
  });
  const root = host.agents.root('s');
  const result = await host.execute(ONE, { caller: root, signal: AbortSignal.abort() });
  assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'ASK_ABORTED' });
  // The seam's order: a cancelled turn before the caller's identity.
  const helper = host.agents.delegate('helper', root);
  const delegated = await host.execute(ONE, { caller: helper, signal: AbortSignal.abort() });
  assert.deepEqual(delegated.error, { name: 'UserQuestionError', code: 'ASK_ABORTED' });
  assert.equal(asked, 0);
});

test('a time limit is ASK_TIMED_OUT', async (t) => {
  const host = hostFor(t);
  host.answerer(() => new Promise(() => {}));
  const result = await host.execute(ONE, { caller: host.agents.root('s'), timeout: 0.2 });
  assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'ASK_TIMED_OUT' });
  assert.match(result.content[0].text, /limit of 0\.2s/);
});

test('an answerer\'s own failure is passed through uncoded; a code of its own verbatim', async (t) => {
  const host = hostFor(t);
  host.answerer(() => {
    throw new TypeError('the UI went away');
  });
  assert.deepEqual(await host.execute(ONE, { caller: host.agents.root('s') }), {
    content: [{ type: 'text', text: 'Error: the UI went away' }],
    isError: true,
    error: { name: 'TypeError' },
  });
  const other = hostFor(t);
  other.answerer(async () => {
    throw new AskError('RATE_LIMITED', 'too many questions this hour');
  });
  const result = await other.execute(ONE, { caller: other.agents.root('s') });
  assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'RATE_LIMITED' });
});

test('a UserQuestionError that is a plain object, or another library\'s, keeps its code and message', async (t) => {
  // As a bridge or a DSH provider throws it (SPEC §2, step 6).
  for (const thrown of [
    { name: 'UserQuestionError', message: 'the person closed the form', code: 'ASK_CANCELLED' },
    Object.assign(new Error('the person closed the form'), {
      name: 'UserQuestionError', code: 'ASK_CANCELLED',
    }),
  ]) {
    const host = hostFor(t);
    host.answerer(() => Promise.reject(thrown));
    assert.deepEqual(await host.execute(ONE, { caller: host.agents.root('s') }), {
      content: [{ type: 'text', text: 'Error: the person closed the form' }],
      isError: true,
      error: { name: 'UserQuestionError', code: 'ASK_CANCELLED' },
    });
  }
  const host = hostFor(t);
  host.answerer(() => Promise.reject({ message: 'the bridge hung up', code: 'EPIPE' }));
  assert.deepEqual(await host.execute(ONE, { caller: host.agents.root('s') }), {
    content: [{ type: 'text', text: 'Error: the bridge hung up' }],
    isError: true,
    error: { name: 'Error' },
  });
});

test('an answerer failing on the turn\'s cancellation is ASK_ABORTED, whatever it threw', async (t) => {
  const host = hostFor(t);
  const turn = new AbortController();
  let asked;
  const reached = new Promise((resolve) => { asked = resolve; });
  // An answerer that listens to the turn's own signal and rejects with its
  // reason (a DOMException named AbortError).
  host.answerer(() => new Promise((_, reject) => {
    turn.signal.addEventListener('abort', () => reject(turn.signal.reason), { once: true });
    asked();
  }));
  const call = host.execute(ONE, { caller: host.agents.root('s'), signal: turn.signal });
  await reached;
  turn.abort();
  assert.deepEqual((await call).error, { name: 'UserQuestionError', code: 'ASK_ABORTED' });
});

test('answers of the wrong shape are INVALID_ANSWER, saying what was wrong', async (t) => {
  for (const [reply, says] of [
    [{ q: 'A' }, /object, not a list/],
    [[{ id: 'q', selected: 'A' }], /"q" whose selected is not a list of strings/],
    [[{ selected: ['A'] }], /without a string id at 0/],
    [[{ id: 'q', selected: [], custom: 7 }], /"q" whose custom is not a string/],
  ]) {
    const host = hostFor(t);
    host.answerer(() => reply);
    const result = await host.execute(ONE, { caller: host.agents.root('s') });
    assert.deepEqual(result.error, { name: 'UserQuestionError', code: 'INVALID_ANSWER' });
    assert.match(result.content[0].text, says);
  }
});

test('a component working past the limit is stopped; the call fails, nothing hangs', async (t) => {
  // A new worker's start counts towards the limit and takes far more than 1 ms.
  const host = hostFor(t, { computeLimit: 0.001 });
  host.answerer(() => [{ id: 'q', selected: ['A'] }]);
  const result = await host.execute(ONE, { caller: host.agents.root('s') });
  assert.equal(result.error.name, 'GuestTrapError');
  assert.match(result.content[0].text, /past the host's limit of 0\.001s and was stopped/);
});

test('closing the host ends a waiting call and tells its answerer to stop', async (t) => {
  const host = hostFor(t);
  const { asked, stopped } = neverAnswers(host);
  const call = host.execute(ONE, { caller: host.agents.root('s') });
  await asked;
  host.close();
  const result = await call;
  assert.equal(result.error.name, 'GuestTrapError');
  assert.match(result.content[0].text, /the host was closed/);
  await stopped;
  await assert.rejects(host.execute(ONE, { caller: host.agents.root('s') }), /the host was closed/);
});

test('a host\'s idle workers never keep the process alive', async () => {
  // A program that forgets close() still ends when its work is done.
  const program = `
    import { Host } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const host = await Host.load(${JSON.stringify(process.env.ASK_USER_COMPONENT)});
    host.answerer(() => [{ id: 'q', selected: ['B'] }]);
    const result = await host.execute(${JSON.stringify(ONE)}, { caller: host.agents.root('s') });
    console.log(result.content[0].text);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', program], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  const bound = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code, signal] = await once(child, 'exit');
  clearTimeout(bound);
  assert.equal(signal, null, 'the program did not end by itself within 60 s');
  assert.equal(code, 0);
  assert.equal(out.trim(), '{"answers":[{"id":"q","selected":["B"]}]}');
});

test('a caller is required', async (t) => {
  await assert.rejects(hostFor(t).execute(ONE, {}), /needs the calling Agent/);
});

test('under a relay a sub-agent asks, saying who, one batch at a time, within a budget per turn', async (t) => {
  const host = hostFor(t, { delegated: 'relay', maxDelegatedAsks: 2 });
  const seen = [];
  let active = 0;
  let most = 0;
  host.answerer(async (request) => {
    active += 1;
    most = Math.max(most, active);
    seen.push(request.askedBy ?? []);
    await new Promise((resolve) => { setTimeout(resolve, 20); });
    active -= 1;
    return [{ id: 'q', selected: ['A'] }];
  });
  const root = host.agents.root('session-1');
  const planner = host.agents.delegate('planner', root);
  const researcher = host.agents.delegate('researcher', planner);
  const results = await Promise.all([
    host.execute(ONE, { caller: researcher }),
    host.execute(ONE, { caller: planner }),
    host.execute(ONE, { caller: root }),
  ]);
  assert.deepEqual(results.map((r) => r.isError), [false, false, false]);
  assert.equal(most, 1, 'one batch at a time');
  assert.deepEqual(seen.map((chain) => chain.join(' › ')).sort(),
    ['', 'session-1 › planner', 'session-1 › planner › researcher']);
  const refused = await host.execute(ONE, { caller: planner });
  assert.equal(refused.error.code, 'DELEGATED_ASK_LIMIT');
  assert.match(refused.content[0].text, /at most twice per turn/);
  host.agents.startTurn(root);
  assert.equal((await host.execute(ONE, { caller: planner })).isError, false);
  assert.throws(() => new Host(component, { delegated: 'allow' }), /'refuse' or 'relay'/);
});

/** This process's threads (Linux). */
function threads() {
  return Number(readFileSync('/proc/self/status', 'utf8').match(/^Threads:\s+(\d+)/m)[1]);
}

test('calls waiting for the human hold no worker and no thread', async (t) => {
  const host = hostFor(t);
  const calls = 200;
  const allAsked = later();
  const answer = later();
  let asked = 0;
  host.answerer(async () => {
    asked += 1;
    if (asked === calls) allAsked.resolve();
    return answer.promise;
  });
  await host.definition(); // the first worker started
  const before = threads();
  const waiting = Array.from({ length: calls }, (_, i) => host.execute(ONE,
    { caller: host.agents.root(`s${i}`) }));
  await allAsked.promise;
  const during = threads();
  assert.ok(during - before <= 4, `${during - before} more threads for ${calls} waiting calls`);
  answer.resolve([{ id: 'q', selected: ['B'] }]);
  for (const result of await Promise.all(waiting)) {
    assert.deepEqual(result.structuredContent, { answers: [{ id: 'q', selected: ['B'] }] });
  }
});

test('a component that asks something else when run again is stopped', async (t) => {
  // A transpiled component of our own making (jco's shape) that asks a new
  // question each time it runs.
  const module = `export function instantiate(_core, imports) {
    const { ask } = imports['dsh:ask-user/user-questions@0.1.0'];
    return { 'dsh:ask-user/tool@0.1.0': { execute() {
      const reply = ask({ questions: [{ id: 'q', question: String(Math.random()) }] });
      return { answers: reply.val, text: 'asked' };
    } } };
  }`;
  const url = `data:text/javascript;base64,${Buffer.from(module).toString('base64')}`;
  const host = new Host(new Component(url, {}));
  t.after(() => host.close());
  let asked = 0;
  host.answerer(async () => {
    asked += 1;
    return [{ id: 'q', selected: [] }];
  });
  const result = await host.execute('{}', { caller: host.agents.root('s') });
  assert.deepEqual(result.error, { name: 'ToolSandboxError', code: 'GUEST_CONTRACT_VIOLATION' });
  assert.match(result.content[0].text, /asked something else when run again \(ask 1 of the call\)/);
  assert.equal(asked, 1);
});
