//! Shared pieces of the component-level tests: the real component in a real
//! host, and an answerer whose behaviour and observations tests control.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ask_user::{
    AgentHandle, AgentRegistry, Answer, AnswerError, AnswerFuture, Answerer, Ask, AskRequest,
    Engine, Next, Placement, RuntimeConfig, ToolResult, ToolRuntime, UserQuestions,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The misbehaving component of `tests/guests/misbehave`.
pub const MISBEHAVE: &str = env!("MISBEHAVE_COMPONENT");

/// The component of `tests/guests/asks-on-load`: it asks from `definition()`.
pub const ASKS_ON_LOAD: &str = env!("ASKS_ON_LOAD_COMPONENT");

/// The real `ask_user_question` component in a host with a root agent.
pub struct Harness {
    pub agents: Arc<AgentRegistry>,
    pub runtime: ToolRuntime,
    pub root: AgentHandle,
}

impl Harness {
    pub async fn new() -> Self {
        Self::with_seam(|seam| seam).await
    }

    /// A harness whose seam is adjusted (e.g. given a timeout) before use.
    pub async fn with_seam(adjust: impl FnOnce(UserQuestions) -> UserQuestions) -> Self {
        Self::build(RuntimeConfig::default(), adjust).await
    }

    /// A harness whose sandbox has other limits.
    pub async fn with_config(config: RuntimeConfig) -> Self {
        Self::build(config, |seam| seam).await
    }

    async fn build(
        config: RuntimeConfig,
        adjust: impl FnOnce(UserQuestions) -> UserQuestions,
    ) -> Self {
        let agents = Arc::new(AgentRegistry::new());
        let seam = Arc::new(adjust(UserQuestions::new(agents.clone())));
        let runtime = load(ask_user::COMPONENT, seam, config)
            .await
            .expect("the built component loads");
        let root = agents.register_root("root", None);
        Harness {
            agents,
            runtime,
            root,
        }
    }

    pub fn seam(&self) -> &UserQuestions {
        self.runtime.seam()
    }

    /// Adds `answerer` at the end of the waterfall and returns its probe.
    pub fn answerer(&self, behaviour: Behaviour) -> Arc<Probe> {
        self.answerer_at(behaviour, Placement::default())
    }

    pub fn answerer_at(&self, behaviour: Behaviour, placement: Placement) -> Arc<Probe> {
        let (answerer, probe) = TestAnswerer::new(behaviour);
        self.seam().waterfall().register(answerer, placement);
        probe
    }

    /// Calls the tool as the root agent with `arguments`.
    pub async fn call(&self, arguments: Value) -> ToolResult {
        self.call_as(&self.root, arguments).await
    }

    pub async fn call_as(&self, caller: &AgentHandle, arguments: Value) -> ToolResult {
        self.runtime
            .call(caller, &CancellationToken::new(), &arguments.to_string())
            .await
    }
}

/// Loads `component` on the shared engine, compiling it once per test process.
pub async fn load(
    component: &'static [u8],
    seam: Arc<UserQuestions>,
    config: RuntimeConfig,
) -> ask_user::wasmtime::Result<ToolRuntime> {
    static COMPILED: Mutex<Vec<(usize, Arc<Vec<u8>>)>> = Mutex::new(Vec::new());
    let engine = Engine::shared()?;
    let key = component.as_ptr() as usize;
    let cached = COMPILED
        .lock()
        .unwrap()
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, c)| c.clone());
    let compiled = match cached {
        Some(compiled) => compiled,
        None => {
            let compiled = Arc::new(engine.precompile(component)?);
            COMPILED.lock().unwrap().push((key, compiled.clone()));
            compiled
        }
    };
    // SAFETY: the bytes were produced by `precompile` in this process.
    unsafe { ToolRuntime::from_precompiled(engine, &compiled, seam, config).await }
}

/// Arguments with one single-select question `q` offering `labels`.
pub fn one_question(labels: &[&str]) -> Value {
    let options: Vec<Value> = labels
        .iter()
        .map(|l| serde_json::json!({ "label": l }))
        .collect();
    serde_json::json!({ "questions": [{ "id": "q", "question": "Which one?", "options": options }] })
}

/// What a [`TestAnswerer`] does with a request.
pub enum Behaviour {
    /// Claims with these answers.
    Claim(Vec<Answer>),
    /// Claims, choosing the first option of each question (or skipping it).
    ClaimFirst,
    /// Passes the request on.
    Pass,
    /// Runs code before and after passing the request on.
    Chain,
    /// Fails the ask with the error this makes.
    Fail(fn() -> AnswerError),
    /// Never answers and ignores the signal.
    Hang,
    /// Waits for the signal, then fails with the error this makes.
    FailOnAbort(fn() -> AnswerError),
    /// Waits this long, then claims as `ClaimFirst`.
    Slow(Duration),
}

