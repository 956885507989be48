//! Codex: its own question tool (`request_user_input`, Plan mode) reaches
//! no hook, but its app server sends each question to every client of the
//! thread (`item/tool/requestUserInput`) and takes the first answer,
//! telling the others (`serverRequest/resolved`). So `ask-user hook run
//! codex` runs Codex's own terminal UI on an app server of its own (`codex
//! app-server --listen unix://…`, the UI with `--remote`), and is a second
//! client of it: each question is asked through the user's answerers too
//! (the inbox, a script…) while Codex's UI shows it, and whichever answers
//! first wins; the other is withdrawn.

mod app_server;
mod group;
mod questions;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::quiet::Quiet;
use super::{Answerers, Attached, HookClient, Way};
use crate::{CliError, Context};
use app_server::{Event, Incoming, Notification, Outgoing, RequestId, Turn};
use ask_user_inbox::StopReason;
use ask_user_seam::ErrorCode;
use questions::Asked;

/// Codex.
pub struct Codex;

/// Its name on the command line, in the inbox's sessions.
const NAME: &str = "codex";

/// How long the app server may take to listen.
const START_BOUND: Duration = Duration::from_secs(30);

impl HookClient for Codex {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "Codex's own UI, on an app server of ours: its questions (request_user_input) are asked \
         through your answerers too, and the first answer wins."
    }

    fn ways(&self) -> &'static [Way] {
        &[Way::Attached]
    }

    fn program(&self) -> &'static str {
        "codex"
    }

    fn attached<'a>(
        &'a self,
        run: Attached,
        answerers: &'a dyn Answerers,
        stop: CancellationToken,
    ) -> BoxFuture<'a, Result<bool, CliError>> {
        attached(run, answerers, stop).boxed()
    }
}

/// Runs Codex's UI on an app server of its own, and answers its questions
/// through `answerers` too, until the UI ends.
async fn attached(
    run: Attached,
    answerers: &dyn Answerers,
    stop: CancellationToken,
) -> Result<bool, CliError> {
    let dir = super::run_dir(NAME)?;
    // One run's own socket and logs: two runs at once never share them.
    let run_id = std::process::id();
    let socket = dir.join(format!("app-server-{run_id}.sock"));
    let _ = std::fs::remove_file(&socket);
    let server_log = dir.join(format!("app-server-{run_id}.log"));
    let log = std::fs::File::create(&server_log)
        .context(|| format!("cannot make the app server's log {}", server_log.display()))?;
    let server = tokio::process::Command::new(&run.program)
        .arg("app-server")
        .arg("--listen")
        .arg(format!("unix://{}", socket.display()))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        // Its own group, ended whole (see `group`).
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .context(|| format!("cannot run {}", run.program.display()))?;
    let mut server = group::Group::led_by(server)
        .context(|| "cannot watch Codex's app server (/bin/sh)".to_owned())?;
    let (outgoing, incoming) = tokio::select! {
        connected = connect(&socket) => connected?,
        status = server.leader().wait() => {
            return Err(CliError::new(format!(
                "Codex's app server ended at start ({}); see {}",
                status?, server_log.display()
            )));
        }
    };
    // Codex's UI has the terminal: what this process says goes to a log
    // while it runs (the UI keeps the terminal's standard error).
    let quiet = Quiet::start(&dir, "Codex")?;
    let mut ui = tokio::process::Command::new(&run.program)
        .arg("--remote")
        .arg(format!("unix://{}", socket.display()))
        .args(&run.flags)
        .stderr(quiet.terminal()?)
        .kill_on_drop(true)
        .spawn()
        .context(|| format!("cannot run {}", run.program.display()))?;
    // The session Codex's UI last started, to go on with after this run.
    let session = std::sync::Mutex::new(None);
    let watched = watch(outgoing, incoming, answerers, &session, stop.child_token());
    let ended = super::until_the_ui_ends(&mut ui, watched, &stop).await?;
    quiet.end(answerers);
    server.end().await;
    let _ = std::fs::remove_file(&socket);
    // Codex's UI names the app server's socket to reconnect to, which is
    // gone with this run: the way back is a run of ours.
    if let Some(session) = session.into_inner().unwrap_or_else(|e| e.into_inner()) {
        answerers.say(&format!(
            "the app server Codex names ended with this run; to go on with this session, \
             run: ask-user hook run codex -- resume {session}"
        ));
    }
    // Codex's own log is kept only when it failed at start (above).
    let _ = std::fs::remove_file(&server_log);
    Ok(ended)
}

