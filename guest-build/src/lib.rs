//! Builds a workspace crate as a `wasm32-wasip2` component from a build
//! script, so that `cargo build` and `cargo test` stay single commands.
//!
//! It runs a nested `cargo build --target wasm32-wasip2 --profile guest` with
//! its own target directory (as wasmtime's own test programs do), adding the
//! `wasm32-wasip2` target through rustup first when it is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// Builds `package` and returns the path of its component. Call from a
/// build script; it prints the `rerun-if-changed` lines for `sources`
/// (paths relative to the workspace root).
pub fn build_component(package: &str, sources: &[&str]) -> PathBuf {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run from a build script"));
    let workspace = workspace_root(&manifest_dir);
    for source in sources.iter().chain(&["Cargo.lock", "Cargo.toml"]) {
        println!(
            "cargo:rerun-if-changed={}",
            workspace.join(source).display()
        );
    }
    ensure_target();

    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"))
        .join("wasm-guests");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(&workspace)
        .args([
            "build",
            "--quiet",
            "--locked",
            "--profile",
            "guest",
            "--target",
            TARGET,
            "-p",
            package,
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's settings (its target, flags, profile, features) are
    // for the host, not for the guest.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if (key.starts_with("CARGO_") && key != "CARGO_HOME")
            || key.starts_with("RUSTFLAGS")
            || key == "RUSTC_WORKSPACE_WRAPPER"
        {
            command.env_remove(&*key);
        }
    }
    let status = command.status().expect("running cargo for the guest");
    assert!(
        status.success(),
        "building the {package} component for {TARGET} failed (see above)"
    );

    target_dir
        .join(TARGET)
        .join("guest")
        .join(format!("{}.wasm", package.replace('-', "_")))
}

fn workspace_root(manifest_dir: &Path) -> PathBuf {
    manifest_dir
        .ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|toml| toml.contains("[workspace]"))
        })
        .expect("a workspace root above the crate")
        .to_owned()
}

/// A fresh toolchain has no `wasm32-wasip2` standard library: add it.
fn ensure_target() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("running rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(TARGET).exists() {
        return;
    }
    println!(
        "cargo:warning=adding the {TARGET} target with rustup (needed to build the tool component)"
    );
    let added = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        added,
        "the {TARGET} target is missing and `rustup target add {TARGET}` failed; add it by hand"
    );
}
