// Loading the component: jco's transpiler at load (a component given as
// bytes) against the output transpiled when the package was packed
// (`Host.load()` with no argument). Prints medians over RUNS loads each.
//   node bench/load.js
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { Component } from '../src/index.js';

await import('../scripts/bundle-component.js'); // what `npm pack` does first
const RUNS = 20;
const bytes = readFileSync(new URL('../ask_user_tool.wasm', import.meta.url));

async function median(load) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await load();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[RUNS >> 1];
}

/** The first load in a fresh process (jco's own start counted), in ms. */
function cold(call) {
  const script = `import { performance } from 'node:perf_hooks';
    import { readFileSync } from 'node:fs';
    const { Component } = await import(${JSON.stringify(new URL('../src/index.js', import.meta.url).href)});
    const bytes = readFileSync(${JSON.stringify(new URL('../ask_user_tool.wasm', import.meta.url).pathname)});
    const start = performance.now();
    await Component.load(${call});
    console.log(performance.now() - start);`;
  const times = [];
  for (let i = 0; i < 5; i++) {
    times.push(Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })));
  }
  return times.sort((a, b) => a - b)[2];
}

const rows = [
  ['first load, transpiled at load', cold('bytes')],
  ['first load, transpiled at pack', cold('')],
  ['later loads, transpiled at load', await median(() => Component.load(bytes))],
  ['later loads, transpiled at pack', await median(() => Component.load())],
];
for (const [what, ms] of rows) console.log(`${what.padEnd(34)} ${ms.toFixed(1)} ms`);
console.log(`first load: ${(rows[0][1] / rows[1][1]).toFixed(1)}x faster transpiled at pack; `
  + `later loads: ${(rows[2][1] / rows[3][1]).toFixed(1)}x`);
