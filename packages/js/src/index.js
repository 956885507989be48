/**
 * The ask_user_question tool component in a JavaScript agent host (Node).
 *
 * Load the component once, hand its definition to your model, and run each
 * of the model's tool calls with `execute`: the component checks the
 * arguments, asks through the seam, checks the answers and renders the
 * result. This package supplies the seam: your answerers (plain or async
 * functions, tried in order), the caller's identity (only a live root agent
 * may ask the human; a delegated sub-agent gets `DELEGATED_CALLER`, unless
 * the host relays sub-agents' asks: `{delegated: 'relay'}`),
 * cancellation (`ASK_ABORTED`) and an opt-in time limit (`ASK_TIMED_OUT`).
 * Results are MCP `CallToolResult` objects, the same as the Rust host's.
 *
 * A call that waits for the human holds no instance, no worker and no
 * thread: the component's `ask` import is synchronous, so a run of the
 * component ends at a new ask, this thread awaits the answerers, and the
 * call runs again from the start with the reply (the tool is
 * deterministic). Runs are microseconds, on a few worker threads, so a
 * component that works too long is stopped without stopping this thread.
 * @module ask-user
 */

import { Buffer } from 'node:buffer';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Floors } from './floors.js';
import { transpile } from './transpile.js';

/** The seam's error codes; the WIT variant spells them in kebab case. */
const CODES = [
  'ASK_ABORTED', 'ASK_CANCELLED', 'ASK_TIMED_OUT', 'EMPTY_QUESTIONS', 'CALLER_NOT_LIVE',
  'DELEGATED_CALLER', 'BAD_INTENT', 'NO_PROVIDER', 'INVALID_ANSWER',
];

/** Sub-agent asks a relay allows per root per turn unless the host says otherwise. */
export const DEFAULT_MAX_DELEGATED_ASKS = 3;

/** Worker threads a host runs the component on, at most (runs are short). */
const LANES = Math.min(4, availableParallelism());

const ABORTED = 'the turn was cancelled, so the question was not asked or was withdrawn; '
  + 'do not ask again in this turn';
const NO_PROVIDER = 'no answerer took the question: nobody is there to answer it right now. '
  + 'Continue without the answer, or end your turn with the question';
const timedOut = (seconds) => `no answer within the host's limit of ${seconds}s; the question `
  + 'was withdrawn. Continue without the answer, or ask again later';

/**
 * An ask that failed: throw it from an answerer to end the ask with `code`
 * (`ASK_CANCELLED` when the human dismissed the questions, say).
 */
export class AskError extends Error {
  /**
   * @param {string | null} code a seam code such as `ASK_CANCELLED`, or null
   * @param {string} message what happened and what to do next
   * @param {string} [name]
   */
  constructor(code, message, name = 'UserQuestionError') {
    super(message);
    this.code = code;
    this.name = name;
  }
}

/** An agent of the host: a root (a session, a turn) or a sub-agent it delegated to. */
export class Agent {
  /** A root's: the asks its sub-agents were relayed this turn. */
  delegatedAsks = 0;

  /** @param {string} id @param {Agent | null} owner */
  constructor(id, owner = null) {
    this.id = id;
    this.owner = owner;
    this.live = true;
  }

  /** The root above it (itself, for a root). */
  get root() {
    let agent = this;
    while (agent.owner) agent = agent.owner;
    return agent;
  }
}

const times = (n) => ({ 1: 'once', 2: 'twice' })[n] ?? `${n} times`;

/** Each agent's ending, aborted when it ends. */
const endings = new WeakMap();

function ending(agent) {
  let controller = endings.get(agent);
  if (!controller) {
    controller = new AbortController();
    endings.set(agent, controller);
  }
  return controller;
}

/** Aborted once `agent` or an agent above it ends. */
function lineageEnded(agent) {
  const signals = [];
  for (let a = agent; a; a = a.owner) signals.push(ending(a).signal);
  return AbortSignal.any(signals);
}

