//! The answerer of kind `inbox`: hands each ask to the inbox and waits for
//! a human's outcome there.
//!
//! It claims every request: the question waits in the inbox until it is
//! answered or dismissed there, or until the ask ends. It survives restarts
//! on both sides: when the inbox is down or restarting it keeps trying
//! (logging once) and re-attaches to its question by id; when its own
//! process was killed and asks the identical batch again in the same
//! session, the inbox re-attaches it to the stored question (and an answer
//! given meanwhile comes back at once). The session is the caller's agent
//! id, which hosts make random (or the user gives, for a run that resumes
//! another): no other agent's question is ever re-attached. Every question
//! the inbox hands back is checked to be the one asked (same session, same
//! questions) before anything is taken from it. When its ask ends first
//! (aborted, timed out) it withdraws the question; [`Answerer::close`] waits
//! for the withdrawals to reach the inbox, briefly.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::task::TaskTracker;

use ask_user_seam::remote::Outcome;
use ask_user_seam::{AnswerError, AnswerFuture, Answerer, Ask, Elsewhere, Next};

use crate::client::{ClientError, InboxClient};
use crate::store::State as QuestionState;
use crate::{AskBody, QuestionView};
use ask_user_answerers::{AnswererKind, ConfigProblem, KindTable, Setup, Started};

/// One wait's length: the inbox replies within it even with no news.
const WAIT: Duration = Duration::from_secs(25);

/// The longest pause between two tries to reach an inbox that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How long [`Answerer::close`] waits for withdrawals to reach the inbox.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// Asks through the inbox.
pub struct InboxAnswerer {
    client: InboxClient,
    agent: String,
    /// The one client this process serves: named as it says, in place of
    /// `agent` (this program and its pid), its own calls in one session.
    one_client: Option<OneClient>,
    cwd: Option<String>,
    withdrawals: TaskTracker,
    stop_reason: StopReason,
    /// In a team's inbox, the groups whose people may answer.
    audience: Vec<String>,
    /// The start's notice said no inbox runs: the first time it cannot be
    /// reached is not said again.
    said_down: AtomicBool,
    /// What an ask does when no inbox can be reached as it starts.
    when_down: WhenDown,
}

/// What an ask does when no inbox can be reached as it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WhenDown {
    /// The question waits until an inbox serves: an agent's, whose only
    /// way to the human is the inbox.
    #[default]
    Wait,
    /// It passes on at once: a hook's, whose agent asks at its own
    /// terminal when nobody else can be asked. Once the question is in the
    /// inbox, it waits for it as any other.
    Pass,
}

/// Why the asking process stopped waiting, when its host knows better than
/// "the agent stopped waiting" (the person answered elsewhere): the reason
/// its questions are withdrawn with, which the inbox's page shows. The host
/// sets it, then ends the ask; clones share it.
#[derive(Debug, Clone, Default)]
pub struct StopReason(Arc<OnceLock<String>>);

impl StopReason {
    /// Says why; the first reason set stays.
    pub fn set(&self, why: impl Into<String>) {
        let _ = self.0.set(why.into());
    }

    fn get(&self) -> &str {
        self.0
            .get()
            .map_or("the agent stopped waiting", String::as_str)
    }
}

impl InboxAnswerer {
    /// Asks the inbox `client` reaches, as `agent` working in `cwd`.
    pub fn new(client: InboxClient, agent: impl Into<String>, cwd: Option<String>) -> Self {
        InboxAnswerer {
            client,
            agent: agent.into(),
            one_client: None,
            cwd,
            withdrawals: TaskTracker::new(),
            stop_reason: StopReason::default(),
            audience: Vec::new(),
            said_down: AtomicBool::new(false),
            when_down: WhenDown::default(),
        }
    }

    /// Names this process as the one client it serves, once the client
    /// said its name, and asks its root calls in the client's session
    /// (none: as `agent`, each call in its own).
    pub fn serving(mut self, client: Option<OneClient>) -> Self {
        self.one_client = client;
        self
    }

    /// What an ask does when no inbox can be reached as it starts.
    pub fn when_down(mut self, when: WhenDown) -> Self {
        self.when_down = when;
        self
    }

    /// In a team's inbox, only people of these groups may answer.
    pub fn audience(mut self, groups: Vec<String>) -> Self {
        self.audience = groups;
        self
    }

    /// Withdraws its questions with `reason` when it has been set.
    pub fn stopping_for(mut self, reason: StopReason) -> Self {
        self.stop_reason = reason;
        self
    }

