//! `ask-user hook …`: the command an agent's own hooks run, so that the
//! agent's built-in question tool is answered through the user's chain of
//! answerers (the inbox, a script, a bridge) while its terminal still asks.
//!
//! Each agent is a [`HookClient`]: how its hook input is read and its
//! decision written, where its settings live and how the hooks go in and
//! out of them, how it runs headless with its questions answered, and, for
//! an agent whose questions reach no hook but its app protocol (Codex), how
//! its own UI runs with them answered through the chain too
//! ([`HookClient::attached`]). A new agent is a module implementing it and
//! a line in [`CLIENTS`].

pub mod calls;
pub mod claude_code;
pub mod codex;
pub mod opencode;
pub mod quiet;
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
pub static CLIENTS: &[&dyn HookClient] =
    &[&claude_code::ClaudeCode, &codex::Codex, &opencode::OpenCode];

/// The client named `name` on the command line.
pub fn client(name: &str) -> Option<&'static dyn HookClient> {
    CLIENTS.iter().copied().find(|client| client.name() == name)
}

/// How `ask-user hook` reaches an agent's own questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Its hooks ask (`install`, `uninstall`, `hook <name>`).
    Hooks,
    /// A headless run of it answers them (`hook headless`).
    Headless,
    /// Its own UI runs on a protocol of which we are a second client
    /// (`hook run`).
    Attached,
}

/// An agent whose own question tool is answered through the chain: from
/// its hooks, a headless run of it, or beside its own UI. It implements the
/// methods of its [`ways`](HookClient::ways); the command offers it for
/// those only, and the others say so.
pub trait HookClient: Sync {
    /// Its name on the command line (`ask-user hook claude-code`), in the
    /// ids of the asks its hooks make, and in its waiting hooks' files.
    fn name(&self) -> &'static str;

    /// What `ask-user hook <name>` does (a client with hooks), or
    /// `ask-user hook run <name>` (one run beside its UI), for `--help`.
    fn about(&self) -> &'static str;

    /// How its questions are reached.
    fn ways(&self) -> &'static [Way];

    /// Its settings file when none is given.
    fn settings_path(&self) -> Option<PathBuf> {
        None
    }

    /// Adds the hooks that run `program` to the settings at `path`,
    /// merged with what is there; false when they were there already.
    /// With `state` (a folder of this user's), what the file was is kept
    /// there, for [`HookClient::uninstall`] to put back.
    fn install(&self, _path: &Path, _program: &Path, _state: Option<&Path>) -> io::Result<bool> {
        Err(io::Error::other(not_its_way(
            self.name(),
            "hooks to install",
        )))
    }

    /// Takes out exactly what [`HookClient::install`] added; false when
    /// there was nothing of ours.
    fn uninstall(&self, _path: &Path, _state: Option<&Path>) -> io::Result<bool> {
        Err(io::Error::other(not_its_way(
            self.name(),
            "hooks to uninstall",
        )))
    }

    /// Answers one hook event, `input` being what the client wrote on the
    /// hook's standard input: what to print on standard output (the
    /// client's decision), if anything.
    fn hook<'a>(
        &'a self,
        _input: &'a [u8],
        _answerers: &'a dyn Answerers,
        _stop: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<String>, CliError>> {
        let why = not_its_way(self.name(), "hook events");
        Box::pin(async move { Err(CliError::new(why)) })
    }

    /// The sub-agent that made an MCP call of this client's to `ask-user
    /// mcp` (the call's `_meta`), as its hooks noted it; `None` for a main
    /// agent's call, or when the client cannot tell (the default).
    fn sub_agent(&self, _meta: &Map<String, Value>) -> Option<SubAgent> {
        None
    }

    /// The program [`HookClient::headless`] and [`HookClient::attached`]
    /// run when none is given.
    fn program(&self) -> &'static str;

    /// Runs the client headless on `run.prompt`, its questions asked
    /// through `answerers` and answered back, until it ends or `stop`;
    /// prints its last message (or its JSON lines). Whether it succeeded.
    fn headless<'a>(
        &'a self,
        _run: Headless,
        _answerers: &'a dyn Answerers,
        _stop: CancellationToken,
    ) -> BoxFuture<'a, Result<bool, CliError>> {
        let why = not_its_way(self.name(), "headless runs");
        Box::pin(async move { Err(CliError::new(why)) })
    }

    /// Runs the client's own UI (`run.program` with `run.flags`) with its
    /// questions asked through `answerers` too, the first answer winning,
    /// until the UI ends; whether it succeeded.
    fn attached<'a>(
        &'a self,
        _run: Attached,
        _answerers: &'a dyn Answerers,
        _stop: CancellationToken,
    ) -> BoxFuture<'a, Result<bool, CliError>> {
        let why = not_its_way(self.name(), "runs beside its own UI");
        Box::pin(async move { Err(CliError::new(why)) })
    }
}

