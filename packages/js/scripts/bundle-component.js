// `npm pack` runs this first: the package carries the tool component, the
// runtime crate's checked-in copy (built from the repository's guest/).
import { copyFileSync } from 'node:fs';

copyFileSync(
  new URL('../../../host/runtime/component/ask_user_tool.wasm', import.meta.url),
  new URL('../ask_user_tool.wasm', import.meta.url),
);
