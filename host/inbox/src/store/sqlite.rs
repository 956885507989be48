//! [`SqliteStore`]: one user's inbox in one SQLite file in WAL mode, its
//! SQL all here. The connection is used on the runtime's blocking threads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::team::{Identity, Role, TOKEN_PREFIX, TokenRow, Tokens};
use super::{
    Columns, Listing, Millis, NewQuestion, Opened, Record, Settled, Settlement, State, Store,
    StoreError, StoreFuture, Unreadable, fingerprint, new_id,
};

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        StoreError::backend(error)
    }
}

/// The store in one SQLite file.
#[derive(Clone)]
pub struct SqliteStore {
    db: Arc<Db>,
}

/// The connection, and the work done on it (blocking).
struct Db {
    connection: Mutex<Connection>,
}

/// The schema this version writes (`PRAGMA user_version`). A database of a
/// newer one is refused: this version could misread it.
pub const SCHEMA_VERSION: i32 = 4;

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
    delivered_at INTEGER,
    owner TEXT,
    audience TEXT NOT NULL DEFAULT '[]',
    answered_by TEXT
);
CREATE INDEX questions_by_state ON questions (state, seq);
CREATE INDEX questions_by_fingerprint ON questions (session, fingerprint);
CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
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

/// Version 2 to 3: who asked, who may answer, and who answered (the same
/// records as a team's inbox; one user's inbox leaves them empty).
const FROM_2_TO_3: &str = "
ALTER TABLE questions ADD COLUMN owner TEXT;
ALTER TABLE questions ADD COLUMN audience TEXT NOT NULL DEFAULT '[]';
ALTER TABLE questions ADD COLUMN answered_by TEXT;
";

/// Version 3 to 4: agents' tokens, for the agents that reach one user's
/// inbox over loopback (`[inbox] agents`).
const FROM_3_TO_4: &str = "
CREATE TABLE tokens (
    name TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
";

const COLUMNS: &str = "id, session, agent, cwd, request, asked_at, agent_seen_at, state, \
                       outcome, settled_by, settled_at, delivered_at, owner, audience, \
                       answered_by";

/// Opens the store `url` names, `sqlite:PATH` (or `sqlite://PATH`): one
/// server's.
pub fn open(url: &str) -> StoreFuture<'_, Opened> {
    Box::pin(async move {
        let path = url.split_once(':').map_or("", |(_, path)| path);
        let path = PathBuf::from(path.strip_prefix("//").unwrap_or(path));
        let store = tokio::task::spawn_blocking(move || SqliteStore::open(&path))
            .await
            .map_err(StoreError::backend)??;
        Ok(Opened::Local(Arc::new(store)))
    })
}

impl SqliteStore {
    /// Opens (or creates, mode 0600) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        // Created private: the file holds the questions.
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| {
                    StoreError::Unavailable(format!("cannot create {}: {e}", path.display()))
                })?;
        }
        let mut connection = Connection::open(path)?;
        // WAL: readers never block the writer; FULL: a commit is on disk
        // before it returns, so an answer is never reported and then lost.
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&mut connection, path)?;
        Ok(SqliteStore {
            db: Arc::new(Db {
                connection: Mutex::new(connection),
            }),
        })
    }

    /// Runs `work` on the database on a blocking thread: a write waits for
    /// the disk, and no runtime worker waits with it.
    fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Db) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'_, T> {
        let db = self.db.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || work(&db))
                .await
                .map_err(StoreError::backend)?
        })
    }
}

