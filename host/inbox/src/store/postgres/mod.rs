//! [`PgStore`]: a team's inbox in PostgreSQL, shared by any number of
//! inbox servers; its SQL all here. The database is the truth: a server
//! keeps nothing a second server would need.
//!
//! - Every question asked, and every question that leaves the waiting
//!   state, is announced in the same transaction on the channel
//!   [`CHANNEL`] with its id only; each server listens on one connection,
//!   wakes its own waiters, who read the question again from the database,
//!   and tells its open pages.
//! - Migrations ([`schema::MIGRATIONS`], one step per version) run in one
//!   transaction under an advisory lock, so servers starting together take
//!   turns; a database of a newer schema is refused.
//! - People's page sessions: a random id in an `HttpOnly` cookie, stored as
//!   its digest with the token it was opened with; a revoked token ends its
//!   sessions at once, on every server.
//! - Notifications go through an outbox table: every server claims due
//!   rows with `FOR UPDATE SKIP LOCKED`, so each is sent by one server
//!   (again only when its claimer died before sending, after
//!   [`CLAIM_LEASE`](crate::store::team::CLAIM_LEASE)).
//! - Identities: tokens are stored as their SHA-256 only (a token is 128
//!   random bits, so a fast digest is enough); a revocation is announced,
//!   so that servers may keep identities in memory while they listen
//!   (the store's `token_cache` module).
//! - An ask is one round trip: the function `ask_user_ask` (a migration
//!   step) does under a lock what a transaction of six statements did.

pub mod schema;
mod team;

use std::sync::Arc;

use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};

use super::team::{Identity, Notice, Role};
use super::{
    Columns, Listing, Millis, NewQuestion, Opened, Person, Record, Settled, Settlement, Store,
    StoreError, StoreFuture, Unreadable, fingerprint, new_id,
};

/// The columns every query of questions reads, in [`record`]'s order.
const COLUMNS: &str = "id, session, agent, cwd, request, asked_at, agent_seen_at, state, \
                       outcome, settled_by, settled_at, delivered_at, owner, audience, \
                       answered_by";

/// The channel a question asked or settled is announced on (its id), and
/// a token revoked (an empty announcement).
pub const CHANNEL: &str = "ask_user_inbox";

/// The store in a PostgreSQL database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match error {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed => StoreError::Unavailable(error.to_string()),
            error => StoreError::backend(error),
        }
    }
}

/// Opens the store `url` names (`postgres://…`): a team's.
pub fn open(url: &str) -> StoreFuture<'_, Opened> {
    Box::pin(async move { Ok(Opened::Team(Arc::new(PgStore::connect(url).await?))) })
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://…`) and brings it to
    /// [`schema::SCHEMA_VERSION`], or refuses a newer one.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        // 16 connections a server: on 2 cores, 8 took 1,000 waiting agents
        // in 0.33 s and 32 in 0.42 s, against 0.31 s (the inbox bench).
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot reach the database: {e}")))?;
        schema::migrate(&pool).await?;
        Ok(PgStore { pool })
    }

    async fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> Result<(Record, bool), StoreError> {
        let fingerprint = fingerprint(&question.request)?;
        let request = serde_json::to_string(&question.request).map_err(StoreError::backend)?;
        // One round trip (schema's `ask_user_ask`): seen again, or written
        // with its notification and announcement.
        let (again, id): (bool, String) = sqlx::query_as(
            "SELECT again, question FROM ask_user_ask($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, \
             $11, $12)",
        )
        .bind(new_id()?)
        .bind(&question.session)
        .bind(&question.agent)
        .bind(&question.cwd)
        .bind(request)
        .bind(fingerprint)
        .bind(&question.owner)
        .bind(&question.audience)
        .bind(since)
        .bind(now)
        .bind(team::stage(Notice::Asked))
        .bind(CHANNEL)
        .fetch_one(&self.pool)
        .await?;
        if !again {
            return Ok((Record::asked(id, question, now), false));
        }
        match self.get(&id).await? {
            Some(found) => Ok((found, true)),
            None => Err(StoreError::Conflict(format!(
                "question {id} was settled and removed meanwhile: ask again"
            ))),
        }
    }

    async fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        self.one(
            &format!("SELECT {COLUMNS} FROM questions WHERE id = $1"),
            id,
            None,
        )
        .await
    }

    /// The question `query` reads of `id` (and `now`, when given).
    async fn one(
        &self,
        query: &str,
        id: &str,
        now: Option<Millis>,
    ) -> Result<Option<Record>, StoreError> {
        let mut query = sqlx::query(query).bind(id);
        if let Some(now) = now {
            query = query.bind(now);
        }
        let row = query.fetch_optional(&self.pool).await?;
        row.map(|row| {
            record(&row).map_err(|Unreadable { id, why }| {
                StoreError::Corrupt(format!(
                    "question {id} cannot be read by this version ({why})"
                ))
            })
        })
        .transpose()
    }

    async fn settle(
        &self,
        id: &str,
        settlement: Settlement,
        now: Millis,
    ) -> Result<Settled, StoreError> {
        let groups: Option<Vec<String>> = settlement.person.as_ref().map(|p| p.groups.clone());
        let mut transaction = self.pool.begin().await?;
        // The audience is checked in the update that makes the first
        // settlement win: nothing can change between the two.
        let settled = sqlx::query(
            "UPDATE questions SET state = $2, outcome = $3, settled_by = $4, settled_at = $5, \
             answered_by = $6 WHERE id = $1 AND state = 'waiting' AND \
             ($7::text[] IS NULL OR cardinality(audience) = 0 OR audience && $7::text[])",
        )
        .bind(id)
        .bind(settlement.state.as_str())
        .bind(settlement.outcome.map(|value| value.to_string()))
        .bind(settlement.by.as_str())
        .bind(now)
        .bind(settlement.person.map(|Person { name, .. }| name))
        .bind(&groups)
        .execute(&mut *transaction)
        .await?;
        if settled.rows_affected() == 1 {
            announce(&mut transaction, id).await?;
            transaction.commit().await?;
            return Ok(Settled::Done);
        }
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM questions WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut *transaction)
            .await?;
        transaction.rollback().await?;
        Ok(match (state.as_deref(), groups) {
            (Some("waiting"), Some(_)) => Settled::OutsideAudience,
            _ => Settled::NotWaiting,
        })
    }

    async fn stamp(&self, update: &str, id: &str, now: Millis) -> Result<(), StoreError> {
        sqlx::query(update)
            .bind(id)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let mut transaction = self.pool.begin().await?;
        // Every server sweeps: the update settles each question once, and
        // returns only what this sweep expired.
        let ids: Vec<String> = sqlx::query_scalar(
            "UPDATE questions SET state = 'expired', settled_by = 'retention', settled_at = $2 \
             WHERE state = 'waiting' AND agent_seen_at < $1 AND NOT (id = ANY($3)) RETURNING id",
        )
        .bind(before)
        .bind(now)
        .bind(attached)
        .fetch_all(&mut *transaction)
        .await?;
        for id in &ids {
            announce(&mut transaction, id).await?;
        }
        transaction.commit().await?;
        Ok(ids)
    }

    async fn list(&self, all: bool, limit: usize) -> Result<Listing, StoreError> {
        let mut rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM questions WHERE state = 'waiting' ORDER BY seq"
        ))
        .fetch_all(&self.pool)
        .await?;
        if all {
            rows.extend(
                sqlx::query(&format!(
                    "SELECT {COLUMNS} FROM questions WHERE state != 'waiting' \
                     ORDER BY seq DESC LIMIT $1"
                ))
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await?,
            );
        }
        let mut listing = Listing::default();
        for row in &rows {
            match record(row) {
                Ok(record) => listing.records.push(record),
                Err(unreadable) => listing.unreadable.push(unreadable),
            }
        }
        Ok(listing)
    }
}

