//! Where the inbox keeps its questions: the [`Store`] trait, and
//! [`SqliteStore`], one SQLite file in WAL mode.
//!
//! Every change is one transaction, committed (and synced) before the
//! inbox tells anyone about it: an answer is on disk before it is
//! delivered, so a crash between the two delivers it after the restart.
//! A store shared by several inbox servers (PostgreSQL, README "An inbox
//! for a team") implements the same trait.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use ask_user_seam::AskRequest;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// Where a question stands; on the wire as its name (`"waiting"`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Open: no outcome yet.
    Waiting,
    /// Answered by a human (`settled_by` says where).
    Answered,
    /// Dismissed by a human without answering.
    Cancelled,
    /// The agent stopped waiting (its call ended: aborted, timed out).
    Withdrawn,
    /// Its agent was gone for longer than the retention period.
    Expired,
}

impl State {
    /// Its name, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Waiting => "waiting",
            State::Answered => "answered",
            State::Cancelled => "cancelled",
            State::Withdrawn => "withdrawn",
            State::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Result<State, StoreError> {
        Ok(match text {
            "waiting" => State::Waiting,
            "answered" => State::Answered,
            "cancelled" => State::Cancelled,
            "withdrawn" => State::Withdrawn,
            "expired" => State::Expired,
            other => return Err(StoreError(format!("unknown question state {other:?}"))),
        })
    }
}

/// What asked a question, and the question.
#[derive(Debug, Clone)]
pub struct NewQuestion {
    /// The root agent's session key.
    pub session: String,
    /// What asked, in the host's words (e.g. `ask-user ask (pid 4242)`).
    pub agent: String,
    /// The agent's working directory, when the host gives one.
    pub cwd: Option<String>,
    pub request: AskRequest,
}

/// A question as stored.
#[derive(Debug, Clone)]
pub struct Record {
    pub id: String,
    pub session: String,
    pub agent: String,
    pub cwd: Option<String>,
    pub request: AskRequest,
    pub asked_at: Millis,
    /// When its agent was last waiting for it.
    pub agent_seen_at: Millis,
    pub state: State,
    /// The outcome frame's `outcome` (SPEC §5), once settled by a human.
    pub outcome: Option<serde_json::Value>,
    /// Who settled it: `page`, `command`, or why it left (`timed out`, …).
    pub settled_by: Option<String>,
    pub settled_at: Option<Millis>,
    /// When its agent confirmed it got the outcome.
    pub delivered_at: Option<Millis>,
}

/// A question this version cannot read (a newer version's intent kind, a
/// damaged row): listed apart, so that it hides nothing else.
#[derive(Debug, Clone)]
pub struct Unreadable {
    pub id: String,
    /// What could not be read, and why.
    pub why: String,
}

/// What [`Store::list`] found.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub records: Vec<Record>,
    pub unreadable: Vec<Unreadable>,
}

/// A store that failed (the disk, the database).
#[derive(Debug, Clone)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the inbox's store failed: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError(error.to_string())
    }
}

/// The inbox's questions, durable.
pub trait Store: Send + Sync + 'static {
    /// Stores `question` as waiting, unless the same session asked the
    /// identical batch at or after `since` and that question still waits or
    /// holds an outcome its agent never confirmed: then that one is returned
    /// (re-attached, `true`).
    fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> Result<(Record, bool), StoreError>;

    /// The question `id`.
    fn get(&self, id: &str) -> Result<Option<Record>, StoreError>;

    /// Settles `id` when it still waits: the first settlement wins
    /// (`false`: it had already left).
    fn settle(
        &self,
        id: &str,
        state: State,
        outcome: Option<&serde_json::Value>,
        by: &str,
        now: Millis,
    ) -> Result<bool, StoreError>;

    /// Its agent was waiting for `id` at `now`.
    fn seen(&self, id: &str, now: Millis) -> Result<(), StoreError>;

    /// Its agent got the outcome of `id`.
    fn delivered(&self, id: &str, now: Millis) -> Result<(), StoreError>;

    /// Expires the questions still waiting whose agent was last seen before
    /// `before`, except those in `attached` (an agent waits for them now);
    /// their ids.
    fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: &[String],
    ) -> Result<Vec<String>, StoreError>;

    /// The waiting questions, oldest first; with `all`, also the `limit`
    /// most recent that left (newest first, after the waiting ones). A row
    /// that cannot be read is listed apart and hides nothing else.
    fn list(&self, all: bool, limit: usize) -> Result<Listing, StoreError>;
}

