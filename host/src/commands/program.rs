//! Where this command runs from, for what is written down to run it later:
//! a client's hooks and the inbox's service. A copy that will not stay is
//! refused, saying how to install one that does: one in a cache (a package
//! runner's: `npx`, `pnpm dlx`, `uvx`, `pipx run`; any tool's cache may be
//! emptied at any time), or a package's copy in a temporary folder (`bunx`,
//! `yarn dlx`). It is told by where the binary lives, not by which runner
//! put it there.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use super::{CliError, Context};

/// This command's path, when it is there to stay.
pub fn lasting() -> Result<PathBuf, CliError> {
    let program = std::env::current_exe().context(|| "cannot tell where ask-user is".to_owned())?;
    let temporary = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into()];
    match fleeting(&program, &temporary) {
        None => Ok(program),
        Some(Fleeting { from, install }) => Err(CliError::new(format!(
            "this ask-user runs from {from} ({}), which may be emptied at any time, and what \
             this writes runs it later: install one to keep ({install}) and run this again \
             with it",
            program.display()
        ))),
    }
}

/// Why a copy will not stay: where it runs from, and what installs one
/// that does.
#[derive(Debug, PartialEq)]
struct Fleeting {
    from: &'static str,
    install: &'static str,
}

/// Whether `program` will not stay: in a cache (a folder named `.cache`,
/// `Caches` or `_cacache`, npm's `_npx`, pnpm's `dlx`, uv's `archive-v…`),
/// or a package's copy (under `node_modules` or `site-packages`) in one of
/// the `temporary` folders.
fn fleeting(program: &Path, temporary: &[PathBuf]) -> Option<Fleeting> {
    let names: Vec<&str> = program
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => OsStr::to_str(name),
            _ => None,
        })
        .collect();
    let has = |found: fn(&str) -> bool| names.iter().any(|name| found(name));
    let cached = has(|name| {
        matches!(name, ".cache" | "Caches" | "_cacache" | "_npx" | "dlx")
            || name.starts_with("archive-v")
    });
    let package = has(|name| matches!(name, "node_modules" | "site-packages"));
    let temporary = temporary.iter().any(|folder| program.starts_with(folder));
    if !(cached || package && temporary) {
        return None;
    }
    // Which runner, where the path says, for the command to keep one.
    let runner = [
        (
            has(|n| n == "_npx"),
            "npx's cache",
            "npm install -g ask-user",
        ),
        (
            has(|n| n == "dlx" || n.starts_with("dlx-")) && !has(|n| n.starts_with("xfs-")),
            "pnpm dlx's cache",
            "pnpm add -g ask-user",
        ),
        (
            has(|n| n.starts_with("bunx-")),
            "a bunx copy in a temporary folder",
            "bun add -g ask-user",
        ),
        (
            has(|n| n.starts_with("xfs-")),
            "a yarn dlx copy in a temporary folder",
            "npm install -g ask-user",
        ),
        (
            has(|n| n.starts_with("archive-v")),
            "uvx's cache",
            "uv tool install ask-user",
        ),
        (
            has(|n| n == "pipx"),
            "pipx run's cache",
            "pipx install ask-user",
        ),
    ]
    .into_iter()
    .find(|(found, ..)| *found);
    Some(match runner {
        Some((_, from, install)) => Fleeting { from, install },
        None => Fleeting {
            from: match cached {
                true => "a cache",
                false => "a package's copy in a temporary folder",
            },
            install: "npm install -g ask-user, uv tool install ask-user or pipx install ask-user",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_that_will_not_stay_is_told_from_an_installed_one() {
        let temporary = [PathBuf::from("/tmp"), PathBuf::from("/var/folders/x1/T")];
        let cases = [
            (
                "/home/a/.npm/_npx/1f2e/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                Some("npm install -g ask-user"),
            ),
            (
                "/home/a/.cache/pnpm/dlx/4bd2/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                Some("pnpm add -g ask-user"),
            ),
            (
                "/tmp/bunx-1000-ask-user@0.1.0/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                Some("bun add -g ask-user"),
            ),
            (
                "/tmp/xfs-8d2a1c3b/dlx-4242/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                Some("npm install -g ask-user"),
            ),
            (
                "/var/folders/x1/T/dlx-977/node_modules/.bin/ask-user",
                Some("pnpm add -g ask-user"),
            ),
            (
                "/home/a/.cache/uv/archive-v0/XyZ/bin/ask-user",
                Some("uv tool install ask-user"),
            ),
            (
                "/home/a/.cache/pipx/8c1d/bin/ask-user",
                Some("pipx install ask-user"),
            ),
            (
                "/home/a/.local/pipx/.cache/8c1d/bin/ask-user",
                Some("pipx install ask-user"),
            ),
            (
                "/home/a/Library/Caches/some-runner/ask-user",
                Some("npm install -g ask-user, uv tool install ask-user or pipx install ask-user"),
            ),
            (
                "/tmp/runner-77/lib/python3.12/site-packages/ask_user/bin/ask-user",
                Some("npm install -g ask-user, uv tool install ask-user or pipx install ask-user"),
            ),
            ("/home/a/.local/bin/ask-user", None),
            ("/home/a/.local/share/uv/tools/ask-user/bin/ask-user", None),
            ("/home/a/.local/pipx/venvs/ask-user/bin/ask-user", None),
            (
                "/home/a/.bun/install/global/node_modules/ask-user/bin/ask-user",
                None,
            ),
            (
                "/usr/local/lib/node_modules/ask-user/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                None,
            ),
            ("/home/a/.cargo/bin/ask-user", None),
            ("/home/a/src/_npx-notes/ask-user", None),
            // A build in a checkout under /tmp is no package's copy.
            ("/tmp/ask-user/target/debug/ask-user", None),
        ];
        for (path, install) in cases {
            assert_eq!(
                fleeting(Path::new(path), &temporary).map(|f| f.install),
                install,
                "{path}"
            );
        }
    }
}
