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
pub(crate) mod tests {
    use super::schema::{MIGRATIONS, SCHEMA_VERSION};
    use super::*;
    use crate::store::team::{Leases, SESSION_LIFETIME, SignIns, TOKEN_PREFIX, Tokens};
    use crate::store::tests::asked;
    use crate::store::{SettledBy, State};
    use sqlx::Executor;

    /// A new, empty database on the test cluster (`scripts/test` starts
    /// one and names it in `ASK_USER_TEST_POSTGRES`); its URL.
    pub async fn database() -> String {
        let admin = std::env::var("ASK_USER_TEST_POSTGRES").expect(
            "ASK_USER_TEST_POSTGRES names no PostgreSQL: run the tests with scripts/test, \
             which starts a throwaway cluster",
        );
        let name = format!("t_{}", ask_user_seam::secret::id("").unwrap());
        let mut connection: sqlx::PgConnection = sqlx::Connection::connect(&admin).await.unwrap();
        connection
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .unwrap();
        let (base, _) = admin.rsplit_once('/').unwrap();
        format!("{base}/{name}")
    }

    #[tokio::test]
    async fn the_shared_behaviour_holds() {
        let store = PgStore::connect(&database().await).await.unwrap();
        let other = PgStore::connect(&database().await).await.unwrap();
        crate::store::tests::behaviour(&store, &other).await;
    }

    #[tokio::test]
    async fn of_fifty_answers_at_once_exactly_one_wins() {
        let store = PgStore::connect(&database().await).await.unwrap();
        let (record, _) = store.ask(asked("s", "Deploy?"), 0, 10).await.unwrap();
        let answers = (0..50).map(|n| {
            let (store, id) = (store.clone(), record.id.clone());
            tokio::spawn(async move {
                let settlement = Settlement {
                    state: State::Answered,
                    outcome: Some(serde_json::json!({"n": n})),
                    by: SettledBy::Command,
                    person: Some(Person {
                        name: format!("p{n}"),
                        groups: Vec::new(),
                    }),
                };
                PgStore::settle(&store, &id, settlement, 20).await.unwrap()
            })
        });
        let mut won = Vec::new();
        for (n, answer) in answers.enumerate() {
            if answer.await.unwrap() == Settled::Done {
                won.push(n);
            }
        }
        assert_eq!(won.len(), 1, "{won:?}");
        let kept = PgStore::get(&store, &record.id).await.unwrap().unwrap();
        assert_eq!(kept.answered_by, Some(format!("p{}", won[0])));
        assert_eq!(kept.outcome.unwrap()["n"], won[0]);
    }

