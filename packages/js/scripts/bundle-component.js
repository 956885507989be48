// `npm pack` runs this first: the package carries the tool component (the
// runtime crate's checked-in copy, built from the repository's guest/) and
// jco's transpiled output of it, so that loading it needs no jco at all.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { transpile } from '../src/transpile.js';

const here = (path) => new URL(path, import.meta.url);
copyFileSync(here('../../../host/runtime/component/ask_user_tool.wasm'), here('../ask_user_tool.wasm'));
const files = await transpile(readFileSync(here('../ask_user_tool.wasm')));
rmSync(here('../transpiled'), { recursive: true, force: true });
mkdirSync(here('../transpiled'));
for (const [name, data] of Object.entries(files)) {
  writeFileSync(here(`../transpiled/${name}`), data);
}