    /// Runs `request` until the inbox answers it: while the inbox cannot be
    /// reached, tries again (logging once). A refusal ends it.
    async fn reach<T, F>(&self, mut request: impl FnMut() -> F) -> Result<T, ClientError>
    where
        F: std::future::Future<Output = Result<T, ClientError>>,
    {
        let mut pause = Duration::from_millis(50);
        let mut told = self.said_down.swap(false, Ordering::Relaxed);
        loop {
            match request().await {
                Err(ClientError::Unreachable(why)) => {
                    if !told {
                        tracing::warn!(
                            %why,
                            "the inbox cannot be reached; the question waits for it (start it \
                             with `ask-user inbox serve`)"
                        );
                        told = true;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_BACKOFF);
                }
                other => {
                    if told {
                        tracing::info!("the inbox is back");
                    }
                    return other;
                }
            }
        }
    }

    /// Asks, and waits until the question leaves the waiting state.
    async fn settled(
        &self,
        body: &AskBody,
        withdraw: &mut Withdraw<'_>,
    ) -> Result<QuestionView, ClientError> {
        let mut first = true;
        loop {
            let reply = match (first, self.when_down) {
                // Not reached at once: the caller passes on.
                (true, WhenDown::Pass) => self.client.ask(body).await?,
                _ => self.reach(|| self.client.ask(body)).await?,
            };
            first = false;
            withdraw.id = Some(reply.id.clone());
            loop {
                match self.reach(|| self.client.question(&reply.id, WAIT)).await? {
                    Some(view) if !asked(body, &view) => {
                        return Err(ClientError::Refused {
                            status: 200,
                            message: format!(
                                "the inbox gave question {} of session {:?} for this agent's \
                                 question; nothing was taken from it",
                                view.id, view.session
                            ),
                        });
                    }
                    Some(view) if view.state == QuestionState::Waiting => continue,
                    Some(view) => return Ok(view),
                    // The inbox forgot it (a new database): ask again.
                    None => break,
                }
            }
        }
    }
}

/// Whether `view` is the question `body` asked: the same session, the same
/// questions.
fn asked(body: &AskBody, view: &QuestionView) -> bool {
    view.session == body.session && view.questions == body.request.questions
}

/// How the inbox names a relayed sub-agent's question: the agent it runs
/// in, then the sub-agent's chain (`session › kind id`).
pub fn sub_agents_label(agent: &str, chain: &str) -> String {
    format!("{agent} · sub-agent {chain}")
}

/// Withdraws the question from the inbox when the ask ends before it left
/// the waiting state (its future dropped), saying why: how an answerer
/// racing this one settled it, else the host's reason.
struct Withdraw<'a> {
    answerer: &'a InboxAnswerer,
    id: Option<String>,
    elsewhere: Elsewhere,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let client = self.answerer.client.clone();
        let reason = match self.elsewhere.get() {
            Some(how) => how.to_owned(),
            None => self.answerer.stop_reason.get().to_owned(),
        };
        self.answerer.withdrawals.spawn_on(
            async move {
                if let Err(error) = client.withdraw(&id, &reason).await {
                    tracing::warn!(%error, id, "could not withdraw a question from the inbox");
                }
            },
            &runtime,
        );
    }
}

impl Answerer for InboxAnswerer {
    fn name(&self) -> &str {
        "inbox"
    }

    fn close(&self) -> Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            self.withdrawals.close();
            let _ = tokio::time::timeout(CLOSE_GRACE, self.withdrawals.wait()).await;
        })
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            let chain = ask.asked_by_label();
            let body = AskBody {
                session: match (&self.one_client, &chain, &ask.caller) {
                    // The client's own call: its run's session.
                    (Some(client), None, _) => client.session.clone(),
                    (_, _, Some(caller)) => caller.id().to_owned(),
                    (_, _, None) => "(no agent)".to_owned(),
                },
                // A relayed sub-agent is named on the card, in the
                // notifications and in `inbox list`.
                agent: {
                    let agent = match self.one_client.as_ref().and_then(|c| c.name.get()) {
                        Some(client) => client,
                        None => &self.agent,
                    };
                    match &chain {
                        Some(chain) => sub_agents_label(agent, chain),
                        None => agent.clone(),
                    }
                },
                cwd: self.cwd.clone(),
                request: ask.request.clone(),
                audience: self.audience.clone(),
            };
            let mut withdraw = Withdraw {
                answerer: self,
                id: None,
                elsewhere: next.elsewhere(),
            };
            let view = match self.settled(&body, &mut withdraw).await {
                Ok(view) => view,
                Err(ClientError::Unreachable(why)) if self.when_down == WhenDown::Pass => {
                    return next
                        .pass(format!(
                            "no inbox is running ({why}); start it with `ask-user inbox serve`"
                        ))
                        .await;
                }
                Err(error) => return Err(AnswerError::other(error)),
            };
            // It left the waiting state: nothing to withdraw.
            withdraw.id = None;
            let outcome = view.outcome.and_then(|outcome| {
                serde_json::from_value::<Outcome>(outcome)
                    .inspect_err(|error| tracing::warn!(%error, "an outcome from the inbox"))
                    .ok()
            });
            match outcome.and_then(Outcome::into_answers) {
                Some(answered) => {
                    if let Err(error) = self.client.delivered(&view.id).await {
                        // Asked again, the same batch would get this outcome again.
                        tracing::warn!(%error, id = view.id, "could not confirm an outcome to the inbox");
                    }
                    answered
                }
                // Withdrawn or expired in the inbox: the next answerer's turn.
                None => {
                    next.pass(format!(
                        "the question was {} in the inbox",
                        view.state.as_str()
                    ))
                    .await
                }
            }
        })
    }
}

