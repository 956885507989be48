//! What the tests of ask-user share: real parts driven as a user drives
//! them. A browser (headless Chromium through chromedriver), a terminal (a
//! pty), child processes stopped when dropped, `ask-user mcp --http` and
//! an MCP peer on stdio, a fake model server for the real clients, the npm
//! packages those clients come from, a Telegram Bot API, a Slack and an ntfy
//! server of ours, a real Matrix homeserver (Synapse) and a proxy that makes
//! it fail on cue, and the hooks' state folder.

pub mod browser;
pub mod child;
pub mod fake_model;
pub mod fake_ntfy;
pub mod fake_slack;
pub mod fake_telegram;
pub mod fault_proxy;
pub mod hooks;
pub mod http_server;
pub mod http_thread;
pub mod mcp_peer;
pub mod npm;
pub mod synapse;
pub mod tui;

use std::path::PathBuf;

/// The folder the running test binary's target profile builds into
/// (`target/debug`): cargo puts a test binary in its `deps/`.
fn profile_dir() -> PathBuf {
    let test = std::env::current_exe().expect("the test binary's path");
    let deps = test.parent().expect("a test binary is in deps/");
    deps.parent()
        .expect("deps/ is in the profile's folder")
        .to_owned()
}

/// The `ask-user` command of this build (`target/debug/ask-user`), which
/// cargo builds before the integration tests of its package.
pub fn program() -> PathBuf {
    profile_dir().join("ask-user")
}

/// A folder for files that outlive one test (`target/tmp`, cargo's
/// `CARGO_TARGET_TMPDIR`): the compiled component's cache, logs.
pub fn target_tmp() -> PathBuf {
    let dir = profile_dir()
        .parent()
        .expect("the profile's folder is in target/")
        .join("tmp");
    std::fs::create_dir_all(&dir).expect("target/tmp can be made");
    dir
}

/// The book's pages (`docs/src/**/*.md`) and the README, each with its
/// text: what the tests of the recipes in them read, so that no example in
/// any of them can go stale unnoticed.
pub fn book_pages() -> Vec<(PathBuf, String)> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support is in the repository");
    let mut pages = vec![repo.join("README.md")];
    let mut folders = vec![repo.join("docs/src")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("docs/src is readable") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a page is readable");
            (path, text)
        })
        .collect()
}