/// The store in one SQLite file.
pub struct SqliteStore {
    connection: Mutex<Connection>,
}

/// The schema this version writes (`PRAGMA user_version`). A database of a
/// newer one is refused: this version could misread it.
pub const SCHEMA_VERSION: i32 = 2;

/// A new database, at [`SCHEMA_VERSION`].
const SCHEMA: &str = "
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE questions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session TEXT NOT NULL,
    agent TEXT NOT NULL,
    cwd TEXT,
    request TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    asked_at INTEGER NOT NULL,
    agent_seen_at INTEGER NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT,
    settled_by TEXT,
    settled_at INTEGER,
    delivered_at INTEGER
);
CREATE INDEX questions_by_state ON questions (state, seq);
CREATE INDEX questions_by_fingerprint ON questions (session, fingerprint);
";

/// Version 1 (no version number, ids counted from the row) to 2: every
/// question gets a random id, and the token kept across restarts goes (a
/// server makes a new one each start).
const FROM_1_TO_2: &str = "
ALTER TABLE questions ADD COLUMN id TEXT;
UPDATE questions SET id = 'q' || lower(hex(randomblob(16)));
CREATE UNIQUE INDEX questions_by_id ON questions (id);
DELETE FROM settings WHERE key = 'token';
";

const COLUMNS: &str = "id, session, agent, cwd, request, asked_at, agent_seen_at, state, \
                       outcome, settled_by, settled_at, delivered_at";

impl SqliteStore {
    /// Opens (or creates, mode 0600) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        // Created private: the file holds the questions and the token.
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| StoreError(format!("cannot create {}: {e}", path.display())))?;
        }
        let mut connection = Connection::open(path)?;
        // WAL: readers never block the writer; FULL: a commit is on disk
        // before it returns, so an answer is never reported and then lost.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&mut connection, path)?;
        Ok(SqliteStore {
            connection: Mutex::new(connection),
        })
    }

    /// Runs `update` with `id` as `?1` and `now` as `?2`.
    fn stamp(&self, id: &str, update: &str, now: Millis) -> Result<(), StoreError> {
        self.connection().execute(update, params![id, now])?;
        Ok(())
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding it leaves the database as SQLite left it:
        // each change is a transaction, so it is still whole.
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Brings the database at `path` to [`SCHEMA_VERSION`] in one transaction,
/// or refuses one written by a newer version.
fn migrate(connection: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let transaction =
        connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let version: i32 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let tables: i64 = transaction.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'questions'",
        [],
        |row| row.get(0),
    )?;
    match (version, tables) {
        (SCHEMA_VERSION, _) => return Ok(()),
        (0, 0) => transaction.execute_batch(SCHEMA)?,
        (0, _) => transaction.execute_batch(FROM_1_TO_2)?,
        (newer, _) if newer > SCHEMA_VERSION => {
            return Err(StoreError(format!(
                "{} was written by a newer ask-user (database schema {newer}; this one reads \
                 up to {SCHEMA_VERSION}): run the newer ask-user, or move the file aside to \
                 start an empty inbox",
                path.display()
            )));
        }
        (other, _) => {
            return Err(StoreError(format!(
                "{} has an unknown database schema {other}; move it aside to start an empty \
                 inbox",
                path.display()
            )));
        }
    }
    transaction.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    transaction.commit()?;
    Ok(())
}

