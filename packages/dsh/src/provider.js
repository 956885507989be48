/**
 * ask-user's answerers as the DeepSeek Harness's user-questions provider: a
 * cordis plugin that registers a `ctx.userQuestions` provider asking
 * through the user's ask-user chain (the config's answerers: the inbox, and
 * so its page and phone channels, a script, the terminal), by running
 * `ask-user ask --request` for each ask.
 *
 * The harness has one provider at a time (a second is `DUPLICATE_PROVIDER`):
 * load this one instead of its web provider, or in its headless profile,
 * which has none. The harness's seam has checked the caller and the
 * questions before a provider is asked; ask-user checks the answers again.
 * The turn's signal aborted stops the command, which withdraws the question
 * from wherever it waits (`ASK_ABORTED`).
 * @module ask-user-dsh/provider
 */

import { spawn } from 'node:child_process';
import { UserQuestionError } from '@deepseek-ai/dsh-user-questions';

export const name = 'ask-user-provider';
export const inject = ['userQuestions'];

/** The most of the command's output read (a batch's answers are far less). */
const MAX_OUTPUT_BYTES = 4 << 20;

/**
 * @typedef {object} Config
 * @property {string} [command] the `ask-user` command (default: `ask-user`
 *   on the PATH)
 * @property {string} [config] its config file (default: its own,
 *   `~/.config/ask-user/config.toml`)
 */

/**
 * Registers the provider.
 * @param {import('@deepseek-ai/cordis').Context} ctx
 * @param {Config} [config]
 */
export function apply(ctx, config = {}) {
  ctx.userQuestions.registerProvider({ ask: (request) => ask(request, config) });
}

/**
 * One ask, answered by the chain; its answers, or the seam's error.
 * @param {{questions: object[], agent?: {id: string, session?: {id: string}}, signal?: AbortSignal}} request
 * @param {Config} config
 */
export function ask({ questions, agent, signal }, { command = 'ask-user', config } = {}) {
  const args = ['ask', '--request', '-'];
  // The harness's session: the inbox groups its questions under it, and
  // the same session asking the same batch again finds its question.
  const session = agent?.session?.id ?? agent?.id;
  if (session !== undefined) args.push('--session', `dsh-${session}`);
  if (config !== undefined) args.push('--config', config);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = collect(child.stdout);
    const err = collect(child.stderr);
    // SIGTERM: the command withdraws the question and ends ASK_ABORTED.
    const stop = () => child.kill('SIGTERM');
    signal?.addEventListener('abort', stop, { once: true });
    child.on('error', (error) => {
      signal?.removeEventListener('abort', stop);
      reject(new Error(`cannot run ${command}: ${error.message}. Install ask-user, or set the `
        + 'provider\'s `command` to its path'));
    });
    child.on('close', (status) => {
      signal?.removeEventListener('abort', stop);
      try {
        resolve(answersOf(status, out(), err(), command));
      } catch (error) {
        reject(error);
      }
    });
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify({ questions }));
    if (signal?.aborted) stop();
  });
}

/** The command's result as answers, or the error it ended with. */
function answersOf(status, stdout, stderr, command) {
  let result;
  try {
    result = JSON.parse(stdout);
  } catch {
    throw new Error(`${command} ended with status ${status} and no result: ${stderr.trim()
      || 'it said nothing'}`);
  }
  if (!result.isError) return { answers: result.structuredContent.answers };
  const message = String(result.content?.[0]?.text ?? '').replace(/^Error: /, '');
  const { name, code } = result.error ?? {};
  if (name === 'UserQuestionError' && typeof code === 'string') {
    throw new UserQuestionError(message, code);
  }
  throw Object.assign(new Error(message), { name: name ?? 'Error' });
}

/** Reads `stream` to its end, at most MAX_OUTPUT_BYTES; the text read so far. */
function collect(stream) {
  const chunks = [];
  let size = 0;
  stream.on('data', (chunk) => {
    if (size >= MAX_OUTPUT_BYTES) return;
    chunks.push(chunk);
    size += chunk.length;
  });
  return () => Buffer.concat(chunks).toString('utf8');
}
