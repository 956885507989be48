// The platforms the `ask-user` command is built for. Each is an npm package
// of its own that carries the binary, an optional dependency of this one
// with `os`, `cpu` and `libc` set, so that npm installs only this machine's
// (as esbuild and biome ship theirs). The launcher (bin/ask-user.js) runs
// the one installed; scripts/platform-package.js makes them; the release
// workflow builds each `target`. A test holds package.json's
// optionalDependencies to this list.

/** @type {{package: string, os: string, cpu: string, libc?: string, target: string}[]} */
export const PLATFORMS = [
  { package: '@ask-user/linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc', target: 'x86_64-unknown-linux-gnu' },
  { package: '@ask-user/linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc', target: 'aarch64-unknown-linux-gnu' },
  { package: '@ask-user/darwin-x64', os: 'darwin', cpu: 'x64', target: 'x86_64-apple-darwin' },
  { package: '@ask-user/darwin-arm64', os: 'darwin', cpu: 'arm64', target: 'aarch64-apple-darwin' },
];

/** The C library this Node runs on: 'glibc', or 'musl' (or another) on Linux; undefined elsewhere. */
export function libc() {
  if (process.platform !== 'linux') return undefined;
  return process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl';
}

/** This machine's entry of PLATFORMS, or undefined when the command is not built for it. */
export function thisPlatform() {
  const ours = libc();
  return PLATFORMS.find((p) => p.os === process.platform && p.cpu === process.arch && p.libc === ours);
}
