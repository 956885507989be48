use super::*;

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("inbox.sqlite")).unwrap();
    (dir, store)
}

#[tokio::test]
async fn the_shared_behaviour_holds() {
    let (_one, first) = store();
    let (_two, other) = store();
    super::super::tests::behaviour(&first, &other).await;
}

#[tokio::test]
async fn a_question_is_kept_on_disk_in_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.sqlite");
    let id = {
        let store = SqliteStore::open(&path).unwrap();
        let (record, _) = store
            .ask(super::super::tests::asked("s", "Deploy?"), 0, 10)
            .await
            .unwrap();
        record.id
    };
    let store = SqliteStore::open(&path).unwrap();
    let record = store.get(id).await.unwrap().expect("still there");
    assert_eq!(record.request.questions[0].question, "Deploy?");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn an_agents_token_is_kept_as_a_digest_and_refused_once_revoked() {
    let (_dir, store) = store();
    let token = store.create_token("ci", Role::Agent, &[], 5).await.unwrap();
    assert!(token.starts_with(TOKEN_PREFIX), "{token}");
    let stored: String = store
        .db
        .connection()
        .query_row("SELECT hash FROM tokens", [], |row| row.get(0))
        .unwrap();
    assert_eq!(stored, crate::digest(&token), "only the digest is kept");
    let identity = store.identify(&token).await.unwrap().expect("known");
    assert_eq!((identity.name.as_str(), identity.role), ("ci", Role::Agent));
    assert!(store.identify("askusr_other").await.unwrap().is_none());
    // A name is never used twice; people and groups are a team's.
    let again = store.create_token("ci", Role::Agent, &[], 6).await;
    assert!(matches!(again, Err(StoreError::Conflict(_))));
    let person = store.create_token("me", Role::Person, &[], 6).await;
    assert!(matches!(person, Err(StoreError::Conflict(_))));
    let grouped = store
        .create_token("ops", Role::Agent, &["ops".into()], 6)
        .await;
    assert!(matches!(grouped, Err(StoreError::Conflict(_))));

    assert!(store.revoke("ci", 7).await.unwrap());
    assert!(!store.revoke("ci", 8).await.unwrap(), "revoked once");
    assert!(store.identify(&token).await.unwrap().is_none());
    let listed = store.tokens().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].revoked_at, Some(7));
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

#[tokio::test]
async fn a_first_version_database_is_upgraded_and_a_newer_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inbox.sqlite");
    Connection::open(&path)
        .unwrap()
        .execute_batch(VERSION_1)
        .unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let listed = store.list(false, 0).await.unwrap().records;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].request.questions[0].question, "Old?");
    assert_eq!(listed[0].id.len(), 33, "a random id: {}", listed[0].id);
    assert!(listed[0].audience.is_empty() && listed[0].owner.is_none());
    let tokens: i64 = store
        .db
        .connection()
        .query_row("SELECT count(*) FROM settings", [], |row| row.get(0))
        .unwrap();
    assert_eq!(tokens, 0, "the kept token is gone");
    drop(store);
    // Opened again: already at this version, nothing changes.
    let again = SqliteStore::open(&path).unwrap();
    let relisted = again.list(false, 0).await.unwrap().records;
    assert_eq!(relisted[0].id, listed[0].id);
    again
        .db
        .connection()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(again);
    let error = SqliteStore::open(&path)
        .err()
        .expect("a newer schema is refused");
    assert!(matches!(error, StoreError::Corrupt(_)), "{error}");
    assert!(error.detail().contains("newer ask-user"), "{error}");
    assert!(
        error.detail().contains(&path.display().to_string()),
        "{error}"
    );
}

#[tokio::test]
async fn a_row_this_version_cannot_read_hides_nothing_else() {
    let (_dir, store) = store();
    let asked = super::super::tests::asked;
    let (good, _) = store.ask(asked("s", "Readable?"), 0, 10).await.unwrap();
    let (bad, _) = store.ask(asked("s", "Damaged?"), 0, 10).await.unwrap();
    store
        .db
        .connection()
        .execute(
            "UPDATE questions SET request = '{\"questions\":[{\"id\":\"q\",\"question\":\"?\",\
             \"intent\":{\"kind\":\"from-the-future\"}}]}' WHERE id = ?1",
            params![bad.id],
        )
        .unwrap();
    let listing = store.list(true, 10).await.unwrap();
    assert_eq!(listing.records.len(), 1);
    assert_eq!(listing.records[0].id, good.id);
    assert_eq!(listing.unreadable.len(), 1);
    assert_eq!(listing.unreadable[0].id, bad.id);
    let error = store.get(bad.id.clone()).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt(_)), "{error}");
    assert!(error.detail().contains(&bad.id), "{error}");
}