/// Why client `name` is not reached that way.
fn not_its_way(name: &str, what: &str) -> String {
    let how = match client(name).map(|client| client.ways()) {
        Some([Way::Attached, ..]) => format!("run it as `ask-user hook run {name}`"),
        _ => format!("run `ask-user hook install {name}`"),
    };
    format!("{name} has no {what} of ask-user's: {how}")
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

/// A run of a client's own UI ([`HookClient::attached`]).
pub struct Attached {
    /// The client's program.
    pub program: PathBuf,
    /// The client's own flags.
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

/// An option of an agent's own question tool, as Claude Code, Codex and
/// OpenCode each send it: a label, and maybe a description.
#[derive(serde::Deserialize)]
pub struct AgentOption {
    label: String,
    #[serde(default)]
    description: Option<String>,
}

impl From<AgentOption> for ask_user_seam::QuestionOption {
    fn from(option: AgentOption) -> Self {
        let mut ours = ask_user_seam::QuestionOption::new(option.label);
        ours.description = option.description;
        ours
    }
}

/// The folder of `client`'s runs beside its UI, in the state folder: this
/// user's only.
pub fn run_dir(client: &str) -> Result<PathBuf, CliError> {
    let state_dir = ask_user_inbox::state_dir()
        .ok_or_else(|| CliError::new("no home folder: set ASK_USER_STATE_DIR"))?;
    let dir = ask_user_seam::files::private_dir(&state_dir)?;
    Ok(ask_user_seam::files::private_dir(&dir.join(client))?)
}

/// How long a process told to stop (SIGTERM) has before it is killed.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Ends `child`, an agent's UI in the terminal's process group: SIGTERM,
/// which a launcher forwards to what it runs, then after [`GRACE`] SIGKILL.
pub async fn end_gently(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        // SAFETY: a plain system call on our own child, not yet reaped.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// Waits while an agent's UI runs beside `watched`, the watch of its
/// questions: until the UI ends (whether it succeeded), or until `stop`,
/// which ends the UI gently (`false`). A stop goes first: the watch ends
/// with it, and waiting for the UI then would wait for ever.
pub async fn until_the_ui_ends(
    ui: &mut tokio::process::Child,
    watched: impl std::future::Future<Output = ()>,
    stop: &CancellationToken,
) -> std::io::Result<bool> {
    tokio::select! {
        biased;
        () = stop.cancelled() => {
            end_gently(ui).await;
            Ok(false)
        }
        status = ui.wait() => Ok(status?.success()),
        () = watched => Ok(ui.wait().await?.success()),
    }
}

/// Resolves when nobody reads this process's standard output any more (a
/// pipe whose reading end closed: the client that ran the hook was killed
/// or crashed), checked every second. Its answer would go nowhere: the
/// hook stops asking, rather than wait out its timeout (a day). Output to
/// a terminal or a file never resolves it.
pub async fn reader_gone() {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        every.tick().await;
        let mut output = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: 0,
            revents: 0,
        };
        // SAFETY: one pollfd of ours, not waited on (timeout 0).
        let ready = unsafe { libc::poll(&mut output, 1, 0) };
        if ready > 0 && output.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            return;
        }
    }
}

/// What the inbox shows as asking: the agent, and for a form the MCP
/// server's name, in the folder it works in (`cwd`, which the inbox shows
/// beside it); `when_down`, what its ask does when no inbox runs.
pub fn asker(
    agent: &str,
    cwd: Option<&str>,
    mcp_server: Option<&str>,
    when_down: ask_user_inbox::WhenDown,
) -> Asker {
    let agent = match mcp_server {
        Some(server) => format!("{agent} · {server}"),
        None => agent.to_owned(),
    };
    Asker {
        agent,
        cwd: cwd.map(str::to_owned),
        stop_reason: Default::default(),
        when_down,
    }
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
