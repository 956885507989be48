//! Who is asking the inbox's API, and what they may do.
//!
//! One user's inbox serves its API on a socket only that user can reach:
//! every caller there is [`Principal::Owner`]. A team's inbox serves it over
//! the network, and every request carries a token (`Authorization: Bearer
//! askusr_…`), looked up in the database, or in the server's memory of the
//! tokens it found while it hears the database's announcements
//! ([`crate::store::token_cache`]: a revoked token is refused everywhere
//! within an announcement's latency): an agent's token asks, waits for,
//! confirms and withdraws its own questions only; a person's token lists
//! and answers the questions whose audience is empty or shares one of their
//! groups. A question an identity may not see is "not found" to it.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use ask_user_web::refusal::refusal;

use crate::store::team::{Role, Tokens};
use crate::store::{Person, Record};

/// Who made a request.
#[derive(Debug, Clone)]
pub enum Principal {
    /// The user of a one-user inbox: everything.
    Owner,
    /// A team's agent, by its token's name.
    Agent(String),
    /// A team's person.
    Person(Person),
}

impl Principal {
    /// Whether the caller may read `record` (and an agent, wait for it).
    pub fn may_see(&self, record: &Record) -> bool {
        match self {
            Principal::Owner => true,
            Principal::Agent(name) => record.owner.as_deref() == Some(name),
            Principal::Person(person) => record.answerable_by(&person.groups),
        }
    }

    /// The identity questions asked by this caller belong to.
    pub fn owner(&self) -> Option<String> {
        match self {
            Principal::Agent(name) => Some(name.clone()),
            _ => None,
        }
    }

    /// The person settling a question, checked against its audience.
    pub fn person(&self) -> Option<Person> {
        match self {
            Principal::Person(person) => Some(person.clone()),
            _ => None,
        }
    }
}

/// What only some callers do, and how it is said to one who may not.
#[derive(Debug, Clone, Copy)]
pub enum Only {
    /// Agents (and one user's owner) do it: asking, confirming,
    /// withdrawing.
    Agents(&'static str),
    /// People (and one user's owner) do it: listing, answering.
    People(&'static str),
}

/// A route's guard (a layer of its handler): the request goes on when its
/// [`Principal`] may do what `only` says, else 403 saying who does.
pub async fn only(State(only): State<Only>, request: Request, next: Next) -> Response {
    let refused = match (only, request.extensions().get::<Principal>()) {
        (Only::Agents(what), Some(Principal::Person(_))) => Some(format!(
            "a person's token cannot {what}: agents do, with an agent's token"
        )),
        (Only::People(what), Some(Principal::Agent(_))) => Some(format!(
            "an agent's token cannot {what}: people do, with a person's token"
        )),
        _ => None,
    };
    match refused {
        Some(why) => forbidden(why),
        None => next.run(request).await,
    }
}

/// 403 with why.
pub fn forbidden(why: String) -> Response {
    refusal(StatusCode::FORBIDDEN, "forbidden", why)
}

/// The team's middleware: the request's token, looked up, becomes its
/// [`Principal`]; 401 without a token, or with one unknown or revoked.
pub async fn authenticate(
    State(store): State<Arc<dyn Tokens>>,
    mut request: Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token else {
        return refused(request, "no token: send Authorization: Bearer askusr_…").await;
    };
    let caller = match store.identify(&token).await {
        Ok(Some(identity)) => match identity.role {
            Role::Agent => Principal::Agent(identity.name),
            Role::Person => Principal::Person(Person {
                name: identity.name,
                groups: identity.groups,
            }),
        },
        Ok(None) => return refused(request, "the token is unknown or revoked").await,
        Err(error) => {
            tracing::warn!(%error, "the inbox could not check a token");
            return refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                error.to_string(),
            );
        }
    };
    request.extensions_mut().insert(caller);
    request.extensions_mut().insert(Credential { store, token });
    next.run(request).await
}

/// 401 with why, once the request's body (at most what the API takes) is
/// read: a client still sending it when the refusal comes and the
/// connection closes may lose the reply, and be left with a broken
/// connection instead of the reason.
async fn refused(request: Request, why: &str) -> Response {
    let _ = axum::body::to_bytes(request.into_body(), crate::server::MAX_BODY_BYTES).await;
    unauthorized(why)
}

/// The token a team's request came with, kept to be checked again by a
/// request that lasts (a long wait): a token revoked meanwhile ends it and
/// is given nothing more.
#[derive(Clone)]
pub struct Credential {
    store: Arc<dyn Tokens>,
    token: String,
}

impl Credential {
    /// Whether the token is no longer valid (revoked since the request
    /// began); false while it is, or when the store cannot tell (a failed
    /// look-up is tried again at the next wake-up).
    pub async fn revoked(&self) -> bool {
        match self.store.identify(&self.token).await {
            Ok(identity) => identity.is_none(),
            Err(error) => {
                tracing::warn!(%error, "the inbox could not check a waiting request's token again");
                false
            }
        }
    }
}

/// 401 with why.
pub fn unauthorized(why: &str) -> Response {
    let mut refused = refusal(StatusCode::UNAUTHORIZED, "unauthorized", why);
    let bearer = header::HeaderValue::from_static("Bearer");
    refused
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, bearer);
    refused
}
