//! What every engine does alike, run against each.

use super::*;
use ask_user_seam::Question;

pub fn asked(session: &str, text: &str) -> NewQuestion {
    NewQuestion {
        session: session.into(),
        agent: "test".into(),
        cwd: Some("/work".into()),
        request: AskRequest {
            questions: vec![Question::new("q", text)],
        },
        owner: None,
        audience: Vec::new(),
    }
}

fn answered(by: SettledBy, person: Option<Person>) -> Settlement {
    Settlement {
        state: State::Answered,
        outcome: Some(serde_json::json!({"kind": "result", "value": {"answers": []}})),
        by,
        person,
    }
}

fn person(name: &str, groups: &[&str]) -> Person {
    Person {
        name: name.into(),
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
    }
}

#[tokio::test]
async fn a_store_is_opened_by_its_urls_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kept.sqlite");
    for url in [
        format!("sqlite:{}", path.display()),
        format!("SQLITE://{}", path.display()),
    ] {
        let Opened::Local(store) = open(&url).await.unwrap() else {
            panic!("{url} is one server's store");
        };
        let (record, _) = store.ask(asked("s", "Which?"), 0, 1).await.unwrap();
        assert!(store.get(record.id).await.unwrap().is_some());
    }
    assert!(path.exists());
    // An unknown engine is named by its scheme only: the rest of the
    // URL may hold a password.
    let Err(error) = open("mysql://me:hunter2@db/inbox").await else {
        panic!("no engine for mysql");
    };
    let said = error.to_string();
    assert!(matches!(error, StoreError::Unavailable(_)), "{said}");
    assert!(
        said.contains("\"mysql\"") && said.contains("postgres"),
        "{said}"
    );
    assert!(!said.contains("hunter2"), "{said}");
    let Err(error) = open("inbox.sqlite").await else {
        panic!("a path is not a URL");
    };
    assert!(error.to_string().contains("sqlite:PATH"), "{error}");
}

/// Runs every check on `store`, and `other`, a second empty store of
/// the same engine.
pub async fn behaviour(store: &dyn Store, other: &dyn Store) {
    kept_with_its_outcome(store).await;
    the_first_settlement_wins(store).await;
    the_same_batch_reattaches_until_delivered(store).await;
    an_audience_is_checked_in_the_settlement(store).await;
    ids_are_random_across_databases(store, other).await;
    a_channels_state_is_kept_whole_and_replaced(store).await;
    // Last: it expires everything still waiting.
    gone_agents_questions_expire(store).await;
}

async fn kept_with_its_outcome(store: &dyn Store) {
    let (record, again) = store.ask(asked("k", "Deploy?"), 0, 10).await.unwrap();
    assert!(!again);
    let done = store
        .settle(record.id.clone(), answered(SettledBy::Page, None), 20)
        .await
        .unwrap();
    assert_eq!(done, Settled::Done);
    let record = store.get(record.id).await.unwrap().expect("kept");
    assert_eq!(record.state, State::Answered);
    assert_eq!(record.request.questions[0].question, "Deploy?");
    assert_eq!(record.settled_by, Some(SettledBy::Page));
    assert_eq!(record.settled_at, Some(20));
    assert_eq!(record.outcome.unwrap()["kind"], "result");
}

async fn a_channels_state_is_kept_whole_and_replaced(store: &dyn Store) {
    let kept = |name: &str| store.channel_state(name.to_owned());
    assert_eq!(kept("telegram").await.unwrap(), None);
    let state = format!("{{\"offset\": 7, \"text\": \"{}\"}}", "é".repeat(100_000));
    store
        .keep_channel_state("telegram".into(), state.clone())
        .await
        .unwrap();
    store
        .keep_channel_state("slack".into(), "{}".into())
        .await
        .unwrap();
    assert_eq!(kept("telegram").await.unwrap(), Some(state));
    store
        .keep_channel_state("telegram".into(), "{\"offset\": 8}".into())
        .await
        .unwrap();
    assert_eq!(
        kept("telegram").await.unwrap().as_deref(),
        Some("{\"offset\": 8}")
    );
    assert_eq!(kept("slack").await.unwrap().as_deref(), Some("{}"));
}

async fn the_first_settlement_wins(store: &dyn Store) {
    let (record, _) = store.ask(asked("f", "Deploy?"), 0, 10).await.unwrap();
    let cancel = Settlement {
        state: State::Cancelled,
        outcome: None,
        by: SettledBy::Page,
        person: None,
    };
    let id = record.id.clone();
    assert_eq!(
        store.settle(id.clone(), cancel, 11).await.unwrap(),
        Settled::Done
    );
    let second = store
        .settle(id.clone(), answered(SettledBy::Command, None), 12)
        .await;
    assert_eq!(second.unwrap(), Settled::NotWaiting);
    assert_eq!(
        store.get(id).await.unwrap().unwrap().state,
        State::Cancelled
    );
    for unknown in ["q999", "nonsense"] {
        let settled = store
            .settle(unknown.into(), answered(SettledBy::Page, None), 12)
            .await;
        assert_eq!(settled.unwrap(), Settled::NotWaiting);
    }
}

