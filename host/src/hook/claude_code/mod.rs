//! Claude Code: its `PermissionRequest` hook answers the built-in
//! `AskUserQuestion` tool, its `Elicitation` hook an MCP server's form, and
//! its `PostToolUse` hook stops the hooks still asking a batch answered at
//! the terminal first; its `PreToolUse` hook for our own MCP tool notes
//! which sub-agent calls it, for `ask-user mcp` ([`calls`]). `claude -p`
//! runs headless with its questions answered over its stdio protocol.

mod headless;
mod input;
mod settings;

use std::path::{Path, PathBuf};

use ask_user_mcp::SubAgent;
use ask_user_seam::ErrorCode;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::{Answerers, Headless, HookClient, Way, calls, waiting};
use crate::CliError;

pub use headless::SERVED_ENV;
pub use input::{Ask, Asked, HookEvent, asker, fingerprint};

/// Claude Code.
pub struct ClaudeCode;

/// The name Claude Code's hooks go by: the command's, and the waiting
/// hooks' files'.
const NAME: &str = "claude-code";

impl HookClient for ClaudeCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "What Claude Code's hooks run: reads the hook's JSON on standard input and, for an \
         AskUserQuestion or an MCP server's form, asks your answerers (never the terminal: \
         Claude Code has it) and prints the answers as the hook's output. Nothing answered, \
         nothing printed: Claude Code asks at its terminal."
    }

    fn ways(&self) -> &'static [Way] {
        &[Way::Hooks, Way::Headless]
    }

    fn settings_path(&self) -> Option<PathBuf> {
        settings::default_path()
    }

    fn install(&self, path: &Path, program: &Path, state: Option<&Path>) -> std::io::Result<bool> {
        settings::install(path, &settings::command(program), state)
    }

    fn uninstall(&self, path: &Path, state: Option<&Path>) -> std::io::Result<bool> {
        settings::uninstall(path, state)
    }

    fn hook<'a>(
        &'a self,
        input: &'a [u8],
        answerers: &'a dyn Answerers,
        stop: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<String>, CliError>> {
        hook(input, answerers, stop).boxed()
    }

    fn program(&self) -> &'static str {
        "claude"
    }

    fn sub_agent(&self, meta: &Map<String, Value>) -> Option<SubAgent> {
        let call = meta.get("claudecode/toolUseId")?.as_str()?;
        calls::read(&ask_user_inbox::state_dir()?, NAME, call)
    }

    fn headless<'a>(
        &'a self,
        run: Headless,
        answerers: &'a dyn Answerers,
        stop: CancellationToken,
    ) -> BoxFuture<'a, Result<bool, CliError>> {
        headless::run(run, answerers, stop).boxed()
    }
}

/// One hook event of Claude Code's.
async fn hook(
    input: &[u8],
    answerers: &dyn Answerers,
    stop: CancellationToken,
) -> Result<Option<String>, CliError> {
    let input: HookEvent = serde_json::from_slice(input).map_err(|e| {
        CliError::new(format!(
            "the hook's input is not what Claude Code sends: {e}"
        ))
    })?;
    let state_dir = ask_user_inbox::state_dir();
    if let Some((call, sub)) = input.our_tool_call() {
        // Told to `ask-user mcp` when the call comes ([`calls`]): a
        // sub-agent's call noted, and a main agent's clearing any note left
        // under the same id (another session's, where ids repeat).
        if let Some(state_dir) = &state_dir {
            match sub {
                Some(sub) => calls::note(state_dir, NAME, call, &sub)?,
                None => calls::forget(state_dir, NAME, call)?,
            }
        }
        return Ok(None);
    }
    if let Some((session, batch)) = input.answered() {
        // Answered at the terminal first: the hooks still asking it
        // elsewhere stop, withdrawing their questions.
        if let Some(state_dir) = &state_dir {
            waiting::answered_elsewhere(state_dir, NAME, session, &batch)?;
        }
        return Ok(None);
    }
    let asked = match Ask::from_hook(&input).map_err(CliError::new)? {
        // A headless run this command serves answers its own.
        Some(Ask::Questions(_)) if std::env::var_os(SERVED_ENV).is_some() => return Ok(None),
        Some(asked) => asked,
        // Another event, another tool, a form we cannot show: not ours.
        None => return Ok(None),
    };
    let mut asker = input.asker();
    // A form `ask-user mcp` made for a sub-agent says which: so does the
    // inbox, as it does for the sub-agent's call itself.
    if let Ask::Form(form) = &asked
        && let Some(chain) = &form.asked_by
    {
        asker.agent = ask_user_inbox::sub_agents_label(&asker.agent, chain);
    }
    // Claude Code stops a hook it no longer waits for (Esc at its form, the
    // turn interrupted, Claude Code quitting): the person left the question
    // there. Killed (or crashed), it stops nothing: the hook sees that
    // nobody reads its answer.
    // The reason is set before the ask hears of the stop.
    let asking = CancellationToken::new();
    {
        let (reason, asking) = (asker.stop_reason.clone(), asking.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => reason.set("dismissed in Claude Code"),
                () = super::reader_gone() => reason.set("Claude Code ended"),
            }
            asking.cancel();
        });
    }
    let stop = asking;
    // Told by the session's next hook if the terminal answers first
    // (Claude Code leaves this one running): listening before it
    // registers, and registered before the answerers start, so that it
    // can be stopped as soon as anything of it shows.
    let _waiting = match (&state_dir, input.session_id(), &asked) {
        (Some(state_dir), Some(session), Ask::Questions(questions)) => {
            let mut told = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(
                waiting::ANSWERED_ELSEWHERE,
            ))?;
            let (reason, stop) = (asker.stop_reason.clone(), stop.clone());
            tokio::spawn(async move {
                told.recv().await;
                reason.set("answered in Claude Code");
                stop.cancel();
            });
            Some(waiting::Waiting::register(
                state_dir,
                NAME,
                session,
                &questions.fingerprint(),
            )?)
        }
        _ => None,
    };
    let request = asked.request().clone();
    Ok(
        match answerers
            .ask(&ClaudeCode, input.session_id(), asker, request, &stop)
            .await?
        {
            Some(Ok(answers)) => Some(asked.output(&answers).to_string()),
            // The person will not answer: Claude Code is told so, and its
            // terminal does not ask them again.
            Some(Err(error))
                if !stop.is_cancelled() && error.code() == Some(&ErrorCode::AskCancelled) =>
            {
                Some(asked.dismissed().to_string())
            }
            // Not answered here: the terminal still asks.
            Some(Err(error)) => {
                answerers.say(&format!("not answered through ask-user: {error}"));
                None
            }
            None => None,
        },
    )
}
