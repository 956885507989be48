// An agent that speaks ACP (the Agent Client Protocol) to an editor, on the
// official library (@agentclientprotocol/sdk), with ask_user_question
// answered in the editor's own form. The model is left out: a prompt's
// text is the tool's arguments, and the tool's result is the reply.
//
// The form is the one `ask-user mcp` and the Rust host's `acp` answerer
// show (`ask-user form schema`), and its content is read back by the same
// code (`ask-user form answers`): the `ask-user` command (this package's
// bin, or ASK_USER_COMMAND) lays it out. An editor that did not declare
// form elicitation, or fails the form request, is passed over: the next
// answerer asks (the Rust host's `acp` answerer's rule); one that cancels
// it ends the ask ASK_CANCELLED.
//
//   node examples/acp-agent.mjs      (an editor starts it, on its stdio)
import { spawn } from 'node:child_process';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Readable, Writable } from 'node:stream';
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk';
import { AskError, Host } from 'ask-user';

const COMMAND = process.env.ASK_USER_COMMAND ?? 'ask-user';
// JSON-RPC's code for a request its receiver cancelled.
const REQUEST_CANCELLED = -32800;

/** What a form the user declined or cancelled ends with. */
function dismissed(how) {
  return new AskError('ASK_CANCELLED', `the user ${how} the form without answering. Do not ask the same again; continue with what you know or end your turn`);
}

/** `ask-user form <what>` on `input`: its JSON, and whether it succeeded. */
function form(what, input) {
  return new Promise((resolve, reject) => {
    const child = spawn(COMMAND, ['form', what], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => { out += chunk; });
    child.on('error', reject);
    child.on('close', (status) => {
      if (status > 1) reject(new Error(`ask-user form ${what} failed (${status})`));
      else resolve({ ok: status === 0, value: JSON.parse(out) });
    });
    child.stdin.end(JSON.stringify(input));
  });
}

const host = await Host.load();
// The session a call runs for, so that the answerer asks in its editor.
const current = new AsyncLocalStorage();
let editor = null; // what calls the editor's methods
let forms = false; // the editor declared form elicitation
const turns = new Map(); // session id → its turn's AbortController

host.answerer(async (request, { signal }) => {
  const sessionId = current.getStore();
  if (!forms || !editor || !sessionId) return null; // no forms: the next answerer
  const { value: shown } = await form('schema', request);
  let reply;
  try {
    reply = await editor.request(
      methods.client.elicitation.create,
      { mode: 'form', sessionId, message: shown.message, requestedSchema: shown.requestedSchema },
      // Withdrawn ($/cancel_request) when the answer is no longer wanted.
      { cancellationSignal: signal, stopWaitingOnCancel: true },
    );
  } catch (error) {
    if (signal.aborted) throw error;
    if (error?.code === REQUEST_CANCELLED) throw dismissed('cancelled');
    // No form after all: the next answerer asks.
    console.error(`the editor did not show the form (${error?.message ?? error}); passing the question on`);
    return null;
  }
  if (reply.action !== 'accept') throw dismissed(reply.action === 'decline' ? 'declined' : 'cancelled');
  const { ok, value } = await form('answers', { request, content: reply.content ?? {} });
  if (!ok) throw new AskError(value.error.code, value.error.message);
  return value.answers;
});

const app = agent({ name: 'ask-user-example' })
  .onRequest(methods.agent.initialize, ({ params }) => {
    forms = Boolean(params.clientCapabilities?.elicitation?.form);
    return { protocolVersion: PROTOCOL_VERSION, agentCapabilities: {} };
  })
  .onRequest(methods.agent.session.new, () => {
    const sessionId = `session-${turns.size + 1}`;
    host.agents.root(sessionId);
    turns.set(sessionId, new AbortController());
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    const turn = new AbortController();
    turns.set(sessionId, turn);
    const caller = host.agents.root(sessionId);
    const text = params.prompt.find((block) => block.type === 'text')?.text ?? '';
    const result = await current.run(sessionId, () =>
      host.execute(text, { caller, signal: turn.signal }));
    const said = JSON.stringify({ code: result.error?.code ?? null, text: result.content[0].text });
    await client.notify(methods.client.session.update, {
      sessionId,
      update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: said } },
    });
    return { stopReason: turn.signal.aborted ? 'cancelled' : 'end_turn' };
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    turns.get(params.sessionId)?.abort();
  })
  .onConnect((connection) => {
    editor = connection.client;
  });

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
app.connect(stream);
