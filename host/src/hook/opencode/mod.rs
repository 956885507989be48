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
mod sub_agents;

use std::collections::{HashMap, HashSet};
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

/// How long its event stream may be silent before it is joined again (it
/// sends a heartbeat every 10 s).
const SILENCE: Duration = Duration::from_secs(30);

/// How long a stream just joined has to say it is connected.
const HANDSHAKE: Duration = Duration::from_secs(3);

/// How often the questions waiting are read, beside the event stream.
const POLL: Duration = Duration::from_secs(1);

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
    let ended = super::until_the_ui_ends(&mut ui, watched, &stop).await?;
    quiet.end(answerers);
    Ok(ended)
}

/// Joins OpenCode's event stream (within [`START_BOUND`]) and asks each of
/// its questions through `answerers`, until the stream cannot be joined
/// again or `stop`. The stream tells a question at once and how OpenCode
/// settled it; but one joined while OpenCode starts can stay silent for
/// good (found with OpenCode 1.18), so a stream must say it is connected
/// ([`join`]), one that ends or is silent for [`SILENCE`] is joined
/// again, and the questions waiting are also read every [`POLL`]: one not
/// seen yet is asked (and the stream, which missed it, joined again), one
/// being asked that two reads in a row no longer have, with no word of it
/// on the stream, was settled in OpenCode.
async fn watch(server: &Server, answerers: &dyn Answerers, stop: CancellationToken) {
    let Some(mut events) = join(server, answerers, START_BOUND).await else {
        return;
    };
    // The questions being asked, by OpenCode's id: how to withdraw each,
    // and what the inbox is told when OpenCode settled it first.
    let mut asking: HashMap<String, (CancellationToken, StopReason)> = HashMap::new();
    let mut asks = futures_util::stream::FuturesUnordered::new();
    // Questions of a shape we do not ask: left to OpenCode's UI, said once.
    let mut left: HashSet<String> = HashSet::new();
    // Questions being asked that the last read of the list did not have.
    let mut missing: HashSet<String> = HashSet::new();
    // The last read of the list had a question the stream had not told.
    let mut rejoin = false;
    let mut poll = tokio::time::interval(POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let happened = tokio::select! {
            event = tokio::time::timeout(SILENCE, events.next()) => match event {
                Ok(Some(event)) => vec![event],
                // Ended (a dropped connection, or OpenCode ending, which
                // ends this run too) or silent: joined again.
                Ok(None) | Err(_) => {
                    let Some(fresh) = join(server, answerers, SILENCE).await else {
                        break;
                    };
                    events = fresh;
                    continue;
                }
            },
            _ = poll.tick() => {
                let Ok(waiting) = server.pending().await else {
                    continue;
                };
                // Gone from the list at two reads in a row, with no word
                // of how on the stream (which tells it a moment after the
                // list changes): settled in OpenCode, we know not how.
                let ids: HashSet<&str> = waiting.iter().map(|asked| asked.id.as_str()).collect();
                let gone: HashSet<String> = asking
                    .keys()
                    .filter(|id| !ids.contains(id.as_str()))
                    .cloned()
                    .collect();
                for id in gone.intersection(&missing) {
                    settled(&mut asking, id, "settled in OpenCode");
                }
                missing = gone;
                // A question the stream has not told: it may be deaf to
                // this project's events (joined while OpenCode started).
                rejoin = waiting
                    .iter()
                    .any(|asked| !asking.contains_key(&asked.id) && !left.contains(&asked.id));
                waiting
                    .into_iter()
                    .map(|asked| Event::Asked { directory: None, asked })
                    .collect()
            }
            Some(()) = futures_util::StreamExt::next(&mut asks) => continue,
            () = stop.cancelled() => break,
        };
        for event in happened {
            match event {
                Event::Asked { directory, asked } => {
                    if asking.contains_key(&asked.id) || left.contains(&asked.id) {
                        continue;
                    }
                    let request = match questions::request(&asked.questions) {
                        Ok(request) => request,
                        Err(why) => {
                            answerers
                                .say(&format!("a question of OpenCode's left to OpenCode: {why}"));
                            left.insert(asked.id);
                            continue;
                        }
                    };
                    let withdrawn = stop.child_token();
                    // A question read from the waiting list names no
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
                        let question = ToAsk {
                            asked,
                            directory,
                            request,
                        };
                        ask(question, asker, &server, answerers, withdrawn).await;
                    });
                }
                Event::Replied { id } => settled(&mut asking, &id, "answered in OpenCode"),
                Event::Rejected { id } => settled(&mut asking, &id, "dismissed in OpenCode"),
                Event::Other => {}
            }
        }
        // Joined again, so that how OpenCode settles it is heard.
        if std::mem::take(&mut rejoin)
            && let Some(fresh) = join(server, answerers, SILENCE).await
        {
            events = fresh;
        }
    }
    for (withdrawn, _) in asking.values() {
        withdrawn.cancel();
    }
    while futures_util::StreamExt::next(&mut asks).await.is_some() {}
}