const endedWhileWaiting = (agent) => `agent ${JSON.stringify(agent.id)} ended, or an agent above `
  + 'it did, while its question waited; the question was withdrawn. Only a running agent can ask '
  + 'the user';

/**
 * The live agents. A live agent that no agent owns may ask; a sub-agent only
 * when the host relays it and every agent above it is live.
 */
export class Agents {
  /** A root agent: it may ask while it is live. */
  root(id) {
    return new Agent(id);
  }

  /** A sub-agent of `owner`: it may not ask while its owner is live. */
  delegate(id, owner) {
    return new Agent(id, owner);
  }

  /**
   * Ends `agent`: it may no longer ask, and a question of its, or of a
   * sub-agent under it, still waiting is withdrawn (`CALLER_NOT_LIVE`).
   */
  end(agent) {
    agent.live = false;
    ending(agent).abort();
  }

  /** A new turn of `root`: its sub-agents may be relayed `maxDelegatedAsks` asks again. */
  startTurn(root) {
    root.delegatedAsks = 0;
  }

  /**
   * Throws the seam's error when `agent` may not ask the human; else returns,
   * for a relayed sub-agent, its chain of ids (root first), and for a root, [].
   * @param {Agent} agent
   * @param {'refuse' | 'relay'} [delegated]
   * @param {number} [maxAsks]
   */
  check(agent, delegated = 'refuse', maxAsks = DEFAULT_MAX_DELEGATED_ASKS) {
    if (!(agent instanceof Agent) || !agent.live) {
      const id = JSON.stringify(agent?.id ?? null);
      throw new AskError('CALLER_NOT_LIVE', `agent ${id} is not live (it ended, or its id now `
        + 'belongs to a newer agent); only a running agent can ask the user');
    }
    if (!agent.owner) return [];
    const chain = [agent.id];
    for (let ancestor = agent.owner; ancestor; ancestor = ancestor.owner) {
      if (!ancestor.live) {
        throw new AskError('CALLER_NOT_LIVE', `agent ${JSON.stringify(agent.id)} is a sub-agent `
          + `whose parent ${JSON.stringify(ancestor.id)} has ended, so it is not live; a `
          + 'sub-agent can ask only while every agent above it runs. Put the question into your '
          + 'final result instead');
      }
      chain.push(ancestor.id);
    }
    if (delegated !== 'relay') {
      throw new AskError('DELEGATED_CALLER', `agent ${JSON.stringify(agent.id)} is a sub-agent `
        + `delegated by ${JSON.stringify(agent.owner.id)} and cannot ask the user directly. `
        + 'Finish your task without the answer: put the unresolved question or decision, with '
        + 'the options you see, into your final result for your parent agent, which can ask '
        + 'the user');
    }
    const { root } = agent;
    if (root.delegatedAsks >= maxAsks) {
      throw new AskError('DELEGATED_ASK_LIMIT', `the sub-agents of ${JSON.stringify(root.id)} `
        + `may ask the user at most ${times(maxAsks)} per turn, and already have: do not ask `
        + 'again. Finish your task without the answer: put the unresolved question, with the '
        + 'options you see, into your final result for your parent agent');
    }
    root.delegatedAsks += 1;
    return chain.reverse();
  }
}

/**
 * The component, transpiled by jco and compiled once; any number of hosts
 * may share it.
 */
export class Component {
  /**
   * @param {string} url jco's JavaScript module, as a data: URL (it imports
   *   nothing, so it needs no file)
   * @param {Record<string, WebAssembly.Module>} modules its core modules
   */
  constructor(url, modules) {
    this.url = url;
    this.modules = modules;
  }

  /**
   * Transpiles (with jco, an optional dependency) and compiles a component
   * (`ask-user component --out FILE` writes one); without one, the
   * component this package carries, transpiled when it was packed (no jco
   * needed). Rejects bytes that are not a component.
   * @param {string | Uint8Array} [file] a path, or the component's bytes
   */
  static async load(file) {
    const files = file === undefined ? await carried() : await transpile(
      typeof file === 'string' ? await readFile(file) : file,
    );
    const modules = {};
    for (const [name, data] of Object.entries(files)) {
      if (name.endsWith('.wasm')) modules[name] = await WebAssembly.compile(data);
    }
    const url = `data:text/javascript;base64,${Buffer.from(files['tool.js']).toString('base64')}`;
    return new Component(url, modules);
  }
}

