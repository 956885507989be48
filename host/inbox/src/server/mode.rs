//! [`Mode`]: what one user's inbox ([`Local`]) and one of a team's servers
//! ([`Team`]) do differently, behind one trait, so that the rest of the
//! server never asks which it is.

use std::sync::Arc;
use std::time::Duration;

use axum::http::request::Parts;
use axum::response::Response;

use ask_user_web::answer_page::Gate;

use super::{AGENT_GAP_MILLIS, MAX_WAIT};
use crate::access::Principal;
use crate::sessions::Sessions;
use crate::store::team::Role;
use crate::store::{BoxFuture, Person, Record, Store, StoreFuture, TeamStore};

/// What differs between one user's inbox and a team's server.
pub(super) trait Mode: Send + Sync + 'static {
    /// Whether this is one of a team's servers.
    fn is_team(&self) -> bool;

    /// Whether this server hears of a question asked or settled through
    /// the store's announcements (each of a team's servers does, whichever
    /// settled it), rather than from this process.
    fn announces(&self) -> bool {
        self.is_team()
    }

    /// Who a page's request comes from, or the response that refuses it.
    fn admit<'a>(
        &'a self,
        gate: &'a Gate,
        parts: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, Response>>;

    /// The page's front door: the page, or how to get in.
    fn front<'a>(&'a self, gate: &'a Gate, parts: Parts) -> BoxFuture<'a, Response>;

    /// A team's person `name` (with their token's groups) while their
    /// token holds; `None` in one user's inbox, where nobody is named.
    fn person(&self, name: String) -> StoreFuture<'_, Option<Person>>;

    /// How long after its agent was last seen a question counts as waited
    /// for: between two waits; in a team, also through a whole wait open
    /// on another server (a wait is written when it starts and ends).
    fn presence_millis(&self) -> i64;

    /// How long a question's agent may be gone before the question
    /// expires, for a `retention` period: a team's never expires one whose
    /// agent may still wait on another server.
    fn expires_after(&self, retention: Duration) -> i64;

    /// An agent starts waiting for `id` here: a team's servers share
    /// presence through the store (the wait's start written there, the
    /// question read in the same step, as it is then); one user's inbox
    /// keeps it in this process.
    fn waits<'a>(&'a self, store: &'a dyn Store, id: &'a str) -> BoxFuture<'a, Option<Record>>;
}

/// One user's inbox: its owner is admitted by the page's gate, and every
/// change happens in this process.
pub(super) struct Local;

impl Mode for Local {
    fn is_team(&self) -> bool {
        false
    }

    fn admit<'a>(
        &'a self,
        gate: &'a Gate,
        parts: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, Response>> {
        Box::pin(async move { gate.admit(parts).map(|()| Principal::Owner) })
    }

    fn front<'a>(&'a self, gate: &'a Gate, parts: Parts) -> BoxFuture<'a, Response> {
        Box::pin(async move { gate.front(&parts) })
    }

    fn person(&self, _: String) -> StoreFuture<'_, Option<Person>> {
        Box::pin(async { Ok(None) })
    }

    fn presence_millis(&self) -> i64 {
        AGENT_GAP_MILLIS
    }

    fn expires_after(&self, retention: Duration) -> i64 {
        retention.as_millis() as i64
    }

    fn waits<'a>(&'a self, _: &'a dyn Store, _: &'a str) -> BoxFuture<'a, Option<Record>> {
        Box::pin(async { None })
    }
}

/// One of a team's servers: people sign in ([`Sessions`]), and the store
/// is shared with the other servers, announcing every change to each.
pub(super) struct Team {
    pub sessions: Arc<Sessions>,
    /// The store's team side: its people's tokens.
    pub people: Arc<dyn TeamStore>,
}

impl Mode for Team {
    fn is_team(&self) -> bool {
        true
    }

    fn admit<'a>(
        &'a self,
        _: &'a Gate,
        parts: &'a Parts,
    ) -> BoxFuture<'a, Result<Principal, Response>> {
        Box::pin(async move { self.sessions.admit(parts).await.map(Principal::Person) })
    }

    fn front<'a>(&'a self, _: &'a Gate, parts: Parts) -> BoxFuture<'a, Response> {
        Box::pin(async move { self.sessions.front(&parts).await })
    }

    fn person(&self, name: String) -> StoreFuture<'_, Option<Person>> {
        Box::pin(async move {
            Ok(self
                .people
                .tokens()
                .await?
                .into_iter()
                .find(|row| {
                    row.identity.name == name
                        && row.revoked_at.is_none()
                        && row.identity.role == Role::Person
                })
                .map(|row| Person {
                    name: row.identity.name,
                    groups: row.identity.groups,
                }))
        })
    }

    fn presence_millis(&self) -> i64 {
        AGENT_GAP_MILLIS + MAX_WAIT.as_millis() as i64
    }

    fn expires_after(&self, retention: Duration) -> i64 {
        (retention.as_millis() as i64).max(self.presence_millis())
    }

    fn waits<'a>(&'a self, store: &'a dyn Store, id: &'a str) -> BoxFuture<'a, Option<Record>> {
        Box::pin(async move {
            match store.seen(id.to_owned(), crate::now()).await {
                Ok(record) => record,
                Err(error) => {
                    tracing::warn!(%error, "the inbox could not note that an agent waits");
                    None
                }
            }
        })
    }
}
