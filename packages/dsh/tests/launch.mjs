// The `dsh` command's profile boot (@deepseek-ai/dsh@0.1.0-rc.8,
// lib/profile-boot), as its launcher does it, without the one step the
// published packages cannot run: watching the user's patch layers needs
// `registerConfig` of the HMR service, which no published
// @deepseek-ai/cordis-plugin-hmr (1.0.16 to 1.0.19) has, so `dsh --profile
// headless` itself fails at start. Everything else is the command's: its
// profile and bundles, its Loader, the headless runner and its exit.
//
// node launch.mjs TASK, with DSH_PACKAGE (the installed @deepseek-ai/dsh),
// DSH_HOME, and DSH_OVERLAY (a --patch overlay).
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dsh = realpathSync(process.env.DSH_PACKAGE);

/** A dependency of the command, the copy it loads itself. */
async function dependency(name) {
  const dir = join(dirname(dsh), name);
  const { exports } = JSON.parse(readFileSync(join(dir, 'package.json')));
  return import(pathToFileURL(join(dir, exports['.'].default ?? exports['.'])));
}

const { boot, composeEntries, healProfilesModuleFallback, loadLayeredEnv, loadOverlayPatches,
  loadProfile } = await dependency('dsh-app-boot');
const { DSH_LAUNCH_ENVIRONMENT_KEY } = await dependency('dsh-launch-environment');
const { provideCmdline } = await dependency('dsh-cmdline');

const anchor = join(dsh, 'package.json');
healProfilesModuleFallback(anchor);
const profile = loadProfile('dsh', 'headless', anchor, undefined, { userLayer: true });
writeFileSync(join(profile.dir, 'cordis.yml'), '[]\n');
const bundles = profile.layers.flatMap((layer) => layer.patches);
const overlays = loadOverlayPatches('dsh', process.env.DSH_OVERLAY);
const rows = new Map(composeEntries([bundles, profile.patches, [], overlays])
  .filter((row) => typeof row.id === 'string').map((row) => [row.id, row]));
const patches = [...bundles, ...profile.patches, ...overlays];
if (rows.has('agent-presets')) {
  patches.push({
    id: 'agent-presets',
    config: {
      ...rows.get('agent-presets').config,
      roots: [{ path: join(dsh, 'config/agent-presets/'), trust: 'system' }],
    },
  });
}

let app;
const end = (code) => {
  process.exitCode = code;
  void app?.fiber.dispose().finally(() => process.exit(code));
};
// As the command: Ctrl-C cancels the run and ends 130.
process.on('SIGINT', () => end(130));
process.on('SIGTERM', () => end(0));
await boot('dsh', join(profile.dir, 'cordis.yml'), patches, (root) => {
  app = root;
  root.provide(DSH_LAUNCH_ENVIRONMENT_KEY, loadLayeredEnv('dsh'));
  provideCmdline(root, { args: process.argv.slice(2), exit: end });
});
