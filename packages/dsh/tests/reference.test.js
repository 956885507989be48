// The differential test: every case of the corpus (tests/corpus.json), run
// through the reference tool (@deepseek-ai/dsh-tool-ask-user, exact version)
// and through ask-user's component, each in the same real harness, as the
// agent loop calls a tool (ctx.tools.execute). ask-user must give the
// corpus's `expected`; the reference must give the same, or, where the case
// names a `reference` difference, what it says the reference gives, under a
// decision written in docs/src/decisions.md. RECORD=1 prints both outcomes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions';
import { agent, harness, REPO } from './support.js';

const CORPUS = JSON.parse(readFileSync(new URL('corpus.json', import.meta.url))).cases;
const DECISIONS = readFileSync(new URL('docs/src/decisions.md', REPO), 'utf8');

/** One case's call through `tool`: its outcome, and what the provider was asked. */
async function run(t, tool, c) {
  const h = await harness(t, tool);
  const turn = new AbortController();
  let asked = null;
  const { provider } = c;
  if (provider !== undefined) {
    h.app.userQuestions.registerProvider({
      async ask({ questions, signal }) {
        asked = questions;
        if (provider.answers) return { answers: provider.answers };
        if ('returns' in provider) return provider.returns;
        if (provider.rejects) throw provider.rejects;
        if (provider.throws) {
          const { name, message, code } = provider.throws;
          if (name === 'UserQuestionError') throw new UserQuestionError(message, code);
          throw Object.assign(new Error(message), { name });
        }
        // It waits until the turn is cancelled, and rejects with the
        // signal's reason (an AbortError).
        turn.abort();
        signal.throwIfAborted();
        throw new Error('the signal the provider was given did not abort with the turn');
      },
    });
  }
  if (c.cancelled) turn.abort();
  const caller = { root: h.root, helper: h.helper, stranger: agent('stranger'), none: null }[
    c.caller ?? 'root'];
  const result = await h.call(c.arguments, { caller, signal: turn.signal });
  return result.isError
    ? { isError: true, code: result.error.info?.code ?? null, asked }
    : { isError: false, text: result.content[0].text, asked };
}

/** `actual` has every field `expected` states. */
function fits(actual, expected) {
  for (const [key, value] of Object.entries(expected)) {
    assert.deepEqual(actual[key], value, `its ${key}`);
  }
}

for (const c of CORPUS) {
  test(`${c.rule}: ${c.name}`, async (t) => {
    const ours = await run(t, 'ask-user', c);
    const theirs = await run(t, 'reference', c);
    if (process.env.RECORD) console.log(JSON.stringify({ name: c.name, ours, theirs }));
    fits(ours, c.expected);
    if (c.reference === undefined) {
      assert.deepEqual(ours, theirs, 'ask-user and the reference differ where the corpus says '
        + 'they agree');
      return;
    }
    fits(theirs, c.reference.gives);
    assert.notDeepEqual(ours, theirs, 'a difference the reference no longer has');
    assert.ok(DECISIONS.includes(`**${c.reference.decision}**`),
      `docs/src/decisions.md decides no "${c.reference.decision}"`);
  });
}

test('the corpus covers every rule of the spec, every code, and every decision on the reference', () => {
  const rules = new Set(CORPUS.map((c) => c.rule));
  for (const rule of ['§1 arguments', '§1 result', '§2 order', '§2 errors', '§3 answers']) {
    assert.ok(rules.has(rule), `no case of ${rule}`);
  }
  const codes = new Set(CORPUS.map((c) => c.expected.code));
  for (const code of ['INVALID_ARGS', 'EMPTY_QUESTIONS', 'ASK_ABORTED', 'CALLER_NOT_LIVE',
    'DELEGATED_CALLER', 'NO_PROVIDER', 'ASK_CANCELLED', 'INVALID_ANSWER']) {
    assert.ok(codes.has(code), `no case ends with ${code}`);
  }
  const from = DECISIONS.indexOf('## The reference');
  const section = DECISIONS.slice(from, DECISIONS.indexOf('\n## ', from + 1));
  const decided = [...section.matchAll(/^- \*\*(.+?)\*\*/gm)].map((m) => m[1]);
  assert.ok(decided.length > 0, 'decisions.md has no section "The reference"');
  const shown = new Set(CORPUS.map((c) => c.reference?.decision));
  for (const decision of decided) assert.ok(shown.has(decision), `no case shows "${decision}"`);
});