/// `kind = "inbox"`: optional `state_dir` (default: the user's state
/// directory) and `agent` (how the inbox names this process). A team's
/// inbox instead: `url`, the token from `token_env = "VAR"` or
/// `token_file = "PATH"` (never inline), and optional `audience`, the groups
/// whose people may answer (empty: anyone in the team).
#[derive(Debug, Default)]
pub struct InboxKind {
    asker: Option<Asker>,
    one_client: Option<OneClient>,
}

/// The one client a process serves (`ask-user mcp` on stdio: one run of
/// one client). Its `name`, set once the client says it (MCP's
/// `clientInfo`), names its questions where neither the config's `agent`
/// nor the host ([`Asker`]) says better than this program and its pid. Its
/// own calls ask in one `session`: a run's questions show together, and
/// a batch asked again while the first still waits (a client that gave up
/// on a call without a word, as Gemini CLI's Esc does) is the same
/// question, answered once for both. Its sub-agents keep their own.
#[derive(Debug, Clone)]
pub struct OneClient {
    pub name: Arc<std::sync::OnceLock<String>>,
    pub session: String,
}

impl OneClient {
    /// A client not named yet, in a fresh session (`mcp-run-<random>`).
    pub fn new() -> std::io::Result<OneClient> {
        Ok(OneClient {
            name: Arc::default(),
            session: ask_user_seam::secret::id("mcp-run-")?,
        })
    }
}

/// What the inbox shows as asking, when the host knows better than this
/// process's name and folder (a hook asking for another program).
#[derive(Debug, Clone)]
pub struct Asker {
    /// How the inbox names it, unless the config's `agent` says otherwise.
    pub agent: String,
    /// The folder it works in.
    pub cwd: Option<String>,
    /// Why it stopped waiting, once the host knows.
    pub stop_reason: StopReason,
    /// What its ask does when no inbox runs: a hook whose agent has a
    /// terminal passes, leaving the question to it.
    pub when_down: WhenDown,
}

impl InboxKind {
    /// The kind whose answerers ask as `asker`.
    pub fn asking_as(asker: Asker) -> Self {
        InboxKind {
            asker: Some(asker),
            one_client: None,
        }
    }

    /// The kind whose answerers ask for the one `client` this process
    /// serves ([`OneClient`]).
    pub fn serving(client: OneClient) -> Self {
        InboxKind {
            asker: None,
            one_client: Some(client),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxTable {
    state_dir: Option<PathBuf>,
    agent: Option<String>,
    url: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    #[serde(default)]
    audience: Vec<String>,
}

/// An inbox answerer, configured.
#[derive(Debug)]
pub struct InboxSetup {
    pub state_dir: Option<PathBuf>,
    pub agent: Option<String>,
    /// The host's word for what asks, under the config's `agent`.
    pub asker: Option<Asker>,
    /// The one client served, named once it speaks, under both.
    pub one_client: Option<OneClient>,
    /// A team's inbox instead of this user's.
    pub team: Option<Team>,
}

/// A team's inbox, as an agent reaches it.
#[derive(Debug, Clone)]
pub struct Team {
    pub url: String,
    pub token: TokenSource,
    /// The groups whose people may answer; empty: anyone.
    pub audience: Vec<String>,
}

/// Where an agent's token is read from when it starts.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// An environment variable's name.
    Env(String),
    /// A file only its owner may read.
    File(PathBuf),
}

impl TokenSource {
    /// The token, or why it cannot be had; `what` names it in the error
    /// ("the inbox token").
    pub fn read(&self, what: &str) -> std::io::Result<String> {
        let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
        let token = match self {
            TokenSource::Env(name) => std::env::var(name)
                .map_err(|_| invalid(format!("{what}'s variable {name} is not set")))?,
            TokenSource::File(path) => {
                let metadata = std::fs::metadata(path).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot read {what} {}: {e}", path.display()),
                    )
                })?;
                if std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o077 != 0 {
                    return Err(invalid(format!(
                        "{what} {} may be read by others: chmod 600 it",
                        path.display()
                    )));
                }
                ask_user_seam::files::read_bounded(path, 4096)?
            }
        };
        let token = token.trim().to_owned();
        if token.is_empty() {
            return Err(invalid(format!("{what} is empty")));
        }
        Ok(token)
    }
}

