//! Where this command runs from, for what is written down to run it later:
//! a client's hooks and the inbox's service. A package runner's copy
//! (`npx ask-user`, `uvx ask-user`, `pipx run ask-user`) lives in a cache
//! its tool may empty at any time, so it is refused, saying how to install
//! a lasting one.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use super::CliError;

/// This command's path, when it is there to stay.
pub fn lasting() -> Result<PathBuf, CliError> {
    let program = std::env::current_exe()
        .map_err(|e| CliError::new(format!("cannot tell where ask-user is: {e}")))?;
    match runner(&program) {
        None => Ok(program),
        Some(runner) => Err(CliError::new(format!(
            "this ask-user runs from {runner}'s cache ({}), which may be emptied at any time, and \
             what this writes runs it later: install one to keep (npm install -g ask-user, \
             uv tool install ask-user or pipx install ask-user) and run this again with it",
            program.display()
        ))),
    }
}

/// The package runner whose one-off copy `program` is, if it is one: npm's
/// (`~/.npm/_npx/<hash>/…`), uv's (`~/.cache/uv/archive-v0/<hash>/…`) or
/// pipx's (`~/.cache/pipx/<hash>/…`, or `$PIPX_HOME/.cache/<hash>/…`).
fn runner(program: &Path) -> Option<&'static str> {
    let names: Vec<&OsStr> = program
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    names.windows(2).find_map(|pair| {
        let [parent, name] = [pair[0].to_str()?, pair[1].to_str()?];
        match (parent, name) {
            (_, "_npx") => Some("npx"),
            ("uv", archive) if archive.starts_with("archive-v") => Some("uvx"),
            (".cache", "pipx") | ("pipx", ".cache") => Some("pipx run"),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_runners_copy_is_told_from_an_installed_one() {
        let cases = [
            (
                "/home/a/.npm/_npx/1f2e/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                Some("npx"),
            ),
            ("/home/a/.cache/uv/archive-v0/XyZ/bin/ask-user", Some("uvx")),
            ("/home/a/.cache/pipx/8c1d/bin/ask-user", Some("pipx run")),
            (
                "/home/a/.local/pipx/.cache/8c1d/bin/ask-user",
                Some("pipx run"),
            ),
            ("/home/a/.local/bin/ask-user", None),
            ("/home/a/.local/share/uv/tools/ask-user/bin/ask-user", None),
            ("/home/a/.local/pipx/venvs/ask-user/bin/ask-user", None),
            (
                "/usr/local/lib/node_modules/ask-user/node_modules/@ask-user/linux-x64-gnu/bin/ask-user",
                None,
            ),
            ("/home/a/.cargo/bin/ask-user", None),
            ("/home/a/src/_npx-notes/ask-user", None),
        ];
        for (path, expected) in cases {
            assert_eq!(runner(Path::new(path)), expected, "{path}");
        }
    }
}
