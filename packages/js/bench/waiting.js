// What calls waiting for the human weigh: 1,000 calls wait at once on an
// answerer; prints the process's memory growth and its threads, then
// answers them all. A bench, not a test.
//   node bench/waiting.js [COMPONENT]   (default: $ASK_USER_COMPONENT, else the carried one)
import { readFileSync } from 'node:fs';
import { Host } from '../src/index.js';

const CALLS = 1000;
const ARGUMENTS = JSON.stringify({
  questions: [{
    id: 'q',
    question: 'Which one?',
    options: [{ label: 'A', description: 'the first' }, { label: 'B', description: 'the second' }],
  }],
});

const threads = () => Number(readFileSync('/proc/self/status', 'utf8').match(/^Threads:\s+(\d+)/m)[1]);

const host = await Host.load(process.argv[2] ?? process.env.ASK_USER_COMPONENT);
let asked = 0;
let allAsked;
let answer;
host.answerer(async () => {
  asked += 1;
  if (asked === CALLS) allAsked();
  await answer;
  return [{ id: 'q', selected: ['B'] }];
});

// One call first, so that what every call shares (a worker) is counted before.
answer = Promise.resolve();
await host.execute(ARGUMENTS, { caller: host.agents.root('warm') });
asked = 0;
let answerAll;
answer = new Promise((resolve) => { answerAll = resolve; });
const arrived = new Promise((resolve) => { allAsked = resolve; });
global.gc?.();
const before = process.memoryUsage();
const threadsBefore = threads();
const calls = Array.from({ length: CALLS },
  (_, i) => host.execute(ARGUMENTS, { caller: host.agents.root(`s${i}`) }));
await arrived;
global.gc?.();
const during = process.memoryUsage();
const grown = during.rss - before.rss;
const heap = during.heapUsed - before.heapUsed;
const threadsDuring = threads();
answerAll();
const results = await Promise.all(calls);
if (results.some((r) => r.isError)) throw new Error(JSON.stringify(results.find((r) => r.isError)));
host.close();
const mib = grown / (1 << 20);
console.log(`${CALLS} waiting calls: ${mib.toFixed(1)} MiB (RSS growth), `
  + `${(grown / 1024 / CALLS).toFixed(1)} KiB each; threads: ${threadsBefore} before, `
  + `${threadsDuring} while they wait; goal <= 64 MiB: ${mib <= 64 ? 'met' : 'NOT met'}`);
console.log(`  of which the JavaScript heap: ${(heap / (1 << 20)).toFixed(1)} MiB, `
  + `${(heap / 1024 / CALLS).toFixed(1)} KiB a call (the rest: the heap's own growth, and a `
  + 'worker lane more for runs that came at once, at most four in all)');
