// The shared table of tool calls: this host gives each case's result, as the
// Rust host (tests/tests/component/cases.rs) and the Python package do.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AskError, Host } from '../src/index.js';
import { component, TABLE } from './support.js';

for (const { name, arguments: args, reply, caller, expected } of TABLE) {
  test(name, async (t) => {
    const host = new Host(component);
    t.after(() => host.close());
    host.answerer(() => {
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
    assert.deepEqual(await host.execute(JSON.stringify(args), { caller: agent }), expected);
  });
}

test('the table covers every kind of outcome', () => {
  const codes = new Set(TABLE.map((c) => c.expected.error?.code));
  for (const code of [undefined, 'NO_PROVIDER', 'ASK_CANCELLED', 'DELEGATED_CALLER',
    'CALLER_NOT_LIVE', 'EMPTY_QUESTIONS', 'INVALID_ARGS', 'INVALID_ANSWER']) {
    assert.ok(codes.has(code), `no case ends with ${code ?? 'success'}`);
  }
});
