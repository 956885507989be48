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

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use ask_user_seam::remote::Outcome;
use ask_user_seam::{AnswerError, AnswerFuture, Answerer, Ask, Elsewhere, Next};

use crate::client::{ClientError, InboxClient};
use crate::kind::OneClient;
use crate::store::State as QuestionState;
use crate::{AskBody, QuestionView};

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

/// Why the asking process stopped waiting, when its host knows (the person
/// answered elsewhere, its client ended): its questions are then withdrawn
/// with that reason, which the inbox's page shows, where without it a
/// cancelled ask leaves its question for when it is asked again. The host
/// sets it, then ends the ask; clones share it.
#[derive(Debug, Clone, Default)]
pub struct StopReason(Arc<OnceLock<String>>);

impl StopReason {
    /// Says why; the first reason set stays.
    pub fn set(&self, why: impl Into<String>) {
        let _ = self.0.set(why.into());
    }

    fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
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

    /// The start's notice said no inbox runs: the first time the inbox
    /// cannot be reached is not said again.
    pub(crate) fn down_said(self) -> Self {
        self.said_down.store(true, Ordering::Relaxed);
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
/// racing this one settled it, else the host's reason, else "the agent
/// stopped waiting" (its time limit passed, its agent ended). An ask whose
/// turn was cancelled with no reason said (a client's timeout or cancel, a
/// host stopping) leaves its question instead: its agent stopped waiting,
/// and the inbox keeps it answerable for when the same questions are asked
/// again in its session (the answer given meanwhile, once).
struct Withdraw<'a> {
    answerer: &'a InboxAnswerer,
    id: Option<String>,
    elsewhere: Elsewhere,
    turn: CancellationToken,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let reason = match (self.elsewhere.get(), self.answerer.stop_reason.get()) {
            (Some(how), _) | (None, Some(how)) => how.to_owned(),
            (None, None) if self.turn.is_cancelled() => return,
            (None, None) => "the agent stopped waiting".to_owned(),
        };
        let client = self.answerer.client.clone();
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
                turn: ask.signal.clone(),
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

    /// How an ask that ends before its answer leaves its question: a
    /// cancelled turn (the agent stopped waiting) leaves it waiting, its
    /// agent gone; an agent that ended withdraws it; so does a host that
    /// said why, with its reason.
    #[tokio::test]
    async fn a_cancelled_turn_leaves_its_question_and_an_ended_agent_or_a_said_reason_withdraws_it()
    {
        let state = tempfile::tempdir().unwrap();
        let server = InboxServer::start(InboxConfig::new(state.path()))
            .await
            .unwrap();
        let agents = Arc::new(AgentRegistry::new());
        let seam = Arc::new(UserQuestions::new(agents.clone()));
        let client = InboxClient::new(state.path()).unwrap();
        let reason = StopReason::default();
        seam.waterfall().register(
            InboxAnswerer::new(client.clone(), "ci-bot", None).stopping_for(reason.clone()),
            Placement::default(),
        );
        // Asks `text` as a root agent `id`: its turn, its agent, the ask.
        let ask = |text: &str, id: &str| {
            let (seam, turn) = (seam.clone(), CancellationToken::new());
            let agent = agents.register_root(id, None);
            let request = ask_user_seam::AskRequest {
                questions: vec![Question::new("q", text)],
            };
            let asking = {
                let (turn, agent) = (turn.clone(), agent.clone());
                tokio::spawn(async move { seam.ask(request, Some(&agent), &turn).await })
            };
            (turn, agent, asking)
        };
        /// The question `text` once `holds` (read every 20 ms, at most 30 s).
        async fn until(
            client: &InboxClient,
            text: &str,
            holds: fn(&QuestionView) -> bool,
        ) -> QuestionView {
            let found = async {
                loop {
                    let listed = client.list(true).await.unwrap().questions;
                    let mut listed = listed.into_iter();
                    if let Some(q) = listed.find(|q| q.questions[0].question == text && holds(q)) {
                        return q;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(30), found)
                .await
                .unwrap_or_else(|_| panic!("{text:?} never came to hold"))
        }
        let asked = |_: &QuestionView| true;
        let settled = |q: &QuestionView| q.state != QuestionState::Waiting;

        let (turn, _agent, asking) = ask("Cancelled?", "one");
        until(&client, "Cancelled?", asked).await;
        turn.cancel();
        let _ = asking.await;
        let left = until(&client, "Cancelled?", |q| !q.agent_waiting).await;
        assert_eq!(left.state, QuestionState::Waiting, "{left:?}");

        let (_turn, agent, asking) = ask("Ended?", "two");
        until(&client, "Ended?", asked).await;
        agents.end(&agent);
        let _ = asking.await;
        let left = until(&client, "Ended?", settled).await;
        assert_eq!(left.state, QuestionState::Withdrawn, "{left:?}");

        let (turn, _agent, asking) = ask("Said?", "three");
        until(&client, "Said?", asked).await;
        reason.set("answered in Claude Code");
        turn.cancel();
        let _ = asking.await;
        let left = until(&client, "Said?", settled).await;
        assert_eq!(
            left.settled_by.as_deref(),
            Some("answered in Claude Code"),
            "{left:?}"
        );
        server.stop().await;
    }
}
