// An editor's side of ACP, on the official client library
// (@agentclientprotocol/sdk), for the ACP answerer's tests: it speaks to
// the agent over its own standard input and output (the Rust test is the
// agent), or starts the agent as an editor does (ACP_AGENT, a JSON array:
// the program and its arguments), sends one prompt, and answers the
// agent's `elicitation/create` as told:
//
//   node acp-client.mjs REPORT MODE PROMPT [CONTENT]
//
// MODE: `accept` (with CONTENT, a JSON object), `decline`, `cancel` (the
// user stops the turn while the form is open: `session/cancel`, then the
// form waits until the agent withdraws it), `fail` (the editor fails the
// form request: a JSON-RPC error), or `no-forms` (the client does not
// declare elicitation). What it saw goes to REPORT as JSON: the forms
// asked, the agent's message, the prompt's stop reason, whether a form was
// withdrawn (`cancel_request`, or why else its wait ended).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const [report, mode, prompt, content] = process.argv.slice(2);
const seen = { forms: [], message: "", stopReason: null, withdrawn: null };

const app = client({ name: "ask-user-tests" })
  .onRequest(methods.client.elicitation.create, async ({ params, signal, agent }) => {
    seen.forms.push(params);
    if (mode === "decline") return { action: "decline" };
    if (mode === "fail") throw new Error("this editor cannot show the form");
    if (mode === "cancel") {
      const withdrawn = new Promise((resolve) =>
        signal.addEventListener("abort", () => resolve(signal.reason)));
      await agent.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
      // By the agent ($/cancel_request, -32800), or only as the
      // connection closed after the turn.
      const reason = await withdrawn;
      seen.withdrawn = reason?.code === -32800 ? "cancel_request" : String(reason?.message ?? reason);
      return { action: "cancel" };
    }
    return { action: "accept", content: JSON.parse(content) };
  })
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      seen.message += update.content.text;
    }
  });

let agentProcess = null;
let [output, input] = [process.stdout, process.stdin];
if (process.env.ACP_AGENT) {
  const [program, ...args] = JSON.parse(process.env.ACP_AGENT);
  agentProcess = spawn(program, args, { stdio: ["pipe", "pipe", "inherit"] });
  [output, input] = [agentProcess.stdin, agentProcess.stdout];
}
const stream = ndJsonStream(Writable.toWeb(output), Readable.toWeb(input));
await app.connectWith(stream, async (agent) => {
  await agent.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: mode === "no-forms" ? {} : { elicitation: { form: {} } },
  });
  const { sessionId } = await agent.request(methods.agent.session.new, {
    cwd: process.cwd(),
    mcpServers: [],
  });
  const done = await agent.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text: prompt }],
  });
  seen.stopReason = done.stopReason;
});
writeFileSync(report, JSON.stringify(seen));
agentProcess?.kill();
process.exit(0);