/**
 * jco's output of the component this package carries: transpiled when it
 * was packed (`npm pack` does it), or, in the repository it comes from, the
 * runtime crate's copy transpiled now.
 */
async function carried() {
  const packed = new URL('../transpiled/', import.meta.url);
  if (existsSync(new URL('tool.js', packed))) {
    const files = {};
    for (const name of await readdir(packed)) files[name] = await readFile(new URL(name, packed));
    return files;
  }
  const checkout = new URL('../../../host/runtime/component/ask_user_tool.wasm', import.meta.url);
  if (existsSync(checkout)) return transpile(await readFile(checkout));
  throw new Error('this package carries no component: pass Host.load a path to one');
}

/** The component, loaded once, and the seam it asks through. */
export class Host {
  #component;
  #answerers = [];
  /** Every lane alive; those free; runs waiting for one. */
  #lanes = new Set();
  #idle = [];
  #queue = [];
  #computeLimit;
  #maxCalls;
  #delegated;
  #maxDelegatedAsks;
  #floors = new Floors();
  #calls = 0;
  #closing = new AbortController();

  /**
   * @param {Component} component
   * @param {{ computeLimit?: number, maxCalls?: number, delegated?: 'refuse' | 'relay',
   *   maxDelegatedAsks?: number }} [options]
   *   `computeLimit`: seconds the component may work on one call (default
   *   10), waits for answers not counted, a new worker's start (tens of
   *   milliseconds) counted; past it the worker is stopped and the call
   *   fails. wasm in Node has no fuel, so this is what keeps a component
   *   from hanging a call. `maxCalls`: calls under way at once (default
   *   10,000); a waiting call holds its arguments, its request and the
   *   answerers' promises, nothing more; one more gets `HOST_BUSY`.
   *   `delegated`: what a sub-agent's ask gets: `'refuse'`
   *   (`DELEGATED_CALLER`, the default) or `'relay'` (asked, the answerers'
   *   request saying who asks in `askedBy`; at most `maxDelegatedAsks`
   *   (default 3) per root per turn, `DELEGATED_ASK_LIMIT` past it; a root's
   *   and its sub-agents' asks reach the answerers one at a time, the
   *   root's first).
   */
  constructor(component, {
    computeLimit = 10, maxCalls = 10_000, delegated = 'refuse',
    maxDelegatedAsks = DEFAULT_MAX_DELEGATED_ASKS,
  } = {}) {
    if (delegated !== 'refuse' && delegated !== 'relay') {
      throw new TypeError(`delegated is 'refuse' or 'relay', not ${JSON.stringify(delegated)}`);
    }
    this.#delegated = delegated;
    this.#maxDelegatedAsks = maxDelegatedAsks;
    this.#component = component;
    this.#computeLimit = computeLimit;
    this.#maxCalls = maxCalls;
    /** The agents that may ask. */
    this.agents = new Agents();
  }

  /** `Host` on a component file; without one, the component this package carries. */
  static async load(file, options) {
    return new Host(await Component.load(file), options);
  }

  /**
   * Adds an answerer at the end of the chain. It gets the request
   * (`{questions: [...]}`, the seam's spelling: `multiSelect`; when the host
   * relays a sub-agent's ask, also `askedBy`: its chain of agent ids, root
   * first) and
   * `{signal, caller}`: `signal` aborted when its answer is no longer
   * wanted, `caller` the `Agent` whose call asks; it returns
   * (or resolves to) the answers `[{id, selected, custom?}]`, or null to
   * pass the request on, or throws an `AskError`.
   */
  answerer(answerer) {
    this.#answerers.push(answerer);
    return answerer;
  }

