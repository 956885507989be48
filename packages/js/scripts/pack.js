// Packs the npm packages as they are published (scripts/dist runs this):
//   node scripts/pack.js OUT_DIR                    the ask-user package
//   node scripts/pack.js OUT_DIR TARGET BINARY      the command for TARGET
// The ask-user package is this folder with an optional dependency on each
// platform's package (platforms.js) at its version: they are not in this
// folder's package.json, whose lock file can't name packages not yet
// published. A platform's package carries BINARY, the command built for the
// Rust target triple TARGET. Each tarball's path is printed.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLATFORMS } from '../platforms.js';

const here = fileURLToPath(new URL('..', import.meta.url));
const main = JSON.parse(readFileSync(join(here, 'package.json')));

/** Writes a package with `write(dir)` into a fresh folder and packs it into `out`. */
function pack(out, write) {
  const dir = mkdtempSync(join(tmpdir(), 'ask-user-pack-'));
  try {
    write(dir);
    mkdirSync(out, { recursive: true });
    const packed = execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', resolve(out)],
      { cwd: dir, encoding: 'utf8' });
    return join(resolve(out), packed.trim().split('\n').pop());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function writeJson(path, value) {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

function mainPackage(dir) {
  execFileSync(process.execPath, [join(here, 'scripts/bundle-component.js')], { stdio: 'inherit' });
  for (const file of [...main.files, 'README.md']) cpSync(join(here, file), join(dir, file), { recursive: true, dereference: true });
  const { prepack, ...scripts } = main.scripts;
  writeJson(join(dir, 'package.json'), {
    ...main,
    scripts,
    optionalDependencies: Object.fromEntries(PLATFORMS.map((p) => [p.package, main.version])),
  });
}

function platformPackage(platform, binary) {
  return (dir) => {
    mkdirSync(join(dir, 'bin'));
    copyFileSync(binary, join(dir, 'bin/ask-user'));
    chmodSync(join(dir, 'bin/ask-user'), 0o755);
    writeJson(join(dir, 'package.json'), {
      name: platform.package,
      version: main.version,
      description: `The ask-user command for ${platform.target}, which the ask-user package installs on such a machine and runs.`,
      license: main.license,
      os: [platform.os],
      cpu: [platform.cpu],
      ...(platform.libc && { libc: [platform.libc] }),
      files: ['bin/ask-user'],
      preferUnplugged: true,
    });
    writeFileSync(join(dir, 'README.md'), `# ${platform.package}\n\nThe \`ask-user\` command built for ` +
      `${platform.target}. Install \`ask-user\` rather than this: npm picks this package on such a machine, ` +
      'and `npx ask-user` runs it.\n');
  };
}

const [out, target, binary] = process.argv.slice(2);
const platform = PLATFORMS.find((p) => p.target === target);
if (!out || (target && (!platform || !binary))) {
  console.error('usage: pack.js OUT_DIR [TARGET BINARY]; TARGET one of ' + PLATFORMS.map((p) => p.target).join(', '));
  process.exit(2);
}
console.log(pack(out, target ? platformPackage(platform, binary) : mainPackage));
