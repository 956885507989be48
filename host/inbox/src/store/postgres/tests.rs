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
