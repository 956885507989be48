// The shared table of tool calls: this host gives each case's result, as the
// Rust host (tests/tests/component/cases.rs) and the Python package do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AskError, DEFAULT_MAX_DELEGATED_ASKS, Host } from '../src/index.js';
import { component, TABLE } from './support.js';

for (const {
  name, arguments: args, reply: given, replyJson, caller, expected, policy = {}, asksBefore = 0,
  askedBy = [], cancelled = false,
} of TABLE) {
  const reply = replyJson === undefined ? given : JSON.parse(replyJson);
  test(name, async (t) => {
    const host = new Host(component, {
      delegated: policy.delegated ?? 'refuse',
      maxDelegatedAsks: policy.maxDelegatedAsks ?? DEFAULT_MAX_DELEGATED_ASKS,
    });
    t.after(() => host.close());
    const seen = [];
    host.answerer((request) => {
      seen.push(request.askedBy ?? []);
      if (reply.pass) return null;
      if (reply.error) throw new AskError(reply.error.code, reply.error.message);
      return reply.answers;
    });
    const root = host.agents.root('session-1');
    let agent = root;
    if (caller === 'delegate') agent = host.agents.delegate('helper', root);
    if (caller === 'ended') {
      agent = host.agents.root('gone');
      host.agents.end(agent);
    }
    if (caller === 'orphan') {
      const parent = host.agents.root('parent');
      agent = host.agents.delegate('orphan', parent);
      host.agents.end(parent);
    }
    for (let n = 0; n < asksBefore; n += 1) {
      assert.equal((await host.execute(JSON.stringify(args), { caller: agent })).isError, false);
    }
    const signal = cancelled ? AbortSignal.abort() : undefined;
    assert.deepEqual(await host.execute(JSON.stringify(args), { caller: agent, signal }), expected);
    for (const chain of seen) assert.deepEqual(chain, askedBy);
  });
}

test('the table covers every kind of outcome', () => {
  const codes = new Set(TABLE.map((c) => c.expected.error?.code));
  for (const code of [undefined, 'NO_PROVIDER', 'ASK_CANCELLED', 'DELEGATED_CALLER',
    'CALLER_NOT_LIVE', 'DELEGATED_ASK_LIMIT', 'EMPTY_QUESTIONS', 'INVALID_ARGS', 'INVALID_ANSWER']) {
    assert.ok(codes.has(code), `no case ends with ${code ?? 'success'}`);
  }
});
