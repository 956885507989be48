//! The team inbox's schema in PostgreSQL, and its migrations: one step
//! per version, run in one transaction under an advisory lock, so servers
//! starting together take turns; a database of a newer schema is refused.

use sqlx::Executor;
use sqlx::postgres::PgPool;

use crate::store::StoreError;

/// The schema this version writes. A database of a newer one is refused.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// The advisory lock migrations hold ("askuser" in ASCII).
const MIGRATION_LOCK: i64 = 0x0061_736b_7573_6572;

/// The schema's steps: `MIGRATIONS[n]` brings a database of version `n`
/// (0: empty) to `n + 1`. Released steps never change; a new one is added.
pub const MIGRATIONS: &[&str] = &[
    QUESTIONS_TOKENS_OUTBOX,
    SESSIONS,
    ASK_IN_ONE_ROUND_TRIP,
    CHANNEL_STATES,
];

const QUESTIONS_TOKENS_OUTBOX: &str = "
CREATE TABLE ask_user_schema (version INTEGER NOT NULL);
INSERT INTO ask_user_schema (version) VALUES (0);
CREATE TABLE questions (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    agent TEXT NOT NULL,
    cwd TEXT,
    request TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    owner TEXT,
    audience TEXT[] NOT NULL DEFAULT '{}',
    asked_at BIGINT NOT NULL,
    agent_seen_at BIGINT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    settled_by TEXT,
    answered_by TEXT,
    settled_at BIGINT,
    delivered_at BIGINT
);
CREATE INDEX questions_by_state ON questions (state, seq);
CREATE INDEX questions_by_fingerprint ON questions (session, fingerprint);
CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL CHECK (role IN ('agent', 'person')),
    groups TEXT[] NOT NULL DEFAULT '{}',
    hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE TABLE outbox (
    question_id TEXT NOT NULL REFERENCES questions (id),
    stage INTEGER NOT NULL,
    due_at BIGINT NOT NULL,
    claimed_by TEXT,
    claimed_at BIGINT,
    sent_at BIGINT,
    PRIMARY KEY (question_id, stage)
);
CREATE INDEX outbox_due ON outbox (due_at) WHERE sent_at IS NULL;
";

const SESSIONS: &str = "
CREATE TABLE sessions (
    digest TEXT PRIMARY KEY,
    token_name TEXT NOT NULL REFERENCES tokens (name),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
";

/// An ask is one round trip ([`super::PgStore`]'s `ask`): under the
/// session's lock (two servers re-attaching the same batch make one
/// question), the question still open that the same batch asked is seen
/// again; else the question, its notification and its announcement are
/// written. Each statement reads what committed before it, the lock's
/// holder's too.
const ASK_IN_ONE_ROUND_TRIP: &str = "
CREATE FUNCTION ask_user_ask(
    new_id TEXT, of_session TEXT, of_agent TEXT, of_cwd TEXT, of_request TEXT,
    of_fingerprint TEXT, of_owner TEXT, of_audience TEXT[], since BIGINT, at_ms BIGINT,
    asked_stage INTEGER, channel TEXT)
RETURNS TABLE (again BOOLEAN, question TEXT) LANGUAGE plpgsql AS $$
DECLARE
    found TEXT;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(of_session));
    SELECT q.id INTO found FROM questions q
        WHERE q.session = of_session AND q.fingerprint = of_fingerprint
        AND q.owner IS NOT DISTINCT FROM of_owner AND q.asked_at >= since
        AND (q.state = 'waiting' OR (q.state IN ('answered', 'cancelled') AND q.delivered_at IS NULL))
        ORDER BY q.seq DESC LIMIT 1;
    IF found IS NOT NULL THEN
        UPDATE questions SET agent_seen_at = at_ms WHERE id = found;
        RETURN QUERY SELECT true, found;
        RETURN;
    END IF;
    INSERT INTO questions (id, session, agent, cwd, request, fingerprint, owner, audience,
        asked_at, agent_seen_at, state)
        VALUES (new_id, of_session, of_agent, of_cwd, of_request, of_fingerprint, of_owner,
        of_audience, at_ms, at_ms, 'waiting');
    INSERT INTO outbox (question_id, stage, due_at) VALUES (new_id, asked_stage, at_ms);
    PERFORM pg_notify(channel, new_id);
    RETURN QUERY SELECT false, new_id;
END
$$;
";

/// What each two-way channel keeps (what it showed, how far it read),
/// shared by the servers: whichever runs the channel reads it.
const CHANNEL_STATES: &str = "
CREATE TABLE channel_states (name TEXT PRIMARY KEY, state TEXT NOT NULL);
";

/// Brings the database to [`SCHEMA_VERSION`] in one transaction under the
/// migration lock, step by step, or refuses one written by a newer version.
pub async fn migrate(pool: &PgPool) -> Result<(), StoreError> {
    let mut transaction = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *transaction)
        .await?;
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('ask_user_schema') IS NOT NULL")
        .fetch_one(&mut *transaction)
        .await?;
    let version: i32 = match exists {
        true => {
            sqlx::query_scalar("SELECT max(version) FROM ask_user_schema")
                .fetch_one(&mut *transaction)
                .await?
        }
        false => 0,
    };
    if version > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "the database was written by a newer ask-user (schema {version}; this one reads up \
             to {SCHEMA_VERSION}): run the newer ask-user on every inbox server"
        )));
    }
    let Ok(from) = usize::try_from(version) else {
        return Err(StoreError::Corrupt(format!(
            "the database has an unknown ask-user schema {version}"
        )));
    };
    if from == MIGRATIONS.len() {
        return Ok(());
    }
    for step in &MIGRATIONS[from..] {
        transaction.execute(*step).await?;
    }
    sqlx::query("UPDATE ask_user_schema SET version = $1")
        .bind(SCHEMA_VERSION)
        .execute(&mut *transaction)
        .await?;
    transaction.commit().await?;
    Ok(())
}