async fn the_same_batch_reattaches_until_delivered(store: &dyn Store) {
    let (first, _) = store.ask(asked("r", "Deploy?"), 0, 10).await.unwrap();
    let (again, reattached) = store.ask(asked("r", "Deploy?"), 0, 20).await.unwrap();
    assert!(reattached);
    assert_eq!(again.id, first.id);
    // Another session, another batch, or another owner's same session
    // is another question.
    assert!(!store.ask(asked("r2", "Deploy?"), 0, 20).await.unwrap().1);
    assert!(!store.ask(asked("r", "Deploy now?"), 0, 20).await.unwrap().1);
    let mut theirs = asked("r", "Deploy?");
    theirs.owner = Some("mallory".into());
    let (theirs, reattached) = store.ask(theirs, 0, 20).await.unwrap();
    assert!(!reattached, "another owner never re-attaches");
    assert_ne!(theirs.id, first.id);
    // Answered while the agent was away: asking again gets it.
    store
        .settle(first.id.clone(), answered(SettledBy::Command, None), 30)
        .await
        .unwrap();
    let (answered, reattached) = store.ask(asked("r", "Deploy?"), 0, 40).await.unwrap();
    assert!(reattached);
    assert_eq!(answered.state, State::Answered);
    // Once delivered, asking again is a new question; so is one asked
    // before the retention period.
    store.delivered(first.id.clone(), 50).await.unwrap();
    let (fresh, reattached) = store.ask(asked("r", "Deploy?"), 0, 60).await.unwrap();
    assert!(!reattached);
    assert_ne!(fresh.id, first.id);
    assert!(!store.ask(asked("r", "Deploy?"), 61, 70).await.unwrap().1);
}

async fn an_audience_is_checked_in_the_settlement(store: &dyn Store) {
    let mut ops = asked("a", "Restart the database?");
    ops.owner = Some("ci-runner".into());
    ops.audience = vec!["ops".into()];
    let (record, _) = store.ask(ops, 0, 10).await.unwrap();
    assert_eq!(record.owner.as_deref(), Some("ci-runner"));
    let outsider = answered(SettledBy::Command, Some(person("bob", &["dev"])));
    let settled = store.settle(record.id.clone(), outsider, 11).await.unwrap();
    assert_eq!(settled, Settled::OutsideAudience);
    let still = store.get(record.id.clone()).await.unwrap().unwrap();
    assert_eq!(still.state, State::Waiting);
    assert_eq!(still.audience, ["ops"]);
    let insider = answered(SettledBy::Command, Some(person("alice", &["dev", "ops"])));
    let settled = store.settle(record.id.clone(), insider, 12).await.unwrap();
    assert_eq!(settled, Settled::Done);
    let done = store.get(record.id).await.unwrap().unwrap();
    assert_eq!(done.answered_by.as_deref(), Some("alice"));
    // No audience: anyone in the team.
    let (open, _) = store.ask(asked("a", "Anyone?"), 0, 13).await.unwrap();
    let anyone = answered(SettledBy::Command, Some(person("carol", &[])));
    assert_eq!(
        store.settle(open.id, anyone, 14).await.unwrap(),
        Settled::Done
    );
}

async fn ids_are_random_across_databases(store: &dyn Store, other: &dyn Store) {
    let a = store.ask(asked("i", "Deploy?"), 0, 10).await.unwrap().0.id;
    let b = other.ask(asked("i", "Deploy?"), 0, 10).await.unwrap().0.id;
    assert_ne!(a, b, "a reset database makes new ids");
    assert!(a.starts_with('q') && a.len() == 33, "{a}");
    // Counted ids name nothing.
    assert!(store.get("q1".into()).await.unwrap().is_none());
}

async fn gone_agents_questions_expire(store: &dyn Store) {
    let waiting_before = store.list(false, 0).await.unwrap().records.len();
    let (old, _) = store.ask(asked("e", "Old?"), 0, 100).await.unwrap();
    let (seen, _) = store.ask(asked("e", "Seen?"), 0, 100).await.unwrap();
    let read = store.seen(seen.id.clone(), 1000).await.unwrap().unwrap();
    assert_eq!(
        (read.id.as_str(), read.agent_seen_at),
        (seen.id.as_str(), 1000)
    );
    assert_eq!(read.state, State::Waiting, "seen is read as it is");
    assert!(store.seen("q1".into(), 1000).await.unwrap().is_none());
    let (attached, _) = store.ask(asked("e", "Attached?"), 0, 100).await.unwrap();
    let expired = store
        .expire(500, 2000, vec![attached.id.clone()])
        .await
        .unwrap();
    assert!(expired.contains(&old.id), "{expired:?}");
    assert!(!expired.contains(&seen.id) && !expired.contains(&attached.id));
    assert_eq!(
        expired.len(),
        waiting_before + 1,
        "every stale one: {expired:?}"
    );
    let waiting: Vec<String> = store
        .list(false, 0)
        .await
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(waiting, vec![seen.id, attached.id]);
    let all = store.list(true, 1000).await.unwrap().records;
    let old = all.iter().find(|r| r.id == old.id).unwrap();
    assert_eq!(old.state, State::Expired);
    assert_eq!(old.settled_by, Some(SettledBy::Retention));
}
