// What the tests share: a harness of the real DSH packages (a cordis app with
// the system prompt, the agents, the user-questions seam and the tool
// registry, as the CLI composes them), with one of the two tools in it, and
// agents to call it as.
import { Context } from '@deepseek-ai/cordis';
import AgentRegistry from '@deepseek-ai/dsh-agent';
import SystemPrompt from '@deepseek-ai/dsh-system-prompt';
import ToolRuntime from '@deepseek-ai/dsh-tools';
import * as reference from '@deepseek-ai/dsh-tool-ask-user';
import UserQuestions from '@deepseek-ai/dsh-user-questions';
import * as askUser from '../src/index.js';

/** The component `ask-user component --out` wrote (scripts/test does). */
export const COMPONENT = process.env.ASK_USER_COMPONENT;
if (!COMPONENT) throw new Error('set ASK_USER_COMPONENT to a .wasm from `ask-user component --out FILE`');

/** The repository's root. */
export const REPO = new URL('../../../', import.meta.url);

/** The two tools: the reference's plugin, and ours on the component. */
export const TOOLS = {
  reference: [reference],
  'ask-user': [askUser, { component: COMPONENT }],
};

let calls = 0;

/**
 * The harness's services, as the CLI composes them, with no tool yet; its
 * plugins' fibers, unloaded when the test ends.
 */
export async function services(t) {
  const app = new Context();
  const fibers = [];
  t.after(async () => {
    for (const fiber of fibers.reverse()) await fiber.dispose();
  });
  for (const plugin of [SystemPrompt, AgentRegistry, UserQuestions, ToolRuntime]) {
    const fiber = app.plugin(plugin);
    await fiber;
    fibers.push(fiber);
  }
  return { app, fibers };
}

/**
 * A harness with `tool` (a key of TOOLS) registered as `ask_user_question`,
 * a live root agent `session-1`, and a child it owns, `helper`. Disposed
 * when the test ends.
 */
export async function harness(t, tool) {
  const { app, fibers } = await services(t);
  const fiber = app.plugin(...TOOLS[tool]);
  await fiber;
  fibers.push(fiber);
  // The turn of every call left waiting when the test ends is cancelled,
  // so nothing it started outlives the test.
  const turn = new AbortController();
  t.after(() => turn.abort());
  const root = agent('session-1');
  app.agents.register(root);
  const helper = agent('helper');
  app.agents.enter(helper, root);
  return {
    app,
    /** The plugins' fibers, the tool's last. */
    fibers,
    root,
    helper,
    /** One call as the agent loop makes it; its ToolExecutionResult. */
    call(args, { caller = root, signal = turn.signal } = {}) {
      calls += 1;
      return app.tools.execute({
        callId: `call-${calls}`,
        name: 'ask_user_question',
        arguments: args,
        signal,
        ...(caller ? { agent: caller } : {}),
      });
    },
  };
}

/** An agent as the registry keeps one (its id is its session's). */
export function agent(id) {
  return { id, session: { id } };
}
