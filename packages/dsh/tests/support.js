// What the tests share: a harness of the real DSH packages (a cordis app with
// the system prompt, the agents, the user-questions seam and the tool
// registry, as the CLI composes them), with one of the two tools in it, and
// agents to call it as.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
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

/** The ask-user command (scripts/test sets it to the one it built). */
export const COMMAND = process.env.ASK_USER_COMMAND;

/**
 * `command` started with `options` (`cwd`, `env`), ended when the test ends:
 * the child, what it said so far (`out`, `err`), and its exit code, which
 * rejects, saying what it said, if it has not ended within `boundMs`.
 */
export function started(t, command, args, options, boundMs) {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  const said = { out: '', err: '' };
  child.stdout.on('data', (chunk) => { said.out += chunk; });
  child.stderr.on('data', (chunk) => { said.err += chunk; });
  const ended = new Promise((resolve, reject) => {
    const bound = setTimeout(() => reject(new Error(`${command} did not end within ${boundMs} ms: `
      + `${said.err}`)), boundMs);
    child.on('exit', (code) => {
      clearTimeout(bound);
      resolve(code);
    });
  });
  return { child, said, ended };
}

/** `npm pack` of the JavaScript package and of this one, into `dir`: their tarballs. */
export function packed(dir) {
  return ['js', 'dsh'].map((name) => {
    const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
      cwd: fileURLToPath(new URL(`packages/${name}/`, REPO)), encoding: 'utf8', timeout: 300_000,
    });
    return join(dir, out.trim().split('\n').pop());
  });
}

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

/** How long a state this test waits for may take, at most. */
const BOUND_MS = 30_000;

/**
 * An inbox of its own (`ask-user inbox serve`), in a folder of its own,
 * stopped when the test ends; this process's environment names its state
 * folder, as any ask-user started from here finds it.
 */
export async function inbox(t) {
  if (!COMMAND) throw new Error('set ASK_USER_COMMAND to the ask-user command (scripts/test does)');
  const root = mkdtempSync(join(tmpdir(), 'ask-user-dsh-'));
  // The provider's command finds the inbox as any ask-user does: this
  // process's environment names its state folder (one inbox per test).
  process.env.ASK_USER_STATE_DIR = join(root, 'state');
  const env = { ...process.env };
  writeFileSync(join(root, 'inbox.toml'), '');
  writeFileSync(join(root, 'agent.toml'), '[[answerer]]\nkind = "inbox"\n');
  const server = spawn(COMMAND, ['inbox', 'serve', '--config', join(root, 'inbox.toml')],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => {
    server.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });
  const said = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the inbox did not start: ${said.join('\n')}`)),
      BOUND_MS);
    createInterface({ input: server.stderr }).on('line', (line) => {
      said.push(line);
      if (line.includes('the inbox serves')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const run = async (...args) => (await promisify(execFile)(COMMAND, args, { env })).stdout;
  return {
    root,
    env,
    config: join(root, 'agent.toml'),
    /** The questions the inbox holds (with `--all`, those that left too). */
    list: async (...flags) => JSON.parse(await run('inbox', 'list', '--json', ...flags)).questions,
    /** Waits for a question in the state `state` (or for which `state(q)` holds). */
    async waitFor(state, ...flags) {
      const holds = typeof state === 'function' ? state : (q) => q.state === state;
      const until = Date.now() + BOUND_MS;
      for (;;) {
        const found = (await this.list(...flags)).find(holds);
        if (found) return found;
        if (Date.now() > until) throw new Error(`no question became ${state} in the inbox`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    /** A person answers `id` from the command line. */
    answer: (id, answers) => {
      const file = join(root, `${id}.answers.json`);
      writeFileSync(file, JSON.stringify({ answers }));
      return run('inbox', 'answer', id, '--answers', file);
    },
  };
}

