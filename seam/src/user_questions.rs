//! The user-questions seam (SPEC §2): the pipeline every ask goes through,
//! in its exact order, whether it comes from the component or straight from
//! the embedding host.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::ErrorCode;
use crate::agents::{AgentHandle, AgentRegistry, Caller, Delegated};
use crate::audit::AuditLog;
use crate::call::ScopedCall;
use crate::error::AskError;
use crate::floor::Floors;
use crate::question::{Answer, AskRequest};
use crate::sync::lock;
use crate::validate::{check_answers, check_intents};
use crate::waterfall::{Ask, Waterfall};

/// The seam of one host: its agents, its answerers, its time limit.
pub struct UserQuestions {
    agents: Arc<AgentRegistry>,
    waterfall: Waterfall,
    timeout: Option<Duration>,
    audit: Option<AuditLog>,
    delegated: Delegated,
    /// Under a relay: each root's asks (its own and its sub-agents'), one
    /// at a time.
    floors: Floors,
}

impl UserQuestions {
    /// A seam over `agents` with no answerers and no time limit.
    pub fn new(agents: Arc<AgentRegistry>) -> Self {
        UserQuestions {
            agents,
            waterfall: Waterfall::new(),
            timeout: None,
            audit: None,
            delegated: Delegated::Refuse,
            floors: Floors::default(),
        }
    }

    /// What a delegated sub-agent's ask gets; default: refused
    /// (`DELEGATED_CALLER`).
    pub fn with_delegated(mut self, delegated: Delegated) -> Self {
        self.delegated = delegated;
        self
    }

    /// Limits every ask to `timeout` (`ASK_TIMED_OUT`); default: no limit.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Records every ask in `audit`.
    pub fn with_audit(mut self, audit: AuditLog) -> Self {
        self.audit = Some(audit);
        self
    }

    /// The live agents: only these may ask.
    pub fn agents(&self) -> &Arc<AgentRegistry> {
        &self.agents
    }

