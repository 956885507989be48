// The order of a root's asks under a relay: one at a time, the root's own
// first, then its sub-agents' in the order they came; a wait that ends
// leaves the queue.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Floors } from '../src/floors.js';

const never = new Promise(() => {});

test('the root\'s own ask goes first, then its sub-agents\' in order', async () => {
  const floors = new Floors();
  const root = {};
  await floors.take(root, false, never);
  const order = [];
  const waiting = [['reviewer', false], ['tester', false], ['root', true]].map(
    ([name, own]) => floors.take(root, own, never).then(() => {
      order.push(name);
      floors.giveBack(root);
    }),
  );
  floors.giveBack(root);
  await Promise.all(waiting);
  assert.deepEqual(order, ['root', 'reviewer', 'tester']);
  // Free again: the next ask takes it at once.
  await floors.take(root, false, never);
});

test('an ask whose wait ended is passed over, and another root\'s floor is its own', async () => {
  const floors = new Floors();
  const root = {};
  await floors.take(root, true, never);
  let end;
  const ended = new Promise((_, reject) => { end = reject; });
  const gone = floors.take(root, false, ended);
  const next = floors.take(root, false, never);
  end(new Error('aborted'));
  await assert.rejects(gone, /aborted/);
  floors.giveBack(root);
  await next;
  await floors.take({}, false, never);
});
