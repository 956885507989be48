//! The `ask-user` command's subcommands, one module each, and what they
//! share: the one-line messages, the JSON on standard output, the config
//! file and the host they start.

pub mod ask;
pub mod component;
pub mod form;
pub mod help;
pub mod hook;
pub mod inbox;
mod listing;
pub mod logging;
mod phone;
mod program;
#[cfg(test)]
mod reference;
pub mod serve;
mod service;
mod signals;
pub mod token;

use std::path::Path;

use ask_user::answerers::ready;
use ask_user::answerers::terminal::TerminalAnswerer;
use ask_user::config::Registries;
use ask_user::{AnswererEntry, CodeCache, Config, Host, HostBuilder};

pub use ask_user::{CliError, Context};
pub use signals::{stop_requested, stop_signal};

/// What a command returns: its exit status, or why it failed.
pub type Exit = Result<std::process::ExitCode, CliError>;

/// Says why a command failed, on one line; its exit status.
pub fn report(error: CliError) -> std::process::ExitCode {
    say(&error.line());
    std::process::ExitCode::from(CliError::STATUS)
}

/// The `--component` file's bytes, run instead of the built-in component.
pub type Component = Option<Vec<u8>>;

/// Builds the host (`component` instead of the built-in one when given)
/// and says what its answerers asked to tell the human. The compiled
/// component comes from the user's cache (docs/src/performance.md): the
/// command starts in milliseconds instead of compiling it each time.
pub async fn start(builder: HostBuilder, component: Component) -> Result<Host, CliError> {
    let builder = match component {
        Some(component) => builder.component(component),
        None => builder,
    };
    let builder = match CodeCache::user_default() {
        Some(cache) => builder.code_cache(cache),
        None => builder,
    };
    let host = builder.build().await?;
    for notice in host.notices() {
        say(notice);
    }
    Ok(host)
}

/// The `--config` file; else the user's config file when it exists; else
/// the terminal alone.
pub fn load_config(path: Option<&Path>) -> Result<Config, CliError> {
    let mut config = user_config(path, &Registries::builtin())?.unwrap_or_default();
    // A file that names no answerer (only `[inbox.notify]`, say) leaves
    // the terminal where it was.
    if config.answerers.is_empty() {
        config.answerers.push(AnswererEntry::new(
            "terminal",
            ready(TerminalAnswerer::new()),
        ));
    }
    Ok(config)
}

/// The `--config` file; else the user's config file when it exists; else
/// none.
pub fn user_config(
    path: Option<&Path>,
    registries: &Registries,
) -> Result<Option<Config>, CliError> {
    let path = match path {
        Some(path) => Some(path.to_owned()),
        None => Config::default_path().filter(|p| p.exists()),
    };
    Ok(path
        .map(|path| Config::load_with(&path, registries))
        .transpose()?)
}

/// Writes `value` as JSON to standard output. A closed or full output is a
/// one-line error (exit 2), never a panic.
pub fn emit(value: &impl serde::Serialize) -> Result<(), CliError> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value).expect("results are plain JSON");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .context(|| "cannot write the result to standard output".to_owned())
}

/// One line to standard error, for the human; dropped when nobody reads it.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "ask-user: {line}");
}
