/**
 * One batch at a time per root under a relay: the root's own asks first,
 * then its sub-agents' in the order they came. A wait that ends (aborted,
 * timed out) leaves the queue; the floor passes over it.
 */
export class Floors {
  /** @type {Map<Agent, {own: object[], delegates: object[]}>} root → waiting, while held */
  #held = new Map();

  /** Resolves when `root`'s floor is this ask's; `ended` rejects to give up. */
  async take(root, own, ended) {
    const queue = this.#held.get(root);
    if (!queue) {
      this.#held.set(root, { own: [], delegates: [] });
      return;
    }
    const waiter = { granted: false, gone: false };
    const granted = new Promise((resolve) => { waiter.resolve = resolve; });
    (own ? queue.own : queue.delegates).push(waiter);
    try {
      await Promise.race([granted, ended]);
    } catch (error) {
      waiter.gone = true;
      if (waiter.granted) this.giveBack(root);
      throw error;
    }
  }

  /** The floor of `root` passes to the next ask waiting, or is free. */
  giveBack(root) {
    const queue = this.#held.get(root);
    for (const waiting of [queue.own, queue.delegates]) {
      while (waiting.length) {
        const next = waiting.shift();
        if (next.gone) continue;
        next.granted = true;
        next.resolve();
        return;
      }
    }
    this.#held.delete(root);
  }
}