/// The same batch of questions gives the same fingerprint.
fn fingerprint(request: &AskRequest) -> Result<String, StoreError> {
    let text = serde_json::to_string(request).map_err(|e| StoreError(e.to_string()))?;
    Ok(Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// The question in `row`, or why it cannot be read.
fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Record, Unreadable>> {
    let id: String = row.get(0)?;
    let made = (|| -> Result<Record, StoreError> {
        let request: String = row.get(4)?;
        let state: String = row.get(7)?;
        let outcome: Option<String> = row.get(8)?;
        Ok(Record {
            id: id.clone(),
            session: row.get(1)?,
            agent: row.get(2)?,
            cwd: row.get(3)?,
            request: serde_json::from_str(&request)
                .map_err(|e| StoreError(format!("a stored request: {e}")))?,
            asked_at: row.get(5)?,
            agent_seen_at: row.get(6)?,
            state: State::parse(&state)?,
            outcome: outcome
                .map(|text| serde_json::from_str(&text))
                .transpose()
                .map_err(|e| StoreError(format!("a stored outcome: {e}")))?,
            settled_by: row.get(9)?,
            settled_at: row.get(10)?,
            delivered_at: row.get(11)?,
        })
    })();
    Ok(made.map_err(|StoreError(why)| Unreadable { id, why }))
}

/// Runs `query` and reads every row as a record, or as unreadable.
fn records(
    connection: &Connection,
    query: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<Result<Record, Unreadable>>, StoreError> {
    let mut statement = connection.prepare_cached(query)?;
    let rows = statement.query_map(params, record)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The one question `query` finds; one that cannot be read is an error
/// that says which and why.
fn one(
    connection: &Connection,
    query: &str,
    params: impl rusqlite::Params,
) -> Result<Option<Record>, StoreError> {
    match records(connection, query, params)?.into_iter().next() {
        None => Ok(None),
        Some(Ok(record)) => Ok(Some(record)),
        Some(Err(Unreadable { id, why })) => Err(StoreError(format!(
            "question {id} cannot be read by this version ({why})"
        ))),
    }
}

impl Store for SqliteStore {
    fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> Result<(Record, bool), StoreError> {
        let fingerprint = fingerprint(&question.request)?;
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        let again = one(
            &transaction,
            &format!(
                "SELECT {COLUMNS} FROM questions WHERE session = ?1 AND fingerprint = ?2 \
                 AND asked_at >= ?3 AND (state = 'waiting' OR (state IN ('answered', \
                 'cancelled') AND delivered_at IS NULL)) ORDER BY seq DESC LIMIT 1"
            ),
            params![question.session, fingerprint, since],
        )?;
        if let Some(mut found) = again {
            transaction.execute(
                "UPDATE questions SET agent_seen_at = ?2 WHERE id = ?1",
                params![found.id, now],
            )?;
            transaction.commit()?;
            found.agent_seen_at = now;
            return Ok((found, true));
        }
        let request =
            serde_json::to_string(&question.request).map_err(|e| StoreError(e.to_string()))?;
        // Random: an id is never made twice, in this database or another
        // (an agent that comes back after the database was reset finds no
        // one else's question under its id).
        let id = ask_user_answerers::secret::id("q").map_err(|e| StoreError(e.to_string()))?;
        transaction.execute(
            "INSERT INTO questions (id, session, agent, cwd, request, fingerprint, asked_at, \
             agent_seen_at, state) VALUES (?7, ?1, ?2, ?3, ?4, ?5, ?6, ?6, 'waiting')",
            params![
                question.session,
                question.agent,
                question.cwd,
                request,
                fingerprint,
                now,
                id
            ],
        )?;
        transaction.commit()?;
        Ok((
            Record {
                id,
                session: question.session,
                agent: question.agent,
                cwd: question.cwd,
                request: question.request,
                asked_at: now,
                agent_seen_at: now,
                state: State::Waiting,
                outcome: None,
                settled_by: None,
                settled_at: None,
                delivered_at: None,
            },
            false,
        ))
    }

    fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        one(
            &self.connection(),
            &format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"),
            params![id],
        )
    }

    fn settle(
        &self,
        id: &str,
        state: State,
        outcome: Option<&serde_json::Value>,
        by: &str,
        now: Millis,
    ) -> Result<bool, StoreError> {
        let outcome = outcome.map(|value| value.to_string());
        let changed = self.connection().execute(
            "UPDATE questions SET state = ?2, outcome = ?3, settled_by = ?4, settled_at = ?5 \
             WHERE id = ?1 AND state = 'waiting'",
            params![id, state.as_str(), outcome, by, now],
        )?;
        Ok(changed == 1)
    }

    fn seen(&self, id: &str, now: Millis) -> Result<(), StoreError> {
        self.stamp(
            id,
            "UPDATE questions SET agent_seen_at = ?2 WHERE id = ?1",
            now,
        )
    }

    fn delivered(&self, id: &str, now: Millis) -> Result<(), StoreError> {
        self.stamp(
            id,
            "UPDATE questions SET delivered_at = ?2 WHERE id = ?1 AND delivered_at IS NULL",
            now,
        )
    }

    fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let mut connection = self.connection();
        let transaction = connection.transaction()?;
        let ids: Vec<String> = {
            let mut statement = transaction.prepare_cached(
                "SELECT id FROM questions WHERE state = 'waiting' AND agent_seen_at < ?1",
            )?;
            statement
                .query_map(params![before], |row| row.get(0))?
                .filter(|id| id.as_ref().map_or(true, |id| !attached.contains(id)))
                .collect::<Result<_, _>>()?
        };
        for id in &ids {
            transaction.execute(
                "UPDATE questions SET state = 'expired', settled_by = 'retention', \
                 settled_at = ?2 WHERE id = ?1",
                params![id, now],
            )?;
        }
        transaction.commit()?;
        Ok(ids)
    }

    fn list(&self, all: bool, limit: usize) -> Result<Listing, StoreError> {
        let connection = self.connection();
        let mut rows = records(
            &connection,
            &format!("SELECT {COLUMNS} FROM questions WHERE state = 'waiting' ORDER BY seq"),
            [],
        )?;
        if all {
            rows.extend(records(
                &connection,
                &format!(
                    "SELECT {COLUMNS} FROM questions WHERE state != 'waiting' \
                     ORDER BY seq DESC LIMIT ?1"
                ),
                params![limit as i64],
            )?);
        }
        let mut listing = Listing::default();
        for row in rows {
            match row {
                Ok(record) => listing.records.push(record),
                Err(unreadable) => listing.unreadable.push(unreadable),
            }
        }
        Ok(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::Question;

    fn store() -> (tempfile::TempDir, SqliteStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("inbox.sqlite")).unwrap();
        (dir, store)
    }

    fn asked(session: &str, text: &str) -> NewQuestion {
        NewQuestion {
            session: session.into(),
            agent: "test".into(),
            cwd: Some("/work".into()),
            request: AskRequest {
                questions: vec![Question::new("q", text)],
            },
        }
    }

    #[test]
    fn a_question_is_kept_on_disk_with_its_id_and_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.sqlite");
        let id = {
            let store = SqliteStore::open(&path).unwrap();
            let (record, again) = store.ask(asked("s", "Deploy?"), 0, 10).unwrap();
            assert!(!again);
            let outcome = serde_json::json!({"kind": "result", "value": {"answers": []}});
            assert!(
                store
                    .settle(&record.id, State::Answered, Some(&outcome), "page", 20)
                    .unwrap()
            );
            record.id
        };
        let store = SqliteStore::open(&path).unwrap();
        let record = store
            .get(&id)
            .unwrap()
            .expect("the question is still there");
        assert_eq!(record.state, State::Answered);
        assert_eq!(record.request.questions[0].question, "Deploy?");
        assert_eq!(record.settled_by.as_deref(), Some("page"));
        assert_eq!(record.outcome.unwrap()["kind"], "result");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_first_settlement_wins() {
        let (_dir, store) = store();
        let (record, _) = store.ask(asked("s", "Deploy?"), 0, 10).unwrap();
        assert!(
            store
                .settle(&record.id, State::Cancelled, None, "page", 11)
                .unwrap()
        );
        assert!(
            !store
                .settle(&record.id, State::Answered, None, "command", 12)
                .unwrap()
        );
        assert_eq!(
            store.get(&record.id).unwrap().unwrap().state,
            State::Cancelled
        );
        assert!(
            !store
                .settle("q999", State::Answered, None, "page", 12)
                .unwrap()
        );
        assert!(
            !store
                .settle("nonsense", State::Answered, None, "page", 12)
                .unwrap()
        );
    }

    #[test]
    fn the_same_batch_of_the_same_session_reattaches_until_its_outcome_is_delivered() {
        let (_dir, store) = store();
        let (first, _) = store.ask(asked("s", "Deploy?"), 0, 10).unwrap();
        let (again, reattached) = store.ask(asked("s", "Deploy?"), 0, 20).unwrap();
        assert!(reattached);
        assert_eq!(again.id, first.id);
        // Another session, or another batch, is another question.
        assert!(!store.ask(asked("t", "Deploy?"), 0, 20).unwrap().1);
        assert!(!store.ask(asked("s", "Deploy now?"), 0, 20).unwrap().1);
        // Answered while the agent was away: asking again gets it.
        store
            .settle(&first.id, State::Answered, None, "command", 30)
            .unwrap();
        let (answered, reattached) = store.ask(asked("s", "Deploy?"), 0, 40).unwrap();
        assert!(reattached);
        assert_eq!(answered.state, State::Answered);
        // Once delivered, asking again is a new question; so is one asked
        // before the retention period.
        store.delivered(&first.id, 50).unwrap();
        let (fresh, reattached) = store.ask(asked("s", "Deploy?"), 0, 60).unwrap();
        assert!(!reattached);
        assert_ne!(fresh.id, first.id);
        assert!(!store.ask(asked("s", "Deploy?"), 61, 70).unwrap().1);
    }

    #[test]
    fn questions_whose_agent_is_gone_past_retention_expire() {
        let (_dir, store) = store();
        let (old, _) = store.ask(asked("s", "Old?"), 0, 10).unwrap();
        let (seen, _) = store.ask(asked("s", "Seen?"), 0, 10).unwrap();
        store.seen(&seen.id, 100).unwrap();
        let (attached, _) = store.ask(asked("s", "Attached?"), 0, 10).unwrap();
        assert_eq!(
            store
                .expire(50, 200, std::slice::from_ref(&attached.id))
                .unwrap(),
            vec![old.id.clone()]
        );
        let waiting: Vec<String> = store
            .list(false, 0)
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(waiting, vec![seen.id.clone(), attached.id.clone()]);
        let all = store.list(true, 10).unwrap().records;
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].state, State::Expired);
    }

    #[test]
    fn ids_are_random_and_never_repeat_across_databases() {
        let (_one, first) = store();
        let (_two, second) = store();
        let a = first.ask(asked("s", "Deploy?"), 0, 10).unwrap().0.id;
        let b = second.ask(asked("s", "Deploy?"), 0, 10).unwrap().0.id;
        assert_ne!(a, b, "a reset database makes new ids");
        assert!(a.starts_with('q') && a.len() == 33, "{a}");
        // The old counted ids name nothing.
        assert!(first.get("q1").unwrap().is_none());
    }

    /// The first released schema, with a question and the token it kept.
    const VERSION_1: &str = "
        CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE questions (seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL,
            agent TEXT NOT NULL, cwd TEXT, request TEXT NOT NULL, fingerprint TEXT NOT NULL,
            asked_at INTEGER NOT NULL, agent_seen_at INTEGER NOT NULL, state TEXT NOT NULL,
            outcome TEXT, settled_by TEXT, settled_at INTEGER, delivered_at INTEGER);
        INSERT INTO settings VALUES ('token', 'old');
        INSERT INTO questions (session, agent, request, fingerprint, asked_at, agent_seen_at,
            state) VALUES ('s', 'a', '{\"questions\":[{\"id\":\"q\",\"question\":\"Old?\"}]}',
            'f', 1, 1, 'waiting');
    ";

    #[test]
    fn a_first_version_database_is_upgraded_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inbox.sqlite");
        Connection::open(&path)
            .unwrap()
            .execute_batch(VERSION_1)
            .unwrap();
        let store = SqliteStore::open(&path).unwrap();
        let listed = store.list(false, 0).unwrap().records;
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].request.questions[0].question, "Old?");
        assert_eq!(listed[0].id.len(), 33, "a random id: {}", listed[0].id);
        let tokens: i64 = store
            .connection()
            .query_row("SELECT count(*) FROM settings", [], |row| row.get(0))
            .unwrap();
        assert_eq!(tokens, 0, "the kept token is gone");
        drop(store);
        // Opened again: already at this version, nothing changes.
        let again = SqliteStore::open(&path).unwrap();
        assert_eq!(again.list(false, 0).unwrap().records[0].id, listed[0].id);
        again
            .connection()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(again);
        let error = SqliteStore::open(&path)
            .err()
            .expect("a newer schema is refused");
        assert!(error.0.contains("newer ask-user"), "{error}");
        assert!(error.0.contains(&path.display().to_string()), "{error}");
    }

    #[test]
    fn a_row_this_version_cannot_read_hides_nothing_else() {
        let (_dir, store) = store();
        let (good, _) = store.ask(asked("s", "Readable?"), 0, 10).unwrap();
        let (bad, _) = store.ask(asked("s", "Damaged?"), 0, 10).unwrap();
        store
            .connection()
            .execute(
                "UPDATE questions SET request = '{\"questions\":[{\"id\":\"q\",\"question\":\"?\",\
                 \"intent\":{\"kind\":\"from-the-future\"}}]}' WHERE id = ?1",
                params![bad.id],
            )
            .unwrap();
        let listing = store.list(true, 10).unwrap();
        assert_eq!(listing.records.len(), 1);
        assert_eq!(listing.records[0].id, good.id);
        assert_eq!(listing.unreadable.len(), 1);
        assert_eq!(listing.unreadable[0].id, bad.id);
        let error = store.get(&bad.id).unwrap_err();
        assert!(error.0.contains(&bad.id), "{error}");
    }
}