impl AnswererKind for InboxKind {
    fn name(&self) -> &'static str {
        "inbox"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: InboxTable = table.read(self.name())?;
        let token = match (table.token_env, table.token_file) {
            (Some(name), None) => Some(TokenSource::Env(name)),
            (None, Some(path)) => Some(TokenSource::File(base.join(path))),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err("an inbox answerer takes token_env or token_file, not both"
                    .to_owned()
                    .into());
            }
        };
        let team = match (table.url, token) {
            (Some(_), _) if table.state_dir.is_some() => {
                return Err(
                    "an inbox answerer has a url (a team's inbox) or a state_dir \
                            (this user's), not both"
                        .to_owned()
                        .into(),
                );
            }
            (Some(url), Some(token)) => Some(Team {
                url,
                token,
                audience: table.audience,
            }),
            (Some(_), None) => {
                return Err("a team's inbox needs a token: token_env = \"VARIABLE\" or \
                            token_file = \"PATH\" (never the token itself)"
                    .to_owned()
                    .into());
            }
            (None, Some(_)) => {
                return Err("token_env and token_file go with a url (a team's inbox)"
                    .to_owned()
                    .into());
            }
            (None, None) if !table.audience.is_empty() => {
                return Err("audience goes with a url (a team's inbox)"
                    .to_owned()
                    .into());
            }
            (None, None) => None,
        };
        Ok(Box::new(InboxSetup {
            state_dir: table.state_dir.map(|dir| base.join(dir)),
            agent: table.agent,
            asker: self.asker.clone(),
            one_client: self.one_client.clone(),
            team,
        }))
    }
}

impl Setup for InboxSetup {
    fn start(
        self: Box<Self>,
    ) -> Pin<Box<dyn std::future::Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(async move {
            let (asker, cwd, stop_reason, when_down) = match self.asker {
                Some(asker) => (
                    Some(asker.agent),
                    asker.cwd,
                    asker.stop_reason,
                    asker.when_down,
                ),
                None => (
                    None,
                    std::env::current_dir()
                        .ok()
                        .map(|dir| dir.display().to_string()),
                    StopReason::default(),
                    WhenDown::Wait,
                ),
            };
            // The config's name, or the host's, over the client's; with
            // the config's, the client's own calls still ask in its run's
            // session (a name of its own, never set, leaves the config's).
            let one_client = match (&self.agent, &asker, self.one_client) {
                (_, Some(_), _) | (_, _, None) => None,
                (None, None, client) => client,
                (Some(_), None, Some(client)) => Some(OneClient {
                    name: Arc::default(),
                    ..client
                }),
            };
            let agent = self
                .agent
                .or(asker)
                .unwrap_or_else(|| format!("{} (pid {})", program(), std::process::id()));
            if let Some(team) = self.team {
                let client = InboxClient::remote(&team.url, team.token.read("the inbox token")?)?;
                let answerer = InboxAnswerer::new(client, agent, cwd)
                    .stopping_for(stop_reason)
                    .when_down(when_down)
                    .serving(one_client)
                    .audience(team.audience);
                return Ok(Started {
                    answerer: Arc::new(answerer),
                    notice: Some(format!("questions go to the team's inbox at {}", team.url)),
                    page: None,
                });
            }
            let state_dir = match self.state_dir.or_else(crate::state_dir) {
                Some(dir) => dir,
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no state directory for the inbox: set ASK_USER_STATE_DIR or HOME",
                    ));
                }
            };
            let answerer = InboxAnswerer::new(InboxClient::new(&state_dir)?, agent, cwd)
                .stopping_for(stop_reason)
                .when_down(when_down)
                .serving(one_client);
            // No address and no token here: this goes to standard error,
            // which MCP clients keep in their logs.
            let notice = match answerer.client.check() {
                Ok(()) => format!(
                    "questions go to the inbox of {} (`ask-user inbox page` prints a link to it)",
                    state_dir.display()
                ),
                Err(ClientError::Untrusted(why)) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        format!("the inbox answerer cannot start: {why}"),
                    ));
                }
                Err(_) if when_down == WhenDown::Pass => format!(
                    "no inbox is running for {}; questions are left to the agent's own \
                     terminal until `ask-user inbox serve` starts",
                    state_dir.display()
                ),
                Err(_) => {
                    answerer.said_down.store(true, Ordering::Relaxed);
                    format!(
                        "no inbox is running for {}; questions wait until `ask-user inbox serve` \
                         starts",
                        state_dir.display()
                    )
                }
            };
            Ok(Started {
                answerer: Arc::new(answerer),
                notice: Some(notice),
                page: None,
            })
        })
    }
}