impl Store for PgStore {
    fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> StoreFuture<'_, (Record, bool)> {
        Box::pin(PgStore::ask(self, question, since, now))
    }

    fn get(&self, id: String) -> StoreFuture<'_, Option<Record>> {
        Box::pin(async move { PgStore::get(self, &id).await })
    }

    fn settle(&self, id: String, settlement: Settlement, now: Millis) -> StoreFuture<'_, Settled> {
        Box::pin(async move { PgStore::settle(self, &id, settlement, now).await })
    }

    fn seen(&self, id: String, now: Millis) -> StoreFuture<'_, Option<Record>> {
        Box::pin(async move {
            let update = format!(
                "UPDATE questions SET agent_seen_at = $2 WHERE id = $1 RETURNING {COLUMNS}"
            );
            self.one(&update, &id, Some(now)).await
        })
    }

    fn delivered(&self, id: String, now: Millis) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.stamp(
                "UPDATE questions SET delivered_at = $2 WHERE id = $1 AND delivered_at IS NULL",
                &id,
                now,
            )
            .await
        })
    }

    fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: Vec<String>,
    ) -> StoreFuture<'_, Vec<String>> {
        Box::pin(async move { PgStore::expire(self, before, now, &attached).await })
    }

    fn list(&self, all: bool, limit: usize) -> StoreFuture<'_, Listing> {
        Box::pin(PgStore::list(self, all, limit))
    }

    fn channel_state(&self, name: String) -> StoreFuture<'_, Option<String>> {
        Box::pin(async move {
            let state = sqlx::query_scalar("SELECT state FROM channel_states WHERE name = $1")
                .bind(name)
                .fetch_optional(&self.pool)
                .await?;
            Ok(state)
        })
    }

    fn keep_channel_state(&self, name: String, state: String) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            sqlx::query(
                "INSERT INTO channel_states (name, state) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET state = excluded.state",
            )
            .bind(name)
            .bind(state)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }
}

/// Announces that question `id` was asked or left the waiting state, when
/// `transaction` commits.
async fn announce(
    transaction: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    id: &str,
) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(id)
        .execute(&mut **transaction)
        .await?;
    Ok(())
}

/// The identity in `row`'s first columns: name, role, groups.
fn identity(row: &PgRow) -> Result<Identity, StoreError> {
    Ok(Identity {
        name: row.try_get(0)?,
        role: Role::parse(row.try_get(1)?)?,
        groups: row.try_get(2)?,
    })
}

/// The question in `row`, or why it cannot be read.
fn record(row: &PgRow) -> Result<Record, Unreadable> {
    let columns = || -> Result<Columns, sqlx::Error> {
        Ok(Columns {
            id: row.try_get(0)?,
            session: row.try_get(1)?,
            agent: row.try_get(2)?,
            cwd: row.try_get(3)?,
            request: row.try_get(4)?,
            asked_at: row.try_get(5)?,
            agent_seen_at: row.try_get(6)?,
            state: row.try_get(7)?,
            outcome: row.try_get(8)?,
            settled_by: row.try_get(9)?,
            settled_at: row.try_get(10)?,
            delivered_at: row.try_get(11)?,
            owner: row.try_get(12)?,
            audience: row.try_get(13)?,
            answered_by: row.try_get(14)?,
        })
    };
    match columns() {
        Ok(columns) => columns.record(),
        Err(error) => Err(Unreadable {
            id: row.try_get(0).unwrap_or_default(),
            why: error.to_string(),
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests;
