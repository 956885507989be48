//! OpenCode: its own question tool (`question`) waits until OpenCode's
//! server is given the answer (`POST /question/{id}/reply`), and the
//! server tells every client of it that a question was asked
//! (`question.asked` on its event stream) and how it was settled
//! (`question.replied`, `question.rejected`). So `ask-user hook run
//! opencode` runs OpenCode's own terminal UI with its server on a port of
//! ours, locked with a password of this run's, and is a second client of
//! it: each question is asked through the user's answerers too (the
//! inbox, a script…) while OpenCode's UI shows it, and whichever answers
//! first wins; the other is withdrawn.

mod questions;
mod server;

use std::collections::HashMap;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::quiet::Quiet;
use super::{Answerers, Attached, HookClient, Way};
use crate::{CliError, Context};
use ask_user_inbox::StopReason;
use ask_user_seam::ErrorCode;
use server::{Event, Server};

/// OpenCode.
pub struct OpenCode;

/// Its name on the command line, in the inbox's sessions.
const NAME: &str = "opencode";

/// How long OpenCode's server may take to answer.
const START_BOUND: Duration = Duration::from_secs(60);

/// OpenCode's environment variables for its server's basic auth.
const PASSWORD: &str = "OPENCODE_SERVER_PASSWORD";
const USER: &str = "OPENCODE_SERVER_USERNAME";

impl HookClient for OpenCode {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "OpenCode's own UI, its server on a port of ours: its questions (the question tool) are \
         asked through your answerers too, and the first answer wins."
    }

    fn ways(&self) -> &'static [Way] {
        &[Way::Attached]
    }

    fn program(&self) -> &'static str {
        "opencode"
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

/// Runs OpenCode's UI with its server on a free port, and answers its
/// questions through `answerers` too, until the UI ends.
async fn attached(
    run: Attached,
    answerers: &dyn Answerers,
    stop: CancellationToken,
) -> Result<bool, CliError> {
    // A port free a moment ago: OpenCode binds it (another program taking
    // it in between makes OpenCode fail to start, and say so).
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    // Nobody else on this machine reaches the questions: the server takes
    // this run's password (or the one the user set for OpenCode).
    let password = match std::env::var(PASSWORD) {
        Ok(password) if !password.is_empty() => password,
        _ => ask_user_seam::secret::id("")?,
    };
    let user = std::env::var(USER)
        .ok()
        .filter(|user| !user.is_empty())
        .unwrap_or_else(|| "opencode".to_owned());
    let server = Server::new(port, user.clone(), password.clone())?;
    let quiet = Quiet::start(&super::run_dir(NAME)?, "OpenCode")?;
    let mut ui = tokio::process::Command::new(&run.program)
        .arg("--port")
        .arg(port.to_string())
        .args(&run.flags)
        .env(PASSWORD, &password)
        .env(USER, &user)
        .stderr(quiet.terminal()?)
        .kill_on_drop(true)
        .spawn()
        .context(|| format!("cannot run {}", run.program.display()))?;
    let watched = watch(&server, answerers, stop.child_token());
    let ended = tokio::select! {
        status = ui.wait() => status?.success(),
        () = watched => ui.wait().await?.success(),
        () = stop.cancelled() => {
            super::end_gently(&mut ui).await;
            false
        }
    };
    quiet.end(answerers);
    Ok(ended)
}