/// This program's name, as the inbox shows what asked.
fn program() -> String {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "agent".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::{Channel, ChannelError, ChannelKind, Channels, Configured, Note};
    use crate::server::{InboxConfig, InboxServer};
    use ask_user_seam::{AgentRegistry, Answer, Delegated, Placement, Question, UserQuestions};
    use tokio::sync::mpsc::UnboundedSender;

    /// A notification channel that hands each note to the test: the event
    /// of a question stored.
    struct ToldKind(UnboundedSender<Arc<Note>>);

    #[derive(Debug)]
    struct Told(UnboundedSender<Arc<Note>>);

    impl ChannelKind for ToldKind {
        const NAME: &'static str = "told";
        const TITLE: &'static str = "Told";
        type Config = bool;

        fn configure(&self, _: bool) -> Result<Configured, ChannelError> {
            Ok(Configured::Notifies(Arc::new(Told(self.0.clone()))))
        }
    }

    impl Channel for Told {
        fn name(&self) -> &'static str {
            "told"
        }

        fn send(
            &self,
            note: Arc<Note>,
            _: reqwest::Client,
        ) -> Pin<Box<dyn std::future::Future<Output = Result<(), ChannelError>> + Send>> {
            let _ = self.0.send(note);
            Box::pin(async { Ok(()) })
        }
    }

    #[tokio::test]
    async fn a_relayed_sub_agents_question_names_it_in_the_inbox() {
        let state = tempfile::tempdir().unwrap();
        let (tell, mut notes) = tokio::sync::mpsc::unbounded_channel();
        let mut channels = Channels::new();
        channels.register(ToldKind(tell));
        let mut config = InboxConfig::new(state.path());
        config.notify = channels
            .configure(&toml::from_str("told = true").unwrap())
            .unwrap();
        let server = InboxServer::start(config).await.unwrap();
        let agents = Arc::new(AgentRegistry::new());
        let seam = Arc::new(
            UserQuestions::new(agents.clone()).with_delegated(Delegated::Relay { max_asks: 3 }),
        );
        let client = InboxClient::new(state.path()).unwrap();
        seam.waterfall().register(
            InboxAnswerer::new(client.clone(), "ci-bot", None),
            Placement::default(),
        );
        let root = agents.register_root("session-1", None);
        let reviewer = agents.register_delegate("reviewer", &root);
        let mut question = Question::new("q", "Merge it?");
        question.options = Some(vec![
            ask_user_seam::QuestionOption::new("Yes"),
            ask_user_seam::QuestionOption::new("No"),
        ]);
        let request = ask_user_seam::AskRequest {
            questions: vec![question],
        };
        let asking = {
            let seam = seam.clone();
            tokio::spawn(async move {
                seam.ask(request, Some(&reviewer), &Default::default())
                    .await
            })
        };
        // The inbox notifies of the question once it has stored it.
        let told = tokio::time::timeout(std::time::Duration::from_secs(30), notes.recv())
            .await
            .expect("the question reached the inbox")
            .unwrap();
        let listed = client.list(false).await.unwrap().questions;
        let [waiting] = listed.as_slice() else {
            panic!("one question waits: {listed:?}");
        };
        assert_eq!(waiting.id, told.record.id);
        assert_eq!(waiting.agent, "ci-bot · sub-agent session-1 › reviewer");
        assert_eq!(waiting.session, "reviewer");
        let answer = Answer {
            id: "q".into(),
            selected: vec!["No".into()],
            custom: None,
        };
        client
            .answer(&waiting.id, std::slice::from_ref(&answer))
            .await
            .unwrap();
        assert_eq!(asking.await.unwrap().unwrap(), [answer]);
        server.stop().await;
    }
}
