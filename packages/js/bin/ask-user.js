#!/usr/bin/env node
// `npx ask-user …`: runs the `ask-user` command from this platform's
// package (platforms.js), with the same arguments, standard streams and
// exit status. A signal sent to this process (an MCP client stopping its
// server) is passed on to the command, and this process ends as it did.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { libc, thisPlatform } from '../platforms.js';

function fail(message) {
  process.stderr.write(`ask-user: ${message}\n`);
  process.exit(1);
}

function binary() {
  const platform = thisPlatform();
  if (!platform) {
    const here = [process.platform, process.arch, libc()].filter(Boolean).join('-');
    fail(`the command is not built for ${here} (Linux x64 and arm64 with glibc, macOS x64 and arm64 are); ` +
      'build it from source with a Rust toolchain: cargo install ask-user');
  }
  try {
    return createRequire(import.meta.url).resolve(`${platform.package}/bin/ask-user`);
  } catch {
    fail(`the package ${platform.package}, which carries the command for this machine, is not installed: ` +
      'npm installs it as an optional dependency, so install ask-user again without --omit=optional (or --no-optional)');
  }
}

const command = binary();
// Every signal a terminal or a client sends to stop a program is passed
// on, whether it reached this process alone (a client's kill) or the whole
// process group (a terminal's Ctrl-C or Ctrl-\, which the command then
// gets twice: it stops at the first). Taken before the command starts: a
// signal in between would end this process and leave the command running.
// (A handler runs on a later turn of the event loop, once `child` is set.)
let child;
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
for (const signal of forwarded) process.on(signal, () => child.kill(signal));
child = spawn(command, process.argv.slice(2), { stdio: 'inherit' });
child.on('error', (error) => fail(`${command} did not start: ${error.message}`));
child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code);
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
});