impl Db {
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
        (0, _) => {
            transaction.execute_batch(FROM_1_TO_2)?;
            transaction.execute_batch(FROM_2_TO_3)?;
            transaction.execute_batch(FROM_3_TO_4)?;
        }
        (2, _) => {
            transaction.execute_batch(FROM_2_TO_3)?;
            transaction.execute_batch(FROM_3_TO_4)?;
        }
        (3, _) => transaction.execute_batch(FROM_3_TO_4)?,
        (newer, _) if newer > SCHEMA_VERSION => {
            return Err(StoreError::Corrupt(format!(
                "{} was written by a newer ask-user (database schema {newer}; this one reads \
                 up to {SCHEMA_VERSION}): run the newer ask-user, or move the file aside to \
                 start an empty inbox",
                path.display()
            )));
        }
        (other, _) => {
            return Err(StoreError::Corrupt(format!(
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

/// The question in `row`, or why it cannot be read.
fn record(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Record, Unreadable>> {
    let id: String = row.get(0)?;
    let audience: String = row.get(13)?;
    let audience = match serde_json::from_str(&audience) {
        Ok(audience) => audience,
        Err(error) => {
            return Ok(Err(Unreadable {
                id,
                why: format!("a stored audience: {error}"),
            }));
        }
    };
    Ok(Columns {
        id,
        session: row.get(1)?,
        agent: row.get(2)?,
        cwd: row.get(3)?,
        request: row.get(4)?,
        asked_at: row.get(5)?,
        agent_seen_at: row.get(6)?,
        state: row.get(7)?,
        outcome: row.get(8)?,
        settled_by: row.get(9)?,
        settled_at: row.get(10)?,
        delivered_at: row.get(11)?,
        owner: row.get(12)?,
        audience,
        answered_by: row.get(14)?,
    }
    .record())
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
        Some(Err(Unreadable { id, why })) => Err(StoreError::Corrupt(format!(
            "question {id} cannot be read by this version ({why})"
        ))),
    }
}

impl Db {
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
                 AND owner IS ?4 AND asked_at >= ?3 AND (state = 'waiting' OR (state IN \
                 ('answered', 'cancelled') AND delivered_at IS NULL)) ORDER BY seq DESC LIMIT 1"
            ),
            params![question.session, fingerprint, since, question.owner],
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
        let request = serde_json::to_string(&question.request).map_err(StoreError::backend)?;
        let audience = serde_json::to_string(&question.audience).map_err(StoreError::backend)?;
        let id = new_id()?;
        transaction.execute(
            "INSERT INTO questions (id, session, agent, cwd, request, fingerprint, asked_at, \
             agent_seen_at, state, owner, audience) \
             VALUES (?7, ?1, ?2, ?3, ?4, ?5, ?6, ?6, 'waiting', ?8, ?9)",
            params![
                question.session,
                question.agent,
                question.cwd,
                request,
                fingerprint,
                now,
                id,
                question.owner,
                audience,
            ],
        )?;
        transaction.commit()?;
        Ok((Record::asked(id, question, now), false))
    }

    fn get(&self, id: &str) -> Result<Option<Record>, StoreError> {
        one(
            &self.connection(),
            &format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"),
            params![id],
        )
    }

    fn settle(&self, id: &str, settlement: Settlement, now: Millis) -> Result<Settled, StoreError> {
        let mut connection = self.connection();
        // One transaction: the audience read and the update are one step.
        let transaction =
            connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let Some(record) = one(
            &transaction,
            &format!("SELECT {COLUMNS} FROM questions WHERE id = ?1"),
            params![id],
        )?
        else {
            return Ok(Settled::NotWaiting);
        };
        if record.state != State::Waiting {
            return Ok(Settled::NotWaiting);
        }
        if let Some(person) = &settlement.person
            && !record.answerable_by(&person.groups)
        {
            return Ok(Settled::OutsideAudience);
        }
        let outcome = settlement.outcome.map(|value| value.to_string());
        transaction.execute(
            "UPDATE questions SET state = ?2, outcome = ?3, settled_by = ?4, settled_at = ?5, \
             answered_by = ?6 WHERE id = ?1 AND state = 'waiting'",
            params![
                id,
                settlement.state.as_str(),
                outcome,
                settlement.by.as_str(),
                now,
                settlement.person.map(|p| p.name),
            ],
        )?;
        transaction.commit()?;
        Ok(Settled::Done)
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

impl Store for SqliteStore {
    fn ask(
        &self,
        question: NewQuestion,
        since: Millis,
        now: Millis,
    ) -> StoreFuture<'_, (Record, bool)> {
        self.blocking(move |db| db.ask(question, since, now))
    }

    fn get(&self, id: String) -> StoreFuture<'_, Option<Record>> {
        self.blocking(move |db| db.get(&id))
    }

    fn settle(&self, id: String, settlement: Settlement, now: Millis) -> StoreFuture<'_, Settled> {
        self.blocking(move |db| db.settle(&id, settlement, now))
    }

    fn seen(&self, id: String, now: Millis) -> StoreFuture<'_, Option<Record>> {
        self.blocking(move |db| {
            one(
                &db.connection(),
                &format!(
                    "UPDATE questions SET agent_seen_at = ?2 WHERE id = ?1 RETURNING {COLUMNS}"
                ),
                params![id, now],
            )
        })
    }

    fn delivered(&self, id: String, now: Millis) -> StoreFuture<'_, ()> {
        self.blocking(move |db| {
            db.stamp(
                &id,
                "UPDATE questions SET delivered_at = ?2 WHERE id = ?1 AND delivered_at IS NULL",
                now,
            )
        })
    }