/// The app server at `socket`, once it listens (within [`START_BOUND`]).
async fn connect(
    socket: &Path,
) -> Result<(Outgoing, tokio::sync::mpsc::Receiver<Incoming>), CliError> {
    let start = std::time::Instant::now();
    loop {
        match app_server::connect(socket, "ask_user").await {
            Ok(connected) => return Ok(connected),
            Err(error) if start.elapsed() > START_BOUND => {
                return Err(CliError::new(format!(
                    "Codex's app server did not listen at {} within {START_BOUND:?}: {error}",
                    socket.display()
                )));
            }
            // Not listening yet: it binds the socket a moment after start.
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Joins every thread of the app server and asks each of its questions
/// through `answerers`, until the server closes or `stop`; keeps in
/// `session` the last thread started that Codex keeps (not an ephemeral
/// one, such as its title's).
async fn watch(
    outgoing: Outgoing,
    mut incoming: tokio::sync::mpsc::Receiver<Incoming>,
    answerers: &dyn Answerers,
    session: &std::sync::Mutex<Option<String>>,
    stop: CancellationToken,
) {
    let mut joined: HashSet<String> = HashSet::new();
    let mut joining: HashMap<u64, String> = HashMap::new();
    // The questions being asked, by the app server's request id: how to
    // withdraw each, what the inbox is told when Codex settled it first, and
    // the turn that asked it.
    let mut asking: HashMap<RequestId, Asking> = HashMap::new();
    let mut next_id = 1;
    let mut asks = futures_util::stream::FuturesUnordered::new();
    loop {
        let message = tokio::select! {
            message = incoming.recv() => message,
            Some(dismissed) = futures_util::StreamExt::next(&mut asks) => {
                // Dismissed by the person: Codex is told as its own Esc
                // tells it, the turn interrupted (its model is told
                // nothing, and the UI says the conversation was
                // interrupted).
                if let Some(turn) = dismissed {
                    outgoing.request(next_id, "turn/interrupt", turn);
                    next_id += 1;
                }
                continue;
            }
            () = stop.cancelled() => None,
        };
        let Some(message) = message else {
            break;
        };
        match message {
            Incoming::UserInput { id, params, turn } => {
                let asked = match Asked::from_params(&params) {
                    Ok(asked) => asked,
                    Err(why) => {
                        answerers.say(&format!("a question of Codex's left to Codex: {why}"));
                        continue;
                    }
                };
                let withdrawn = stop.child_token();
                let cwd = std::env::current_dir().ok();
                let asker = super::asker(
                    "Codex",
                    cwd.as_deref().and_then(Path::to_str),
                    None,
                    ask_user_inbox::WhenDown::Pass,
                );
                asking.insert(
                    id.clone(),
                    Asking {
                        withdrawn: withdrawn.clone(),
                        reason: asker.stop_reason.clone(),
                        turn: turn.clone(),
                    },
                );
                let outgoing = outgoing.clone();
                asks.push(async move {
                    ask(asked, asker, turn, id, outgoing, answerers, withdrawn).await
                });
            }
            // A request of another kind (an approval) is Codex's UI's.
            Incoming::OtherRequest => {}
            Incoming::Notification(Notification { event, thread }) => {
                match event {
                    Event::ThreadStarted { thread } => {
                        *session.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread);
                    }
                    Event::TurnInterrupted { turn } => {
                        // Esc or Ctrl-C in Codex (it says so before it
                        // resolves the turn's questions): dismissed, not
                        // answered, in the words Claude Code's and
                        // OpenCode's Esc get.
                        asking.retain(|_, asked| {
                            let ended = asked.turn.turn.as_deref() == Some(turn.as_str());
                            if ended {
                                asked.reason.set("dismissed in Codex");
                                asked.withdrawn.cancel();
                            }
                            !ended
                        });
                    }
                    Event::RequestResolved(id) => {
                        // Answered (in Codex, or by us): stop asking
                        // elsewhere.
                        if let Some(asked) = asking.remove(&id) {
                            asked.reason.set("answered in Codex");
                            asked.withdrawn.cancel();
                        }
                    }
                    Event::Other => {}
                }
                // A thread not joined yet: join it, to be sent its
                // questions (a new thread can be joined once it has a
                // turn: until then Codex has nothing of it to resume).
                if let Some(thread) = thread
                    && !joined.contains(&thread)
                    && !joining.values().any(|t| *t == thread)
                {
                    outgoing.request(
                        next_id,
                        "thread/resume",
                        json!({"threadId": thread, "excludeTurns": true}),
                    );
                    joining.insert(next_id, thread);
                    next_id += 1;
                }
            }
            Incoming::Response { id, error } => {
                if let Some(thread) = joining.remove(&id)
                    && error.is_none()
                {
                    joined.insert(thread);
                }
            }
        }
    }
    for asked in asking.values() {
        asked.withdrawn.cancel();
    }
    while futures_util::StreamExt::next(&mut asks).await.is_some() {}
}

/// A question of Codex's being asked through the answerers.
struct Asking {
    withdrawn: CancellationToken,
    reason: StopReason,
    turn: Turn,
}

/// Asks one question of Codex's through `answerers`; answers the app
/// server's request `id` with what they give, unless `withdrawn` first
/// (answered or dismissed in Codex, or Codex's UI ended). A person's
/// dismissal gives the `turn/interrupt` parameters that tell Codex.
async fn ask(
    asked: Asked,
    asker: ask_user_inbox::Asker,
    turn: Turn,
    id: RequestId,
    outgoing: Outgoing,
    answerers: &dyn Answerers,
    withdrawn: CancellationToken,
) -> Option<Value> {
    let reply = answerers
        .ask(
            &Codex,
            turn.thread.as_deref(),
            asker,
            asked.request.clone(),
            &withdrawn,
        )
        .await;
    match reply {
        Ok(Some(Ok(answers))) if !withdrawn.is_cancelled() => {
            outgoing.respond(&id, asked.response(&answers));
        }
        Ok(Some(Err(error)))
            if !withdrawn.is_cancelled() && error.code() == Some(&ErrorCode::AskCancelled) =>
        {
            if let (Some(thread), Some(turn)) = (turn.thread, turn.turn) {
                return Some(json!({"threadId": thread, "turnId": turn}));
            }
            answerers.say(&format!(
                "dismissed, but Codex named no turn to interrupt: {error}"
            ));
        }
        Ok(Some(Err(error))) if !withdrawn.is_cancelled() => {
            answerers.say(&format!("not answered through ask-user: {error}"));
        }
        Err(error) => answerers.say(&format!("not asked through ask-user: {error}")),
        _ => {}
    }
    None
}