  /** The tool definition for the model: name, description, inputSchema, outputSchema. */
  async definition() {
    const outcome = await this.#call('definition', null, () => {
      throw new Error('definition() asked the human');
    });
    if (outcome.busy) throw new Error(`the host is busy: ${this.#maxCalls} calls at once`);
    if (!outcome.done) throw new Error(`the tool component failed: ${outcome.trap}`);
    const { name, description, inputSchema, outputSchema } = outcome.done;
    return {
      name,
      description,
      inputSchema: JSON.parse(inputSchema),
      outputSchema: JSON.parse(outputSchema),
    };
  }

  /**
   * Runs one tool call for `caller`; resolves to its CallToolResult.
   * `signal` aborted ends a wait with `ASK_ABORTED`; `timeout` (seconds)
   * ends it with `ASK_TIMED_OUT`.
   * @param {string} args the model's arguments, as JSON text
   * @param {{ caller: Agent, signal?: AbortSignal, timeout?: number }} call
   */
  async execute(args, { caller, signal, timeout } = {}) {
    if (!(caller instanceof Agent)) {
      throw new TypeError('execute(args, {caller}) needs the calling Agent, from host.agents');
    }
    // A call in a turn already cancelled runs nothing, as a harness
    // dispatches no cancelled call (SPEC §1).
    if (signal?.aborted) return failure('UserQuestionError', 'ASK_ABORTED', ABORTED);
    const outcome = await this.#call('execute', args,
      (request) => this.#ask(seamRequest(request), caller, signal, timeout));
    if (outcome.busy) {
      return failure('ToolSandboxError', 'HOST_BUSY', `the host is busy: this host runs at most `
        + `${this.#maxCalls} calls of the tool at once. Try again shortly`);
    }
    if (outcome.done) {
      const { answers, text } = outcome.done;
      return {
        content: [{ type: 'text', text }],
        structuredContent: { answers: answers.map(answerOf) },
        isError: false,
      };
    }
    if (outcome.failed) {
      const { name, code, message } = outcome.failed;
      return failure(name, code, message);
    }
    if (outcome.diverged) {
      return failure('ToolSandboxError', 'GUEST_CONTRACT_VIOLATION', 'the component broke the '
        + `contract: ${outcome.diverged}; the call was stopped`);
    }
    return failure('GuestTrapError', undefined, `the tool component failed: ${outcome.trap}`);
  }

  /** Stops the host's workers; calls under way fail, their answerers are told to stop. */
  close() {
    this.#closing.abort();
    for (const lane of this.#lanes) lane.stop('the host was closed');
    for (const waiting of this.#queue.splice(0)) waiting(null);
  }

  /** The seam: the reply to one ask, `{tag: 'ok' | 'err', val}`. */
  async #ask(request, caller, callerSignal, timeout) {
    const signal = AbortSignal.any([this.#closing.signal, callerSignal].filter(Boolean));
    const stop = new AbortController();
    let timer;
    let onAbort;
    let fail;
    const ended = new Promise((_, reject) => {
      fail = reject;
      onAbort = () => reject(new AskError('ASK_ABORTED', ABORTED));
      signal.addEventListener('abort', onAbort, { once: true });
      if (timeout != null) {
        timer = setTimeout(() => reject(new AskError('ASK_TIMED_OUT', timedOut(timeout))),
          timeout * 1000);
      }
    });
    ended.catch(() => {});
    // Under a relay: the root whose floor this ask holds.
    let root = null;
    // Only a running agent's question waits.
    let gone;
    const onGone = () => fail(new AskError('CALLER_NOT_LIVE', endedWhileWaiting(caller)));
    try {
      if (signal.aborted) throw new AskError('ASK_ABORTED', ABORTED);
      const chain = this.agents.check(caller, this.#delegated, this.#maxDelegatedAsks);
      if (chain.length) request.askedBy = chain;
      gone = lineageEnded(caller);
      gone.addEventListener('abort', onGone, { once: true });
      if (this.#delegated === 'relay') {
        await this.#floors.take(caller.root, chain.length === 0, ended);
        root = caller.root;
      }
      for (const answerer of this.#answerers) {
        const answers = await Promise.race([answerer(request, { signal: stop.signal, caller }), ended]);
        if (answers != null) return { tag: 'ok', val: checkedShape(answers) };
      }
      throw new AskError('NO_PROVIDER', NO_PROVIDER);
    } catch (error) {
      return { tag: 'err', val: seamError(error, signal.aborted) };
    } finally {
      if (root) this.#floors.giveBack(root);
      stop.abort();
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      gone?.removeEventListener('abort', onGone);
    }
  }

  /**
   * One call of an export: runs it, and at each new ask awaits `onAsk`'s
   * reply with no run under way, then runs it again. `{busy}` past
   * `maxCalls`.
   */
  async #call(op, args, onAsk) {
    if (this.#closing.signal.aborted) throw new Error('the host was closed');
    if (this.#calls >= this.#maxCalls) return { busy: true };
    this.#calls += 1;
    try {
      const asked = [];
      const budget = { limit: this.#computeLimit, left: this.#computeLimit * 1000 };
      for (;;) {
        const outcome = await this.#run(op, args, asked, budget);
        if (!outcome.asking) return outcome;
        asked.push([outcome.asking, await onAsk(outcome.asking)]);
      }
    } finally {
      this.#calls -= 1;
    }
  }

  /** One run on a free lane, within what is left of the call's compute budget. */
  async #run(op, args, asked, budget) {
    const lane = this.#closing.signal.aborted ? null : await this.#lane();
    if (!lane) return { trap: 'the host was closed' };
    const start = performance.now();
    const outcome = await lane.run(op, args, asked, budget);
    budget.left -= performance.now() - start;
    this.#free(lane);
    return outcome;
  }

  /** A free lane: an idle one, a new one while there are fewer than `LANES`, or the next freed. */
  #lane() {
    const idle = this.#idle.pop();
    if (idle) return idle;
    if (this.#lanes.size < LANES) return this.#newLane();
    return new Promise((resolve) => this.#queue.push(resolve));
  }

  /** `lane`'s run is over: it goes to the next run waiting, or rests. */
  #free(lane) {
    if (this.#closing.signal.aborted) return;
    const next = this.#queue.shift();
    if (!lane.alive) {
      next?.(this.#newLane());
    } else if (next) {
      next(lane);
    } else {
      lane.rest();
      this.#idle.push(lane);
    }
  }

  #newLane() {
    const lane = new Lane(this.#component, () => {
      this.#lanes.delete(lane);
      this.#idle = this.#idle.filter((idle) => idle !== lane);
    });
    this.#lanes.add(lane);
    return lane;
  }
}

/**
 * One worker thread, running one run at a time: its outcome is `{done}`
 * (the export's value), `{failed}` (the tool's failure record), `{asking}`
 * (the run ended at a new ask: its request), `{diverged}` (it asked
 * something else than before) or `{trap}` (a message).
 */
class Lane {
  #worker;
  #watchdog;
  #settle = null;
  alive = true;

  constructor(component, gone) {
    this.#worker = new Worker(new URL('./worker.js', import.meta.url), {
      workerData: { url: component.url, modules: component.modules },
      // The worker needs no flag of the program's (and some, such as
      // --input-type, would stop it from starting).
      execArgv: [],
    });
    this.#worker.on('message', (outcome) => {
      clearTimeout(this.#watchdog);
      this.#end(outcome);
    });
    this.#worker.on('error', (error) => this.stop(`its worker failed: ${error.message}`));
    this.#worker.on('exit', () => {
      this.stop('its worker ended');
      gone();
    });
  }

  /**
   * Runs `op`; the worker is stopped once the run has used what is `left`
   * (ms) of the call's compute `limit` (s).
   * @returns {Promise<{done?: any, failed?: any, asking?: any, diverged?: string, trap?: string}>}
   */
  run(op, args, asked, { limit, left }) {
    this.#worker.ref();
    return new Promise((resolve) => {
      this.#settle = resolve;
      this.#watchdog = setTimeout(() => this.stop(`it worked past the host's limit of ${limit}s `
        + 'and was stopped'), Math.max(0, left));
      this.#worker.postMessage({ op, args, asked });
    });
  }

  /** Lets the process exit while this idle worker waits for a run. */
  rest() {
    this.#worker.unref();
  }

  /** Stops the worker; a run under way on it ends with a trap saying why. */
  stop(why) {
    if (!this.alive) return;
    this.alive = false;
    clearTimeout(this.#watchdog);
    this.#worker.terminate();
    this.#end({ trap: why });
  }

  #end(outcome) {
    const settle = this.#settle;
    this.#settle = null;
    settle?.(outcome);
  }
}