    fn expire(
        &self,
        before: Millis,
        now: Millis,
        attached: Vec<String>,
    ) -> StoreFuture<'_, Vec<String>> {
        self.blocking(move |db| db.expire(before, now, &attached))
    }

    fn list(&self, all: bool, limit: usize) -> StoreFuture<'_, Listing> {
        self.blocking(move |db| db.list(all, limit))
    }

    // In `settings`, under `channel:NAME`.
    fn channel_state(&self, name: String) -> StoreFuture<'_, Option<String>> {
        self.blocking(move |db| {
            let state = db
                .connection()
                .query_row(
                    "SELECT value FROM settings WHERE key = ?1",
                    params![format!("channel:{name}")],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(state)
        })
    }

    fn keep_channel_state(&self, name: String, state: String) -> StoreFuture<'_, ()> {
        self.blocking(move |db| {
            db.connection().execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![format!("channel:{name}"), state],
            )?;
            Ok(())
        })
    }
}

/// One user's inbox keeps agents' tokens only: its one person is its
/// owner, on the socket and the page.
impl Tokens for SqliteStore {
    fn create_token<'a>(
        &'a self,
        name: &'a str,
        role: Role,
        groups: &'a [String],
        now: Millis,
    ) -> StoreFuture<'a, String> {
        let name = name.to_owned();
        let refused = match (role, groups.is_empty()) {
            (Role::Person, _) => Some(
                "one user's inbox has one person, its owner, who answers on its page and at \
                 its socket: its tokens are agents' (--role agent)",
            ),
            (Role::Agent, false) => Some("groups are a team's"),
            (Role::Agent, true) => None,
        };
        self.blocking(move |db| {
            if let Some(why) = refused {
                return Err(StoreError::Conflict(why.to_owned()));
            }
            let token = format!(
                "{TOKEN_PREFIX}{}",
                ask_user_seam::secret::token().map_err(StoreError::backend)?
            );
            let made = db.connection().execute(
                "INSERT INTO tokens (name, role, hash, created_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (name) DO NOTHING",
                params![name, role.as_str(), crate::digest(&token), now],
            )?;
            if made == 0 {
                return Err(StoreError::Conflict(format!(
                    "a token named {name:?} exists already (revoked ones too, so that every \
                     question names one identity): choose another name"
                )));
            }
            Ok(token)
        })
    }

    fn tokens(&self) -> StoreFuture<'_, Vec<TokenRow>> {
        self.blocking(|db| {
            let connection = db.connection();
            let mut statement = connection.prepare(
                "SELECT name, role, created_at, revoked_at FROM tokens ORDER BY created_at, name",
            )?;
            let rows = statement.query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get(2)?,
                    row.get(3)?,
                ))
            })?;
            rows.map(|row| {
                let (name, role, created_at, revoked_at) = row?;
                Ok(TokenRow {
                    identity: Identity {
                        name,
                        role: Role::parse(&role)?,
                        groups: Vec::new(),
                    },
                    created_at,
                    revoked_at,
                })
            })
            .collect()
        })
    }

    fn revoke<'a>(&'a self, name: &'a str, now: Millis) -> StoreFuture<'a, bool> {
        let name = name.to_owned();
        self.blocking(move |db| {
            let done = db.connection().execute(
                "UPDATE tokens SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
                params![name, now],
            )?;
            Ok(done == 1)
        })
    }

    fn identify<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Identity>> {
        let hash = crate::digest(token);
        self.blocking(move |db| {
            let row = db
                .connection()
                .query_row(
                    "SELECT name, role FROM tokens WHERE hash = ?1 AND revoked_at IS NULL",
                    params![hash],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
                )
                .optional()?;
            row.map(|(name, role)| {
                Ok(Identity {
                    name,
                    role: Role::parse(&role)?,
                    groups: Vec::new(),
                })
            })
            .transpose()
        })
    }
}

#[cfg(test)]
mod tests;