/// A question of OpenCode's, as our request.
struct ToAsk {
    asked: server::Asked,
    /// Its project, when the stream named it.
    directory: Option<String>,
    request: ask_user_seam::AskRequest,
}

/// Asks one question of OpenCode's through `answerers`, and gives OpenCode
/// what they answered, unless `withdrawn` first (settled in OpenCode, or
/// its UI ended): the answers, or, dismissed by the person, a dismissal as
/// OpenCode's own Esc gives (its model hears the question was dismissed).
async fn ask(
    question: ToAsk,
    asker: ask_user_inbox::Asker,
    server: &Server,
    answerers: &dyn Answerers,
    withdrawn: CancellationToken,
) {
    let ToAsk {
        asked,
        directory,
        request,
    } = question;
    let directory = directory.as_deref();
    // A sub-agent's question shows with its root's, named as the sub-agent.
    let (session, asker) = match sub_agents::of(server, &asked.session, directory).await {
        Some((root, name)) => {
            let agent = ask_user_inbox::sub_agents_label(&asker.agent, &name);
            (root, ask_user_inbox::Asker { agent, ..asker })
        }
        None => (asked.session.clone(), asker),
    };
    let reply = answerers
        .ask(
            &OpenCode,
            Some(&session),
            asker,
            request.clone(),
            &withdrawn,
        )
        .await;
    let given = match reply {
        _ if withdrawn.is_cancelled() => Ok(()),
        Ok(Some(Ok(answers))) => {
            let answers = questions::reply(&request, &answers);
            server.reply(&asked.id, directory, answers).await
        }
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
    if let Err(error) = given {
        answerers.say(&format!("OpenCode was not given the answer: {error}"));
    }
}

/// Joins OpenCode's event stream, trying again for at most `bound` (a
/// server still starting); `None` when it could not be joined, said.
async fn join(
    server: &Server,
    answerers: &dyn Answerers,
    bound: Duration,
) -> Option<server::Events> {
    let start = std::time::Instant::now();
    loop {
        match live_stream(server).await {
            Ok(events) => return Some(events),
            Err(error) if start.elapsed() > bound => {
                answerers.say(&format!(
                    "OpenCode's server did not answer within {bound:?} ({error}): its \
                     questions are left to its own UI"
                ));
                return None;
            }
            // Not listening yet.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// OpenCode's event stream, once its server answers a plain request (its
/// waiting questions: it has started) and the stream says it is connected
/// (a live one does at once; one joined while OpenCode starts may say
/// nothing, ever).
async fn live_stream(server: &Server) -> Result<server::Events, server::Error> {
    server.pending().await?;
    let mut events = server.events().await?;
    match tokio::time::timeout(HANDSHAKE, events.next()).await {
        Ok(Some(_)) => Ok(events),
        _ => Err(format!(
            "its event stream said nothing within {HANDSHAKE:?}"
        )),
    }
}

/// Question `id` settled in OpenCode (or by our own reply, when its ask
/// is over and this changes nothing): stop asking it elsewhere, saying why.
fn settled(asking: &mut HashMap<String, (CancellationToken, StopReason)>, id: &str, why: &str) {
    if let Some((withdrawn, reason)) = asking.remove(id) {
        reason.set(why);
        withdrawn.cancel();
    }
}