/// Joins OpenCode's event stream (within [`START_BOUND`]) and asks each of
/// its questions through `answerers`, until the stream ends (OpenCode
/// ended) or `stop`.
async fn watch(server: &Server, answerers: &dyn Answerers, stop: CancellationToken) {
    let start = std::time::Instant::now();
    let mut events = loop {
        match server.events().await {
            Ok(events) => break events,
            Err(error) if start.elapsed() > START_BOUND => {
                answerers.say(&format!(
                    "OpenCode's server did not answer within {START_BOUND:?} ({error}): its \
                     questions are left to its own UI"
                ));
                return;
            }
            // Not listening yet.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    // The questions being asked, by OpenCode's id: how to withdraw each,
    // and what the inbox is told when OpenCode settled it first.
    let mut asking: HashMap<String, (CancellationToken, StopReason)> = HashMap::new();
    let mut asks = futures_util::stream::FuturesUnordered::new();
    // Asked before the stream was joined.
    let earlier = match server.pending().await {
        Ok(earlier) => earlier,
        Err(error) => {
            answerers.say(&format!(
                "OpenCode's waiting questions were not read: {error}"
            ));
            Vec::new()
        }
    };
    let mut earlier = earlier.into_iter();
    loop {
        let event = match earlier.next() {
            Some(asked) => Event::Asked {
                directory: None,
                asked,
            },
            None => tokio::select! {
                event = events.next() => match event {
                    Some(event) => event,
                    None => break,
                },
                Some(()) = futures_util::StreamExt::next(&mut asks) => continue,
                () = stop.cancelled() => break,
            },
        };
        match event {
            Event::Asked { directory, asked } => {
                if asking.contains_key(&asked.id) {
                    continue;
                }
                let request = match questions::request(&asked.questions) {
                    Ok(request) => request,
                    Err(why) => {
                        answerers.say(&format!("a question of OpenCode's left to OpenCode: {why}"));
                        continue;
                    }
                };
                let withdrawn = stop.child_token();
                // A question asked before the stream was joined names no
                // project: shown in the folder OpenCode started in (and
                // answered in its server's own).
                let cwd = directory.clone().or_else(|| {
                    std::env::current_dir()
                        .ok()
                        .and_then(|dir| dir.to_str().map(str::to_owned))
                });
                let asker = super::asker(
                    "OpenCode",
                    cwd.as_deref(),
                    None,
                    ask_user_inbox::WhenDown::Pass,
                );
                asking.insert(
                    asked.id.clone(),
                    (withdrawn.clone(), asker.stop_reason.clone()),
                );
                let server = server.clone();
                asks.push(async move {
                    let reply = answerers
                        .ask(
                            &OpenCode,
                            Some(&asked.session),
                            asker,
                            request.clone(),
                            &withdrawn,
                        )
                        .await;
                    let directory = directory.as_deref();
                    let settled = match reply {
                        _ if withdrawn.is_cancelled() => Ok(()),
                        Ok(Some(Ok(answers))) => {
                            let answers = questions::reply(&request, &answers);
                            server.reply(&asked.id, directory, answers).await
                        }
                        // Dismissed by the person: OpenCode is told as its
                        // own Esc tells it (its model hears the question
                        // was dismissed).
                        Ok(Some(Err(error))) if error.code() == Some(&ErrorCode::AskCancelled) => {
                            server.reject(&asked.id, directory).await
                        }
                        Ok(Some(Err(error))) => {
                            answerers.say(&format!("not answered through ask-user: {error}"));
                            Ok(())
                        }
                        // No answerer but the terminal, which OpenCode's UI has.
                        Ok(None) => Ok(()),
                        Err(error) => {
                            answerers.say(&format!("not asked through ask-user: {error}"));
                            Ok(())
                        }
                    };
                    if let Err(error) = settled {
                        answerers.say(&format!("OpenCode was not given the answer: {error}"));
                    }
                });
            }
            Event::Replied { id } => settled(&mut asking, &id, "answered in OpenCode"),
            Event::Rejected { id } => settled(&mut asking, &id, "dismissed in OpenCode"),
            Event::Other => {}
        }
    }
    for (withdrawn, _) in asking.values() {
        withdrawn.cancel();
    }
    while futures_util::StreamExt::next(&mut asks).await.is_some() {}
}

/// Question `id` settled in OpenCode (or by our own reply, when its ask
/// is over and this changes nothing): stop asking it elsewhere, saying why.
fn settled(asking: &mut HashMap<String, (CancellationToken, StopReason)>, id: &str, why: &str) {
    if let Some((withdrawn, reason)) = asking.remove(id) {
        reason.set(why);
        withdrawn.cancel();
    }
}
