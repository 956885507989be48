// The book's page for the harness (docs/src/embedding/dsh.md), run as
// written where a user would run it: both packages as `npm pack` makes
// them, installed into a fresh folder outside the repository with the
// harness's packages from npm, and the quick start run there, its provider
// running the ask-user command this repository built.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { COMMAND, packed, REPO, started } from './support.js';


/** The page's first block of `language`. */
function block(language) {
  const page = readFileSync(new URL('docs/src/embedding/dsh.md', REPO), 'utf8');
  const found = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(page);
  assert.ok(found, `the book's page for the harness has no ${language} block`);
  return found[1];
}

test('the packed plugins install beside the harness and the quick start works as written', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ask-user-dsh-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const npm = (args, cwd) => execFileSync('npm', args, { cwd, encoding: 'utf8', timeout: 300_000 });
  // The page's own commands, from the repository's root, packing into `dir`.
  const install = block('sh');
  assert.match(install, /\(cd packages\/js && npm pack\) && \(cd packages\/dsh && npm pack\)/);
  const tarballs = packed(dir);
  assert.ok(install.includes('ask-user-0.1.0.tgz') && install.includes('ask-user-dsh-0.1.0.tgz'));

  const work = join(dir, 'work');
  mkdirSync(work);
  writeFileSync(join(work, 'package.json'), '{"private": true}');
  // The harness's packages at the versions this package is tested with.
  const lock = JSON.parse(readFileSync(new URL('../package-lock.json', import.meta.url)));
  const harness = ['cordis', 'dsh-agent', 'dsh-llm', 'dsh-system-prompt', 'dsh-tools',
    'dsh-user-questions'].map((name) => {
    const { version } = lock.packages[`node_modules/@deepseek-ai/${name}`];
    return `@deepseek-ai/${name}@${version}`;
  });
  npm(['install', '--silent', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs,
    ...harness], work);
  writeFileSync(join(work, 'quickstart.mjs'), block('js'));

  // ask-user on the PATH, with a config of the user's that answers.
  const config = join(dir, 'config');
  mkdirSync(join(config, 'ask-user'), { recursive: true });
  writeFileSync(join(config, 'ask-user', 'config.toml'), '[[answerer]]\nkind = "script"\n'
    + 'rules = [{ id = "env", select = ["Staging (Recommended)"] }]\n');
  const env = {
    ...process.env,
    PATH: `${dirname(COMMAND)}:${process.env.PATH}`,
    XDG_CONFIG_HOME: config,
    ASK_USER_STATE_DIR: join(dir, 'state'),
  };
  const run = started(t, process.execPath, ['quickstart.mjs'], { cwd: work, env }, 60_000);
  const code = await run.ended;
  assert.equal(code, 0, `the quick start failed:\n${run.said.err}`);
  assert.equal(run.said.out, '{"answers":[{"id":"env","selected":["Staging (Recommended)"]}]}\n');
});
