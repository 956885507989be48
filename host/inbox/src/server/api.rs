//! The API, for agents and commands: ask, list, wait for, answer, confirm
//! and withdraw questions; every request carries its [`Principal`].

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Extension, Path, Query, State};
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde::Deserialize;

use ask_user_seam::remote::{Outcome, ResultValue};
use ask_user_seam::{Answer, ErrorCode, TransportedError};

use crate::access::{self, Credential, Only, Principal};
use crate::store::{Record, Settled, SettledBy, Settlement, State as QuestionState};
use crate::waiters::Watch;
use crate::{
    AskBody, AskReply, PageLink, QuestionList, QuestionView, UnreadableView, WithdrawBody,
};

use super::pages::{departure, report};
use super::rejection::{ApiError, Body, Shape};
use super::{HISTORY, Inbox, MAX_BODY_BYTES, MAX_HISTORY, MAX_WAIT, Unanswered};

/// The API's routes; each request carries its [`Principal`].
/// Who may call each route is said here, by a guard layered on its
/// handler ([`access::only`]).
pub(super) fn api(inbox: Arc<Inbox>) -> Router {
    let only = |only| axum::middleware::from_fn_with_state(only, access::only);
    Router::new()
        .route(
            "/api/questions",
            post(ask.layer(only(Only::Agents("ask"))))
                .get(list.layer(only(Only::People("list questions")))),
        )
        .route("/api/questions/{id}", get(question))
        .route(
            "/api/questions/{id}/answer",
            post(answer.layer(only(Only::People("answer")))),
        )
        .route(
            "/api/questions/{id}/dismiss",
            post(dismiss.layer(only(Only::People("dismiss")))),
        )
        .route(
            "/api/questions/{id}/delivered",
            post(delivered.layer(only(Only::Agents("confirm an outcome")))),
        )
        .route(
            "/api/questions/{id}/withdraw",
            post(withdraw.layer(only(Only::Agents("withdraw a question")))),
        )
        .route("/api/page", post(page_link))
        .with_state(inbox)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// Counts an agent as waiting for a question while its request is open
/// (a person's request only watches it).
/// As it leaves, when its agent was last here is written first, and only
/// then does the question stop counting as attached: a sweep in between
/// never expires a question whose agent has just been waiting (it is
/// written once per wait, never on a timer).
struct Attached {
    inbox: Arc<Inbox>,
    id: String,
    /// Its agent's wait (or one user's owner's), not a person's: a person
    /// is woken as an agent is, and counts for nothing.
    present: bool,
    /// The wait ended with a reply; dropped without one, its agent is gone.
    replied: bool,
}

impl Attached {
    /// Attaches a wait for `id`; what it watches for wake-ups, and the
    /// question as it was read once watched, when that was read here. A
    /// team's servers share presence through the database: the wait's
    /// start is written there too (reading the question in the same step),
    /// so that no server expires a question whose agent waits on another
    /// ([`sweep`]).
    async fn new(inbox: &Arc<Inbox>, id: &str, present: bool) -> (Self, Watch, Option<Record>) {
        let mut read = None;
        let watch = match present {
            false => inbox.waiters.watch(id),
            true => {
                let watch = inbox.waiters.attach(id);
                read = inbox.mode.waits(inbox.store.as_ref(), id).await;
                inbox.agent_back(id);
                watch
            }
        };
        let attached = Attached {
            inbox: inbox.clone(),
            id: id.to_owned(),
            present,
            replied: false,
        };
        (attached, watch, read)
    }

    /// Its agent's wait ended (`vanished`: without a reply, its connection
    /// closed): when it was last here is written, then it is detached, and
    /// a vanished agent's pages hear that it is gone.
    async fn leave(inbox: Arc<Inbox>, id: String, vanished: bool) {
        if let Err(error) = inbox.store.seen(id.clone(), crate::now()).await {
            tracing::warn!(%error, "the inbox could not note that an agent waited");
        }
        inbox.waiters.detach(&id);
        match vanished {
            true => inbox.agent_vanished(&id),
            // It was here to the end of this wait, whatever an earlier one did.
            false => inbox.agent_back(&id),
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let (inbox, id) = (self.inbox.clone(), std::mem::take(&mut self.id));
        if !self.present {
            inbox.waiters.unwatch(&id);
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(Attached::leave(inbox, id, !self.replied));
        }
    }
}

impl Shape for AskBody {
    const SHAPE: &'static str = "an ask";
}

async fn ask(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Body(body): Body<AskBody>,
) -> Result<Json<AskReply>, ApiError> {
    if body.session.is_empty() || body.request.questions.is_empty() {
        return Err(ApiError::BadRequest(
            "an ask needs a session and at least one question".into(),
        ));
    }
    Ok(Json(inbox.ask(body, caller.owner()).await?))
}

#[derive(Deserialize)]
struct ListQuery {
    #[serde(default)]
    all: bool,
    limit: Option<usize>,
}

async fn list(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Query(query): Query<ListQuery>,
) -> Result<Json<QuestionList>, ApiError> {
    let limit = query.limit.unwrap_or(HISTORY);
    if limit > MAX_HISTORY {
        return Err(ApiError::BadRequest(format!(
            "a listing holds at most {MAX_HISTORY} questions that left: ask for ?limit={MAX_HISTORY} or fewer"
        )));
    }
    let listing = inbox.store.list(query.all, limit).await?;
    report(&listing.unreadable);
    Ok(Json(QuestionList {
        questions: listing
            .records
            .into_iter()
            .filter(|record| caller.may_see(record))
            .map(|r| inbox.view(r))
            .collect(),
        unreadable: listing
            .unreadable
            .into_iter()
            .map(|row| UnreadableView {
                id: row.id,
                why: row.why,
            })
            .collect(),
    }))
}

/// The question `id`, when `caller` may see it; else 404, as for one that
/// does not exist: it learns nothing of it.
async fn visible(inbox: &Inbox, caller: &Principal, id: &str) -> Result<Record, ApiError> {
    match inbox.store.get(id.to_owned()).await? {
        Some(record) if caller.may_see(&record) => Ok(record),
        _ => Err(ApiError::NotFound(id.to_owned())),
    }
}

#[derive(Deserialize)]
struct WaitQuery {
    /// Seconds.
    wait: Option<f64>,
}

async fn question(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    credential: Option<Extension<Credential>>,
    Path(id): Path<String>,
    Query(query): Query<WaitQuery>,
) -> Result<Json<QuestionView>, ApiError> {
    let wait = Duration::try_from_secs_f64(query.wait.unwrap_or(0.0))
        .unwrap_or_default()
        .min(MAX_WAIT);
    let deadline = tokio::time::Instant::now() + wait;
    // A team's token revoked while it waits gets nothing more: checked when
    // every waiter is woken (which a revocation does) and before an outcome
    // reached by waiting is given.
    let revoked = async || match &credential {
        Some(Extension(credential)) if credential.revoked().await => Err(ApiError::Revoked),
        _ => Ok(()),
    };
    // Only its agent (or one user's owner) waiting keeps a question from
    // expiring and counts as its agent being here: a person polling it
    // does neither.
    let presence = !matches!(caller, Principal::Person(_));
    // Watching once the question is found waiting (a question the caller
    // may not see is never held from expiry by it); read again right after,
    // so that nothing settled in between is missed.
    let mut watching: Option<(Attached, Watch)> = None;
    // The question as read when it was first watched, when that was read.
    let mut read = None;
    let replied = async {
        loop {
            let record = match read.take() {
                Some(record) if caller.may_see(&record) => record,
                Some(_) => return Err(ApiError::NotFound(id.clone())),
                None => visible(&inbox, &caller, &id).await?,
            };
            if record.state != QuestionState::Waiting || wait.is_zero() {
                if watching.is_some() {
                    revoked().await?;
                }
                return Ok(Json(inbox.view(record)));
            }
            let Some((_, watch)) = &mut watching else {
                let (attached, watch, record) = Attached::new(&inbox, &id, presence).await;
                (watching, read) = (Some((attached, watch)), record);
                continue;
            };
            tokio::select! {
                _ = watch.mine.changed() => {}
                _ = watch.all.changed() => revoked().await?,
                () = tokio::time::sleep_until(deadline) => return Ok(Json(inbox.view(record))),
                () = inbox.closing.cancelled() => return Ok(Json(inbox.view(record))),
            }
        }
    }
    .await;
    // Dropped before this (its connection closed mid-wait), the wait says
    // its agent is gone.
    if let Some((attached, _)) = &mut watching {
        attached.replied = true;
    }
    replied
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    answers: Vec<Answer>,
}

impl Shape for AnswerBody {
    const SHAPE: &'static str =
        "answers shaped {\"answers\":[{\"id\":…,\"selected\":[…],\"custom\":…}]}";
}

async fn answer(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(body): Body<AnswerBody>,
) -> Result<(), ApiError> {
    let outcome = Outcome::Result {
        value: ResultValue {
            answers: body.answers,
        },
    };
    settle_here(&inbox, &caller, id, outcome).await
}

/// A person dismisses the question from the command line: its agent's ask
/// ends `ASK_CANCELLED`, as a dismissal on the page does.
async fn dismiss(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<(), ApiError> {
    let outcome = Outcome::Rejected {
        error: TransportedError {
            name: ErrorCode::AskCancelled
                .name()
                .unwrap_or_default()
                .to_owned(),
            code: Some(ErrorCode::AskCancelled.as_str().to_owned()),
            message: crate::DISMISSED.to_owned(),
        },
    };
    settle_here(&inbox, &caller, id, outcome).await
}

/// Settles `id` with `outcome`, as `caller` did it from the command line.
async fn settle_here(
    inbox: &Inbox,
    caller: &Principal,
    id: String,
    outcome: Outcome,
) -> Result<(), ApiError> {
    // One outside its audience is told what it would be told of a
    // question that does not exist: nothing of it, not even that it exists.
    visible(inbox, caller, &id).await?;
    match inbox
        .settle(&id, outcome, SettledBy::Command, caller.person())
        .await
    {
        Ok(()) => Ok(()),
        Err(Unanswered::Unsettled(unsettled)) => Err(ApiError::Unsettled(unsettled)),
        Err(Unanswered::OutsideAudience) => Err(ApiError::NotFound(id)),
    }
}

async fn delivered(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    visible(&inbox, &caller, &id).await?;
    inbox.store.delivered(id, crate::now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

impl Shape for WithdrawBody {
    const SHAPE: &'static str = "{\"reason\":…}";
}

async fn withdraw(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(body): Body<WithdrawBody>,
) -> Result<StatusCode, ApiError> {
    visible(&inbox, &caller, &id).await?;
    let by = SettledBy::Agent(body.reason);
    let settlement = Settlement {
        state: QuestionState::Withdrawn,
        outcome: None,
        by: by.clone(),
        person: None,
    };
    match inbox
        .store
        .settle(id.clone(), settlement, crate::now())
        .await?
    {
        Settled::Done => {
            inbox.left(
                &id,
                departure(&id, QuestionState::Withdrawn, Some(&by), None),
            );
            Ok(StatusCode::NO_CONTENT)
        }
        _ => Err(ApiError::Conflict("it was no longer waiting")),
    }
}

async fn page_link(
    State(inbox): State<Arc<Inbox>>,
    Extension(caller): Extension<Principal>,
) -> Result<Json<PageLink>, ApiError> {
    if !matches!(caller, Principal::Owner) {
        return Err(ApiError::Forbidden(
            "a team's inbox has no one-time links: people open its address and sign in with \
             their person token"
                .to_owned(),
        ));
    }
    match inbox.gate.ticket(&inbox.address) {
        Ok(url) => Ok(Json(PageLink { url })),
        Err(error) => Err(ApiError::Unavailable(error)),
    }
}