    #[tokio::test]
    async fn an_ask_waits_for_its_sessions_lock_and_then_sees_what_its_holder_wrote() {
        let store = PgStore::connect(&database().await).await.unwrap();
        // Another server, mid-ask for the same batch: its transaction holds
        // the session's lock and has written the question, not yet committed.
        let question = asked("s", "Deploy?");
        let mut other = store.pool.begin().await.unwrap();
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(&question.session)
            .execute(&mut *other)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO questions (id, session, agent, request, fingerprint, asked_at, \
             agent_seen_at, state) VALUES ('theirs', $1, 'a', $2, $3, 10, 10, 'waiting')",
        )
        .bind(&question.session)
        .bind(serde_json::to_string(&question.request).unwrap())
        .bind(fingerprint(&question.request).unwrap())
        .execute(&mut *other)
        .await
        .unwrap();
        let ours = tokio::spawn({
            let store = store.clone();
            async move { store.ask(question, 0, 20).await.unwrap() }
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'advisory' \
                 AND datname = current_database()",
            )
            .fetch_one(&store.pool)
            .await
            .unwrap();
            if waiting == 1 {
                break;
            }
            assert!(
                !ours.is_finished(),
                "the ask went on without the session's lock"
            );
            assert!(
                std::time::Instant::now() < deadline,
                "within 10 s: the ask waits for the lock"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        other.commit().await.unwrap();
        let (record, again) = ours.await.unwrap();
        assert_eq!(
            (record.id.as_str(), again),
            ("theirs", true),
            "one question, seen again"
        );
        assert_eq!(record.agent_seen_at, 20);
    }

    #[tokio::test]
    async fn servers_starting_together_migrate_once_and_a_newer_schema_is_refused() {
        let url = database().await;
        let starts = (0..4).map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await.map(drop) })
        });
        for start in starts {
            start.await.unwrap().unwrap();
        }
        let store = PgStore::connect(&url).await.unwrap();
        let versions: i64 = sqlx::query_scalar("SELECT count(*) FROM ask_user_schema")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(versions, 1);
        sqlx::query("UPDATE ask_user_schema SET version = $1")
            .bind(SCHEMA_VERSION + 1)
            .execute(&store.pool)
            .await
            .unwrap();
        let error = PgStore::connect(&url).await.err().expect("refused");
        assert!(
            matches!(&error, StoreError::Corrupt(why) if why.contains("newer ask-user")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_database_of_an_older_schema_is_brought_up_step_by_step() {
        let url = database().await;
        let mut connection: sqlx::PgConnection = sqlx::Connection::connect(&url).await.unwrap();
        connection.execute(MIGRATIONS[0]).await.unwrap();
        sqlx::query("UPDATE ask_user_schema SET version = 1")
            .execute(&mut connection)
            .await
            .unwrap();
        let store = PgStore::connect(&url).await.unwrap();
        let version: i32 = sqlx::query_scalar("SELECT version FROM ask_user_schema")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let sessions: bool = sqlx::query_scalar("SELECT to_regclass('sessions') IS NOT NULL")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert!(sessions, "step 2 ran");
    }

    #[tokio::test]
    async fn a_page_session_is_a_persons_kept_as_a_digest_and_ends_with_its_token() {
        let store = PgStore::connect(&database().await).await.unwrap();
        let alice = store
            .create_token("alice", Role::Person, &["ops".to_owned()], 1)
            .await
            .unwrap();
        let agent = store.create_token("ci", Role::Agent, &[], 1).await.unwrap();
        assert!(
            store.sign_in(&agent, 2).await.unwrap().is_none(),
            "an agent's"
        );
        assert!(store.sign_in("askusr_guess", 2).await.unwrap().is_none());
        let (session, who) = store
            .sign_in(&alice, 10)
            .await
            .unwrap()
            .expect("a person's");
        assert_eq!(
            (who.name.as_str(), who.groups.as_slice()),
            ("alice", &["ops".to_owned()][..])
        );
        assert_ne!(session, alice, "a session is not the token");
        let stored: Vec<String> = sqlx::query_scalar("SELECT digest FROM sessions")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        assert_eq!(stored, [crate::digest(&session)]);
        let held = store.session(&session, 11).await.unwrap().expect("live");
        assert_eq!(held.name, "alice");
        let end = 10 + SESSION_LIFETIME;
        assert!(
            store.session(&session, end).await.unwrap().is_none(),
            "ended"
        );
        // A second sign-in after the first ended clears it.
        let (second, _) = store.sign_in(&alice, end + 1).await.unwrap().unwrap();
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM sessions")
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(left, 1, "the ended session was cleared");
        let (third, _) = store.sign_in(&alice, end + 2).await.unwrap().unwrap();
        store.sign_out(&third).await.unwrap();
        assert!(
            store.session(&third, end + 3).await.unwrap().is_none(),
            "signed out"
        );
        assert!(
            store.session(&second, end + 3).await.unwrap().is_some(),
            "others stay"
        );
        store.revoke("alice", end + 4).await.unwrap();
        assert!(
            store.session(&second, end + 5).await.unwrap().is_none(),
            "revoked"
        );
    }

    #[tokio::test]
    async fn a_lease_is_one_servers_until_it_lets_go_or_its_connection_dies() {
        let url = database().await;
        let (one, two) = (
            PgStore::connect(&url).await.unwrap(),
            PgStore::connect(&url).await.unwrap(),
        );
        let bound = std::time::Duration::from_secs(30);
        let held = one.hold("channel telegram").await.unwrap();
        // Another name is another lease.
        let other = tokio::time::timeout(bound, two.hold("channel slack")).await;
        assert!(other.is_ok(), "another lease is free");
        let mut waiting = Box::pin(two.hold("channel telegram"));
        let early = tokio::time::timeout(crate::store::team::LEASE_RETRY * 2, &mut waiting).await;
        assert!(early.is_err(), "held by the first server");
        drop(held);
        let taken = tokio::time::timeout(bound, waiting).await;
        let held = taken.expect("taken once let go").unwrap();
        // Its connection killed, the hold ends, and the first takes it.
        let mut ended = Box::pin(held);
        let killed: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks \
             WHERE locktype = 'advisory' AND granted AND pid != pg_backend_pid()",
        )
        .fetch_one(&one.pool)
        .await
        .unwrap();
        assert!(killed >= 1, "the lease's connection");
        // The server that lost it stops before the other acts on it: never
        // two holders at once.
        let mut takeover = Box::pin(one.hold("channel telegram"));
        tokio::time::timeout(bound, async {
            tokio::select! {
                biased;
                () = &mut ended => {}
                _ = &mut takeover => panic!("taken over while the old hold had not ended"),
            }
        })
        .await
        .expect("the hold ends with its connection");
        let _held = tokio::time::timeout(bound, takeover)
            .await
            .expect("taken over")
            .unwrap();
    }

    #[tokio::test]
    async fn a_token_is_kept_as_a_digest_and_revoked_at_once() {
        let store = PgStore::connect(&database().await).await.unwrap();
        let groups = vec!["ops".to_owned()];
        let token = store
            .create_token("alice", Role::Person, &groups, 1)
            .await
            .unwrap();
        assert!(token.starts_with(TOKEN_PREFIX), "{token}");
        assert_eq!(
            token.len(),
            TOKEN_PREFIX.len() + 32,
            "128 random bits: {token}"
        );
        let stored: Vec<String> = sqlx::query_scalar("SELECT hash FROM tokens")
            .fetch_all(&store.pool)
            .await
            .unwrap();
        assert_eq!(stored, [crate::digest(&token)]);
        let alice = store.identify(&token).await.unwrap().expect("known");
        assert_eq!((alice.name.as_str(), alice.role), ("alice", Role::Person));
        assert_eq!(alice.groups, groups);
        assert!(store.identify("askusr_guess").await.unwrap().is_none());
        let again = store.create_token("alice", Role::Agent, &[], 2).await;
        assert!(
            matches!(again.unwrap_err(), StoreError::Conflict(why) if why.contains("exists already"))
        );
        assert!(store.revoke("alice", 3).await.unwrap());
        assert!(store.identify(&token).await.unwrap().is_none());
        assert!(!store.revoke("alice", 4).await.unwrap(), "revoked once");
        let listed = store.tokens().await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].revoked_at, Some(3));
    }
}