/** The seam's request in the seam's own spelling (as the Rust and Python hosts give it). */
function seamRequest(request) {
  return {
    questions: request.questions.map((q) => {
      const question = { id: q.id, question: q.question };
      for (const key of ['detail', 'header']) if (q[key] != null) question[key] = q[key];
      if (q.options != null) {
        question.options = q.options.map((o) => {
          const option = { label: o.label };
          if (o.description != null) option.description = o.description;
          return o.extraJson == null ? option : { ...option, ...JSON.parse(o.extraJson) };
        });
      }
      if (q.multiSelect != null) question.multiSelect = q.multiSelect;
      return question;
    }),
  };
}

/**
 * The answers as the component takes them. Their shape only: the component
 * checks them against the questions itself (`INVALID_ANSWER`).
 */
function checkedShape(answers) {
  const fail = (what) => {
    throw new AskError('INVALID_ANSWER', `the answerer returned ${what}; an answerer returns `
      + 'a list of {id, selected, custom?} (strings; selected a list of labels), or null to '
      + 'pass the question on');
  };
  if (!Array.isArray(answers)) fail(`${typeof answers}, not a list`);
  return answers.map((answer, i) => {
    if (typeof answer !== 'object' || answer === null) fail(`a ${typeof answer} at ${i}`);
    const { id, selected = [], custom } = answer;
    if (typeof id !== 'string') fail(`an answer without a string id at ${i}`);
    if (!Array.isArray(selected) || selected.some((label) => typeof label !== 'string')) {
      fail(`answer ${JSON.stringify(id)} whose selected is not a list of strings`);
    }
    if (custom != null && typeof custom !== 'string') {
      fail(`answer ${JSON.stringify(id)} whose custom is not a string`);
    }
    if (![id, ...selected, ...(custom != null ? [custom] : [])].every((t) => t.isWellFormed())) {
      throw new AskError('INVALID_ANSWER', `the answerer returned answer ${JSON.stringify(id)} `
        + 'with half of a surrogate pair in its text (a character cut in two, such as an emoji); '
        + 'text must be whole Unicode characters');
    }
    return { id, selected, custom: custom ?? undefined };
  });
}

