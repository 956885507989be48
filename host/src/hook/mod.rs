//! `ask-user hook …`: the command an agent's own hooks run, so that the
//! agent's built-in question tool is answered through the user's chain of
//! answerers (the inbox, a script, a bridge) while its terminal still asks.
//!
//! Each agent is a [`HookClient`]: how its hook input is read and its
//! decision written, where its settings live and how the hooks go in and
//! out of them, and how it runs headless with its questions answered. A
//! new agent is a module implementing it and a line in [`CLIENTS`].

pub mod calls;
pub mod claude_code;
pub mod waiting;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use ask_user_inbox::Asker;
use ask_user_mcp::SubAgent;
use serde_json::{Map, Value};

use crate::CliError;
use ask_user_seam::{Answer, AskError, AskRequest};
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// The largest hook input read (a transcript path, a few questions).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Every agent whose hooks ask-user answers, by [`HookClient::name`].
pub static CLIENTS: &[&dyn HookClient] = &[&claude_code::ClaudeCode];

/// The client named `name` on the command line.
pub fn client(name: &str) -> Option<&'static dyn HookClient> {
    CLIENTS.iter().copied().find(|client| client.name() == name)
}

/// An agent whose own question tool is answered from its hooks.
pub trait HookClient: Sync {
    /// Its name on the command line (`ask-user hook claude-code`), in the
    /// ids of the asks its hooks make, and in its waiting hooks' files.
    fn name(&self) -> &'static str;

    /// What `ask-user hook <name>` does, for `--help`.
    fn about(&self) -> &'static str;

    /// Its settings file when none is given.
    fn settings_path(&self) -> Option<PathBuf>;

    /// Adds the hooks that run `program` to the settings at `path`,
    /// merged with what is there; false when they were there already.
    /// With `state` (a folder of this user's), what the file was is kept
    /// there, for [`HookClient::uninstall`] to put back.
    fn install(&self, path: &Path, program: &Path, state: Option<&Path>) -> io::Result<bool>;

    /// Takes out exactly what [`HookClient::install`] added; false when
    /// there was nothing of ours.
    fn uninstall(&self, path: &Path, state: Option<&Path>) -> io::Result<bool>;

    /// Answers one hook event, `input` being what the client wrote on the
    /// hook's standard input: what to print on standard output (the
    /// client's decision), if anything.
    fn hook<'a>(
        &'a self,
        input: &'a [u8],
        answerers: &'a dyn Answerers,
        stop: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<String>, CliError>>;

    /// The sub-agent that made an MCP call of this client's to `ask-user
    /// mcp` (the call's `_meta`), as its hooks noted it; `None` for a main
    /// agent's call, or when the client cannot tell (the default).
    fn sub_agent(&self, _meta: &Map<String, Value>) -> Option<SubAgent> {
        None
    }

    /// The program [`HookClient::headless`] runs when none is given.
    fn program(&self) -> &'static str;

    /// Runs the client headless on `run.prompt`, its questions asked
    /// through `answerers` and answered back, until it ends or `stop`;
    /// prints its last message (or its JSON lines). Whether it succeeded.
    fn headless<'a>(
        &'a self,
        run: Headless,
        answerers: &'a dyn Answerers,
        stop: CancellationToken,
    ) -> BoxFuture<'a, Result<bool, CliError>>;
}

/// A headless run of a client.
pub struct Headless {
    /// What the client is asked to do.
    pub prompt: String,
    /// The client's program.
    pub program: PathBuf,
    /// Print every line of the run's JSON stream, not only its last message.
    pub json: bool,
    /// More of the client's own flags.
    pub flags: Vec<OsString>,
}

/// What the user's answerers made of an ask: `None` when none but the
/// terminal is configured, else the answers or why none came.
pub type Reply = Option<Result<Vec<Answer>, AskError>>;

/// The user's answerers as a hook asks them: every one of the user's
/// config but the terminal, which the agent has. The `ask-user` command
/// gives them (it builds the host).
pub trait Answerers: Sync {
    /// Asks `request` on behalf of `client`, shown as `asker`, until
    /// `stop`; `session` is the client's own session, which groups its
    /// questions in the inbox (none: a session of this ask alone).
    /// `Ok(None)`: no answerer but the terminal is configured.
    fn ask<'a>(
        &'a self,
        client: &'a dyn HookClient,
        session: Option<&'a str>,
        asker: Asker,
        request: AskRequest,
        stop: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Reply, CliError>>;

    /// Tells the human one line (on standard error).
    fn say(&self, line: &str);
}

/// The inbox session of a client's `session` (`claude-code-<its id>`), so
/// that every question of one run of the client shows together; a fresh
/// one for none, or for an id that is not a plain token of at most 128
/// letters, digits, `-` and `_` (it comes from the client's hook input).
pub fn session_key(client: &dyn HookClient, session: Option<&str>) -> std::io::Result<String> {
    let prefix = format!("{}-", client.name());
    match session {
        Some(id)
            if !id.is_empty()
                && id.len() <= 128
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Ok(format!("{prefix}{id}"))
        }
        _ => ask_user_seam::secret::id(&prefix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_session_groups_its_questions_unless_it_is_not_a_plain_token() {
        let client = &claude_code::ClaudeCode;
        let id = "0b9d3c6e-2f41-4a7e-9d55-1f0c8a7b6e21";
        assert_eq!(
            session_key(client, Some(id)).unwrap(),
            format!("claude-code-{id}")
        );
        for odd in [
            None,
            Some(""),
            Some("a b"),
            Some("../x"),
            Some(&*"x".repeat(129)),
        ] {
            let key = session_key(client, odd).unwrap();
            assert!(
                key.starts_with("claude-code-") && key.len() == 12 + 32,
                "{key}"
            );
            assert_ne!(key, session_key(client, odd).unwrap(), "fresh each time");
        }
    }
}
