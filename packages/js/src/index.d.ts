/** One question as answerers get it (the seam's spelling). */
export interface Question {
  id: string;
  question: string;
  detail?: string;
  header?: string;
  /** Absent: a free-text question. Keys the model sent beyond label and description are kept. */
  options?: Array<{ label: string; description?: string; [key: string]: unknown }>;
  multiSelect?: boolean;
}

/** The human's answer to one question. */
export interface Answer {
  id: string;
  /** Labels of the chosen options; empty with no `custom`: skipped. */
  selected: string[];
  /** Own words. */
  custom?: string;
}

/**
 * Answers the request, or returns null to pass it on, or throws an
 * `AskError`. `signal` aborts when the answer is no longer wanted; `caller` is the
 * agent whose call asks.
 */
export type Answerer = (
  /** `askedBy`: a relayed sub-agent's chain of agent ids, root first (absent for a root's own ask). */
  request: { questions: Question[]; askedBy?: string[] },
  context: { signal: AbortSignal; caller: Agent },
) => Answer[] | null | undefined | Promise<Answer[] | null | undefined>;

/** An MCP CallToolResult. */
export interface CallToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: { answers: Answer[] };
  isError: boolean;
  error?: { name: string; code?: string };
}

export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: object;
  outputSchema: object;
}

/** An ask that failed: throw it from an answerer to end the ask with `code`. */
export class AskError extends Error {
  constructor(code: string | null, message: string, name?: string);
  code: string | null;
}

export class Agent {
  readonly id: string;
  readonly owner: Agent | null;
  live: boolean;
  /** The root above it (itself, for a root). */
  readonly root: Agent;
}

/** Sub-agent asks a relay allows per root per turn unless the host says otherwise (3). */
export const DEFAULT_MAX_DELEGATED_ASKS: number;

/**
 * The live agents. A live agent that no agent owns may ask; a sub-agent only
 * when the host relays it and every agent above it is live.
 */
export class Agents {
  root(id: string): Agent;
  delegate(id: string, owner: Agent): Agent;
  end(agent: Agent): void;
  /** A new turn of `root`: its sub-agents may be relayed `maxDelegatedAsks` asks again. */
  startTurn(root: Agent): void;
  /**
   * Throws the seam's error when `agent` may not ask the human; else a relayed
   * sub-agent's chain of ids (root first), or [] for a root.
   */
  check(agent: Agent, delegated?: 'refuse' | 'relay', maxAsks?: number): string[];
}

/** The component, transpiled by jco and compiled once; hosts may share it. */
export class Component {
  /** Without `file`, the component this package carries. */
  static load(file?: string | Uint8Array): Promise<Component>;
}

export interface HostOptions {
  /** Seconds the component may work on one call, waits for answers not counted (default 10). */
  computeLimit?: number;
  /**
   * Calls under way at once (default 10,000). A call waiting for the human holds no worker and
   * no instance: its arguments, its request and the answerers' promises. One more gets `HOST_BUSY`.
   */
  maxCalls?: number;
  /**
   * What a sub-agent's ask gets: `'refuse'` (`DELEGATED_CALLER`, the default) or `'relay'`
   * (asked, saying who asks in the request's `askedBy`; one batch at a time per root, the
   * root's first).
   */
  delegated?: 'refuse' | 'relay';
  /** Under a relay: a root's sub-agents' asks per turn (default 3); `DELEGATED_ASK_LIMIT` past it. */
  maxDelegatedAsks?: number;
}

/** The component, loaded once, and the seam it asks through. */
export class Host {
  constructor(component: Component, options?: HostOptions);
  /** Without `file`, the component this package carries. */
  static load(file?: string | Uint8Array, options?: HostOptions): Promise<Host>;
  readonly agents: Agents;
  answerer<A extends Answerer>(answerer: A): A;
  definition(): Promise<ToolDefinition>;
  execute(
    args: string,
    call: { caller: Agent; signal?: AbortSignal; timeout?: number },
  ): Promise<CallToolResult>;
  close(): void;
}
