//! The component the runtime crate ships is the one `guest/` builds: the
//! checked-in bytes are held to a rebuild (reproducible: the same rustc,
//! `Cargo.lock`, `guest` profile and target give the same bytes, wherever
//! the repository is checked out).

use std::process::Command;

/// Where the shipped component and the rustc it was built with live.
const SHIPPED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../host/runtime/component");

/// Whether this rustc is the one that built what `recorded` names: another
/// compiler makes other bytes, with nothing to hold them to.
fn built_by_this_rustc(recorded: &str) -> bool {
    let recorded = std::fs::read_to_string(recorded).unwrap();
    let here = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("--version")
        .output()
        .unwrap();
    let here = String::from_utf8(here.stdout).unwrap();
    if here.trim() != recorded.trim() {
        eprintln!(
            "not checked: the shipped components were built with {}, this is {}",
            recorded.trim(),
            here.trim()
        );
        return false;
    }
    true
}

#[test]
fn the_shipped_component_is_the_one_guest_builds() {
    if !built_by_this_rustc(&format!("{SHIPPED}/ask_user_tool.rustc")) {
        return;
    }
    let rebuilt = std::fs::read(env!("REBUILT_COMPONENT")).unwrap();
    assert!(
        rebuilt == ask_user::COMPONENT,
        "the component checked in at host/runtime/component/ is not what guest/ builds now \
         ({} bytes against {}): run scripts/update-component and commit the result",
        ask_user::COMPONENT.len(),
        rebuilt.len()
    );
}

#[test]
fn the_shipped_plugs_are_the_ones_plugs_builds() {
    use ask_user::plugs::Plug;
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../host/plugs");
    if !built_by_this_rustc(&format!("{shipped}/rustc")) {
        return;
    }
    for plug in Plug::ALL {
        let rebuilt = match plug {
            Plug::Inbox => env!("REBUILT_PLUG_INBOX"),
            Plug::Answers => env!("REBUILT_PLUG_ANSWERS"),
            Plug::Terminal => env!("REBUILT_PLUG_TERMINAL"),
        };
        let rebuilt = std::fs::read(rebuilt).unwrap();
        assert!(
            rebuilt == plug.component(),
            "the {} plug checked in at host/plugs/ is not what plugs/ builds now ({} bytes \
             against {}): run scripts/update-component and commit the result",
            plug.name(),
            plug.component().len(),
            rebuilt.len()
        );
    }
    let face = ask_user::plugs::Face::Wassette.component().unwrap();
    let rebuilt = std::fs::read(env!("REBUILT_WASSETTE_FACE")).unwrap();
    assert!(
        rebuilt == face,
        "the wassette face checked in at host/plugs/ is not what faces/wassette builds now: \
         run scripts/update-component and commit the result"
    );
}

/// The crates `package` builds on with `flags` (normal and build edges,
/// as an embedder's `cargo add` gets them).
fn crates_under(package: &str, flags: &[&str]) -> std::collections::BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let tree = Command::new(cargo)
        .args(["tree", "--offline", "--locked", "-p", package])
        .args(flags)
        .args(["-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .output()
        .unwrap();
    assert!(
        tree.status.success(),
        "{}",
        String::from_utf8_lossy(&tree.stderr)
    );
    String::from_utf8(tree.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn assert_without(package: &str, flags: &[&str], unwanted: &[&str]) {
    let crates = crates_under(package, flags);
    for heavy in unwanted {
        assert!(
            !crates.contains(*heavy),
            "{package} {flags:?} pulls {heavy}: {crates:?}"
        );
    }
}

/// An HTTP, database, terminal, MCP, notification or command-line crate, or
/// the build of a wasm32 guest: what only the `ask-user` command needs.
const APPLICATION: &[&str] = &[
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
];

/// What an embedder gets with `ask-user-runtime`: none of the application's
/// crates; wasmtime, with its compiler.
#[test]
fn the_runtime_crate_brings_no_network_database_or_terminal_crates() {
    assert_without("ask-user-runtime", &[], APPLICATION);
    let crates = crates_under("ask-user-runtime", &[]);
    assert!(crates.contains("wasmtime"), "{crates:?}");
    assert!(crates.contains("cranelift-codegen"), "{crates:?}");
}

/// The contract is bindings only: wasmtime's runtime without its compiler.
#[test]
fn the_contract_crate_brings_no_compiler() {
    let unwanted: Vec<&str> = APPLICATION
        .iter()
        .copied()
        .chain(["cranelift-codegen", "ask-user-runtime"])
        .collect();
    assert_without("ask-user-contract", &[], &unwanted);
}

/// Each heavy answerer is behind its feature: without them, the answerers
/// crate is script and bridge only; `terminal` brings no HTTP, `web` no
/// terminal; none brings WebAssembly.
#[test]
fn the_answerers_crate_brings_what_its_features_ask_for() {
    let wasm = ["wasmtime", "ask-user-runtime"];
    let lean: Vec<&str> = APPLICATION.iter().copied().chain(wasm).collect();
    assert_without("ask-user-answerers", &["--no-default-features"], &lean);
    let terminal = crates_under(
        "ask-user-answerers",
        &["--no-default-features", "--features", "terminal"],
    );
    assert!(terminal.contains("crossterm"), "{terminal:?}");
    assert_without(
        "ask-user-answerers",
        &["--no-default-features", "--features", "terminal"],
        &["hyper", "axum", "wasmtime"],
    );
    let web = crates_under(
        "ask-user-answerers",
        &["--no-default-features", "--features", "web"],
    );
    assert!(web.contains("axum"), "{web:?}");
    assert_without(
        "ask-user-answerers",
        &["--no-default-features", "--features", "web"],
        &["crossterm", "wasmtime", "rusqlite", "rmcp"],
    );
}