/**
 * What an answerer threw, as the seam's `ask-error` (SPEC §2, step 6): an
 * `AskError`, or anything named `UserQuestionError` with a code (a DSH
 * provider's error, or one that crossed a transport as a plain object),
 * keeps its code; any other failure after the turn was cancelled is
 * `ASK_ABORTED`; any other failure passes through uncoded, with its message.
 */
function seamError(error, aborted) {
  const coded = typeof error?.code === 'string'
    && (error instanceof AskError || error.name === 'UserQuestionError');
  if (!coded && aborted) return seamError(new AskError('ASK_ABORTED', ABORTED));
  const name = typeof error?.name === 'string' ? error.name : 'Error';
  const message = typeof error?.message === 'string' ? error.message : String(error);
  if (!coded) return { name, code: undefined, message };
  const code = CODES.includes(error.code)
    ? { tag: error.code.toLowerCase().replaceAll('_', '-') }
    : { tag: 'other', val: error.code };
  return { name, code, message };
}

function answerOf({ id, selected, custom }) {
  return custom === undefined ? { id, selected } : { id, selected, custom };
}

function failure(name, code, message) {
  return {
    content: [{ type: 'text', text: `Error: ${message}` }],
    isError: true,
    error: code == null ? { name } : { name, code },
  };
}