/// What a [`TestAnswerer`] saw and went through.
#[derive(Default)]
pub struct Probe {
    /// Requests offered to it.
    pub seen: Mutex<Vec<AskRequest>>,
    /// Its future was dropped before it finished (the question withdrawn).
    pub withdrawn: AtomicUsize,
    /// `Chain`: the result the rest of the waterfall gave it.
    pub after_next: Mutex<Vec<Result<Vec<Answer>, String>>>,
    /// Who asked each request it saw: a relayed sub-agent's chain, or
    /// nothing for a root.
    pub asked_by: Mutex<Vec<Vec<String>>>,
    /// Told whenever a request arrives.
    arrived: tokio::sync::Notify,
    /// Why each withdrawn request was withdrawn, when another answerer
    /// racing it settled it ("answered elsewhere").
    pub settled_elsewhere: Mutex<Vec<String>>,
    /// Requests it holds now, and the most it ever held at once.
    active: AtomicUsize,
    most: AtomicUsize,
}

/// How long a test waits for a state before it fails: generous, for a
/// loaded two-core machine; only a broken host takes this long.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Waits until `ready()` holds, looking every few milliseconds (for states
/// nothing announces); fails the test after [`PATIENCE`], naming `what`.
pub async fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !ready() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {PATIENCE:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

impl Probe {
    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits until `n` requests have arrived; fails the test after
    /// [`PATIENCE`].
    pub async fn wait_for_calls(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let arrived = self.arrived.notified();
            if self.calls() >= n {
                return;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!(
                    "{} of {n} requests arrived within {PATIENCE:?}",
                    self.calls()
                );
            }
        }
    }

    /// The most requests it held at once.
    pub fn most_at_once(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }

    pub fn withdrawn(&self) -> usize {
        self.withdrawn.load(Ordering::SeqCst)
    }

    /// The requests it saw, as the JSON an answerer would get.
    pub fn seen_json(&self) -> Vec<Value> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .map(|r| serde_json::to_value(r).unwrap())
            .collect()
    }
}

/// An answerer that behaves as told and records what happens to it.
pub struct TestAnswerer {
    behaviour: Behaviour,
    probe: Arc<Probe>,
}

impl TestAnswerer {
    pub fn new(behaviour: Behaviour) -> (Self, Arc<Probe>) {
        let probe = Arc::new(Probe::default());
        (
            TestAnswerer {
                behaviour,
                probe: probe.clone(),
            },
            probe,
        )
    }
}

/// Counts the request as held while it lives, and a withdrawal when
/// dropped while armed.
struct WithdrawGuard<'a>(&'a Probe, bool, ask_user::waterfall::Elsewhere);

impl<'a> WithdrawGuard<'a> {
    fn new(probe: &'a Probe, elsewhere: ask_user::waterfall::Elsewhere) -> Self {
        let now = probe.active.fetch_add(1, Ordering::SeqCst) + 1;
        probe.most.fetch_max(now, Ordering::SeqCst);
        WithdrawGuard(probe, true, elsewhere)
    }
}

impl Drop for WithdrawGuard<'_> {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        if self.1 {
            self.0.withdrawn.fetch_add(1, Ordering::SeqCst);
            if let Some(why) = self.2.get() {
                self.0
                    .settled_elsewhere
                    .lock()
                    .unwrap()
                    .push(why.to_owned());
            }
        }
    }
}

fn first_labels(request: &AskRequest) -> Vec<Answer> {
    request
        .questions
        .iter()
        .map(|q| Answer {
            id: q.id.clone(),
            selected: q.labels().take(1).map(str::to_owned).collect(),
            custom: None,
        })
        .collect()
}

impl Answerer for TestAnswerer {
    fn name(&self) -> &str {
        "test"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        self.probe.seen.lock().unwrap().push(ask.request.clone());
        self.probe
            .asked_by
            .lock()
            .unwrap()
            .push(ask.asked_by.clone());
        self.probe.arrived.notify_waiters();
        Box::pin(async move {
            let mut guard = WithdrawGuard::new(&self.probe, next.elsewhere());
            let result = match &self.behaviour {
                Behaviour::Claim(answers) => Ok(answers.clone()),
                Behaviour::ClaimFirst => Ok(first_labels(&ask.request)),
                Behaviour::Pass => next.run().await,
                Behaviour::Chain => {
                    let result = next.run().await;
                    let seen = match &result {
                        Ok(answers) => Ok(answers.clone()),
                        Err(AnswerError::Seam(e)) => {
                            Err(e.code().map(|c| c.to_string()).unwrap_or_default())
                        }
                        Err(other) => Err(format!("{other:?}")),
                    };
                    self.probe.after_next.lock().unwrap().push(seen);
                    result
                }
                Behaviour::Fail(make) => Err(make()),
                Behaviour::Hang => std::future::pending().await,
                Behaviour::FailOnAbort(make) => {
                    ask.signal.cancelled().await;
                    Err(make())
                }
                Behaviour::Slow(delay) => {
                    tokio::time::sleep(*delay).await;
                    Ok(first_labels(&ask.request))
                }
            };
            guard.1 = false;
            result
        })
    }
}
