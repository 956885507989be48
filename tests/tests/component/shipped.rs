//! The component the runtime crate ships is the one `guest/` builds: the
//! checked-in bytes are held to a rebuild (reproducible: the same rustc,
//! `Cargo.lock`, `guest` profile and target give the same bytes, wherever
//! the repository is checked out).

use std::process::Command;

/// Where the shipped component and the rustc it was built with live.
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../host/runtime/component");

#[test]
fn the_shipped_component_is_the_one_guest_builds() {
    let rebuilt = std::fs::read(env!("REBUILT_COMPONENT")).unwrap();
    let recorded = std::fs::read_to_string(format!("{SHIPPED}/ask_user_tool.rustc")).unwrap();
    let here = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("--version")
        .output()
        .unwrap();
    let here = String::from_utf8(here.stdout).unwrap();
    if here.trim() != recorded.trim() {
        // Another compiler makes other bytes: nothing to hold them to.
        eprintln!(
            "not checked: the shipped component was built with {}, this is {}",
            recorded.trim(),
            here.trim()
        );
        return;
    }
    assert!(
        rebuilt == ask_user::COMPONENT,
        "the component checked in at host/runtime/component/ is not what guest/ builds now \
         ({} bytes against {}): run scripts/update-component and commit the result",
        ask_user::COMPONENT.len(),
        rebuilt.len()
    );
}

/// What an embedder gets with `ask-user-runtime`: no HTTP, database,
/// terminal, MCP or notification crate, and no build of a wasm32 guest.
#[test]
fn the_runtime_crate_brings_no_network_database_or_terminal_crates() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "ask-user-runtime",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    let tree = String::from_utf8(tree.stdout).unwrap();
    let crates: std::collections::BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for heavy in [
        "hyper",
        "axum",
        "reqwest",
        "rustls",
        "rusqlite",
        "crossterm",
        "rmcp",
        "notify-rust",
        "zbus",
        "clap",
        "guest-build",
    ] {
        assert!(
            !crates.contains(heavy),
            "ask-user-runtime pulls {heavy}: {crates:?}"
        );
    }
    assert!(crates.contains("wasmtime"), "{crates:?}");
}