    /// Runs a call as a new root agent `id` (make it unique: a random id),
    /// with answerers of its own; both end when the [`ScopedCall`] is
    /// dropped.
    pub fn scoped_call(&self, id: impl Into<String>) -> ScopedCall<'_> {
        ScopedCall::new(self, self.agents.register_root(id, None))
    }

    /// Runs a call as sub-agent `id` of `owner` (a root the front end
    /// keeps, e.g. a client's session): it asks as the host's
    /// [`Delegated`] policy says. The sub-agent ends when the call is
    /// dropped; `owner` does not.
    pub fn scoped_sub_agent_call(
        &self,
        owner: &AgentHandle,
        id: impl Into<String>,
    ) -> ScopedCall<'_> {
        ScopedCall::new(self, self.agents.register_delegate(id, owner))
    }

    /// Where answerers are registered.
    pub fn waterfall(&self) -> &Waterfall {
        &self.waterfall
    }

    /// Asks the human `request` on behalf of `caller` (`None`: agentless,
    /// reaching untagged answerers only), within the turn's `signal`.
    ///
    /// In order: an aborted signal (`ASK_ABORTED`), no questions
    /// (`EMPTY_QUESTIONS`), the caller (`CALLER_NOT_LIVE`, `DELEGATED_CALLER`,
    /// or under a relay `DELEGATED_ASK_LIMIT`), intents (`BAD_INTENT`), then
    /// the waterfall (`NO_PROVIDER` when nobody claims; under a relay after
    /// the asks of the same root before it), raced against the signal and
    /// the time limit, and the answers checked (`INVALID_ANSWER`).
    pub async fn ask(
        &self,
        request: AskRequest,
        caller: Option<&AgentHandle>,
        signal: &CancellationToken,
    ) -> Result<Vec<Answer>, AskError> {
        self.ask_returning(request, caller, signal).await.1
    }

    /// Asks as [`ask`](Self::ask) does, and gives the request back with the
    /// outcome: for a caller that keeps it (the runtime checks a call run
    /// again against it) without a copy.
    pub async fn ask_returning(
        &self,
        request: AskRequest,
        caller: Option<&AgentHandle>,
        signal: &CancellationToken,
    ) -> (AskRequest, Result<Vec<Answer>, AskError>) {
        let span = tracing::info_span!(
            "ask",
            caller = caller.map(AgentHandle::id),
            questions = request.questions.len()
        );
        async {
            let started = Instant::now();
            let claimed_by = Mutex::new(None);
            let chain = Mutex::new(Vec::new());
            let (request, result) = self
                .pipeline(request, caller, signal, &claimed_by, &chain)
                .await;
            let claimed_by = lock(&claimed_by).take();
            let answerer = result.as_ref().ok().and(claimed_by.as_deref());
            let duration = started.elapsed();
            match &result {
                Ok(_) => tracing::info!(answerer, ?duration, "answered"),
                Err(error) => tracing::info!(
                    code = error.code().map(ErrorCode::as_str),
                    name = error.name(),
                    ?duration,
                    "not answered: {}",
                    error.message()
                ),
            }
            if let Some(audit) = &self.audit {
                audit.record(
                    caller,
                    &lock(&chain),
                    &request.questions,
                    answerer,
                    &result,
                    duration,
                );
            }
            (request, result)
        }
        .instrument(span)
        .await
    }

    /// Waits until the audit trail, if any, holds every ask so far.
    pub async fn flush_audit(&self) {
        if let Some(audit) = &self.audit {
            audit.flush().await;
        }
    }

    /// The seam's steps in order; the request comes back with the outcome.
    async fn pipeline(
        &self,
        request: AskRequest,
        caller: Option<&AgentHandle>,
        signal: &CancellationToken,
        claimed_by: &Mutex<Option<String>>,
        chain: &Mutex<Vec<String>>,
    ) -> (AskRequest, Result<Vec<Answer>, AskError>) {
        let admitted = match self.admit(&request, caller, signal) {
            Ok(admitted) => admitted,
            Err(error) => return (request, Err(error)),
        };
        let asked_by = admitted
            .as_ref()
            .map(|caller| caller.chain.clone())
            .unwrap_or_default();
        lock(chain).clone_from(&asked_by);
        let ask = Ask {
            request,
            caller: caller.cloned(),
            signal: signal.clone(),
            asked_by,
        };
        let result = self.answer(&ask, admitted.as_ref(), claimed_by).await;
        (ask.request, result)
    }

    /// The checks before any answerer sees the request: the signal, the
    /// questions, the caller (who it is, under the policy), the intents.
    fn admit(
        &self,
        request: &AskRequest,
        caller: Option<&AgentHandle>,
        signal: &CancellationToken,
    ) -> Result<Option<Caller>, AskError> {
        if signal.is_cancelled() {
            return Err(AskError::aborted());
        }
        if request.questions.is_empty() {
            return Err(AskError::new(
                ErrorCode::EmptyQuestions,
                "the call holds no questions; pass at least one question",
            ));
        }
        let admitted = match caller {
            Some(handle) => Some(self.agents.check_caller(handle, self.delegated)?),
            None => None,
        };
        check_intents(request)?;
        Ok(admitted)
    }

    /// The waterfall (under a relay, after the root's earlier asks), raced
    /// against the signal and the time limit, and the answers checked.
    async fn answer(
        &self,
        ask: &Ask,
        admitted: Option<&Caller>,
        claimed_by: &Mutex<Option<String>>,
    ) -> Result<Vec<Answer>, AskError> {
        let signal = &ask.signal;
        let scope = admitted.map(|caller| &caller.scope);
        let dispatch = async {
            // Under a relay, the root's asks reach the human one at a time.
            let _turn = match (admitted, self.delegated) {
                (Some(caller), Delegated::Relay { .. }) => Some(
                    self.floors
                        .take(&caller.root, caller.chain.is_empty())
                        .await,
                ),
                _ => None,
            };
            self.waterfall.dispatch(ask, scope, claimed_by).await
        };
        let limited = async {
            match self.timeout {
                None => dispatch.await.map_err(Some),
                Some(limit) => match tokio::time::timeout(limit, dispatch).await {
                    Ok(result) => result.map_err(Some),
                    Err(_) => Err(None),
                },
            }
        };
        // Only a live agent's question waits: withdrawn when it, or an
        // agent above it, ends.
        let ended = async {
            match admitted {
                Some(caller) => caller.ended.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // The answerers' result is polled first: a domain error that an
        // answerer gives on seeing the signal wins over the abort.
        let answers = tokio::select! {
            biased;
            result = limited => match result {
                Ok(answers) => answers,
                Err(Some(error)) => return Err(error.into_ask_error(signal.is_cancelled())),
                Err(None) => return Err(AskError::new(
                    ErrorCode::AskTimedOut,
                    format!(
                        "no answer within the host's limit of {:?}; the question was withdrawn. \
                         Continue without the answer, or ask again later",
                        self.timeout.unwrap_or_default()
                    ),
                )),
            },
            () = signal.cancelled() => return Err(AskError::aborted()),
            () = ended => return Err(AskError::new(
                ErrorCode::CallerNotLive,
                format!(
                    "agent {:?} ended, or an agent above it did, while its question waited; the \
                     question was withdrawn. Only a running agent can ask the user",
                    admitted.map_or("", |caller| caller.handle.id())
                ),
            )),
        };
        check_answers(&ask.request, &answers)?;
        Ok(answers)
    }
}
