/**
 * ask-user in the DeepSeek Harness (DSH): a cordis plugin that registers the
 * sandboxed `ask_user_question` component as the harness's tool, in place of
 * `@deepseek-ai/dsh-tool-ask-user`.
 *
 * The component checks the model's arguments, asks, checks the answers and
 * renders the result; it asks through the harness's own seam,
 * `ctx.userQuestions.ask({questions, agent, signal})`, with the calling
 * agent and the call's signal, so the harness's policy decides who may ask
 * (a delegated child gets `DELEGATED_CALLER`) and its provider, whichever it
 * is, answers. Every failure reaches the harness coded: the seam's codes
 * come back as they went (`UserQuestionError`), the tool's own as a
 * `HarnessError` of its name (`INVALID_ARGS`, `INVALID_ANSWER`…).
 * @module ask-user-dsh
 */

import { HarnessError } from '@deepseek-ai/dsh-llm';
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions';
import { AskError, Host } from 'ask-user';
import { registrySchema } from './schema.js';

export const name = 'ask-user';
export const inject = ['tools', 'userQuestions'];

/**
 * @typedef {object} Config
 * @property {string} [component] a tool component to run instead of the one
 *   the `ask-user` package carries (`ask-user component --out FILE`)
 * @property {number} [computeLimit] seconds the component may work on one
 *   call, waits for the human not counted (default 10)
 */

/**
 * Registers the tool.
 * @param {import('@deepseek-ai/cordis').Context} ctx
 * @param {Config} [config]
 */
export async function apply(ctx, config = {}) {
  const host = await Host.load(config.component, { computeLimit: config.computeLimit });
  ctx.effect(() => () => host.close(), 'ask-user: the component\'s host');
  // The harness's agent behind each call's caller, for its seam.
  const agents = new WeakMap();
  host.answerer(async (request, { signal, caller }) => {
    const agent = agents.get(caller);
    const reply = await ctx.userQuestions.ask({
      questions: request.questions,
      ...(agent !== undefined ? { agent } : {}),
      signal,
    });
    // The harness has one provider, and it answered: nothing here is a
    // pass to a next answerer.
    if (reply?.answers == null) {
      throw new AskError('INVALID_ANSWER', 'the user-questions provider replied without '
        + 'answers; a provider resolves to {answers: [{id, selected, custom?}]}');
    }
    return reply.answers;
  });
  const definition = await host.definition();
  ctx.tools.register({
    name: definition.name,
    description: definition.description,
    parameters: registrySchema(definition.inputSchema),
    output: {
      schema: registrySchema(definition.outputSchema),
      // The component's own rendering: compact, keys in its order.
      render: (_args, value) => [{ type: 'text', text: JSON.stringify(value) }],
    },
    async execute(args, exec) {
      // The harness's seam decides who may ask; the host only carries the
      // call to it, as a root of its own for the call's length.
      const caller = host.agents.root(exec.agent?.id ?? exec.callId);
      if (exec.agent !== undefined) agents.set(caller, exec.agent);
      let result;
      try {
        result = await host.execute(JSON.stringify(args), { caller, signal: exec.signal });
      } finally {
        host.agents.end(caller);
      }
      if (!result.isError) return result.structuredContent;
      throw failure(result);
    },
  });
}

/** A failed call as the harness's registry reads one: coded where it has a code. */
function failure({ content, error: { name, code } }) {
  const message = content[0].text.replace(/^Error: /, '');
  if (code === undefined) return Object.assign(new Error(message), { name });
  if (name === 'UserQuestionError') return new UserQuestionError(message, code);
  const coded = new HarnessError(message, code);
  coded.name = name;
  return coded;
}
