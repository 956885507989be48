//! Who may ask the human: only a live root agent (SPEC §2 step 3), or under
//! a relay a live sub-agent within its root's budget.

use ask_user::audit::AuditLog;
use ask_user::{AgentRegistry, Delegated, ErrorCode, UserQuestions};
use ask_user_tests::{Behaviour, Harness, one_question};

#[tokio::test]
async fn a_delegated_sub_agent_is_refused_before_any_answerer_runs() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let child = h.agents.register_delegate("reviewer", &h.root);
    let result = h.call_as(&child, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("DELEGATED_CALLER"));
    assert_eq!(result.error.as_ref().unwrap().name, "UserQuestionError");
    assert!(result.text().contains("final result"), "{}", result.text());
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn a_grandchild_is_refused_too() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let child = h.agents.register_delegate("planner", &h.root);
    let grandchild = h.agents.register_delegate("researcher", &child);
    let result = h.call_as(&grandchild, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("DELEGATED_CALLER"));
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn the_root_that_delegated_may_still_ask() {
    let h = Harness::new().await;
    h.answerer(Behaviour::ClaimFirst);
    let _child = h.agents.register_delegate("reviewer", &h.root);
    let result = h.call(one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
}

#[tokio::test]
async fn a_session_that_was_a_sub_agent_and_is_resumed_as_a_root_may_ask() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let once_delegated = h.agents.register_delegate("session-7", &h.root);
    assert_eq!(
        h.call_as(&once_delegated, one_question(&["A"]))
            .await
            .code(),
        Some("DELEGATED_CALLER")
    );
    assert!(h.agents.end(&once_delegated));
    // Resumed later as a root of its own: its lineage is history, not ownership.
    let resumed = h.agents.register_root("session-7", None);
    let result = h.call_as(&resumed, one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(probe.calls(), 1);
}

#[tokio::test]
async fn a_sub_agent_whose_parent_ended_is_not_live_under_either_policy() {
    for relay in [false, true] {
        let h = Harness::with_seam(|seam| match relay {
            true => seam.with_delegated(Delegated::Relay { max_asks: 3 }),
            false => seam,
        })
        .await;
        let probe = h.answerer(Behaviour::ClaimFirst);
        let owner = h.agents.register_root("owner", None);
        let child = h.agents.register_delegate("child", &owner);
        let grandchild = h.agents.register_delegate("grandchild", &child);
        h.agents.end(&owner);
        for orphan in [&child, &grandchild] {
            let result = h.call_as(orphan, one_question(&["A"])).await;
            assert_eq!(result.code(), Some("CALLER_NOT_LIVE"), "relay {relay}");
            assert!(result.text().contains("has ended"), "{}", result.text());
        }
        // Its middle ancestor gone, with the root still live: not live either.
        let middle = h.agents.register_delegate("middle", &h.root);
        let below = h.agents.register_delegate("below", &middle);
        h.agents.end(&middle);
        let result = h.call_as(&below, one_question(&["A"])).await;
        assert_eq!(result.code(), Some("CALLER_NOT_LIVE"), "relay {relay}");
        assert_eq!(probe.calls(), 0);
    }
}

fn relay(max_asks: u32) -> impl FnOnce(UserQuestions) -> UserQuestions {
    move |seam| seam.with_delegated(Delegated::Relay { max_asks })
}

#[tokio::test]
async fn under_a_relay_a_sub_agents_ask_reaches_the_human_saying_who_asks() {
    let trail = std::env::temp_dir().join(format!(
        "ask-user-relay-{}.jsonl",
        ask_user::new_id("").unwrap()
    ));
    let audit = AuditLog::open(&trail).unwrap();
    let h = Harness::with_seam(|seam| relay(3)(seam).with_audit(audit)).await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let planner = h.agents.register_delegate("planner", &h.root);
    let researcher = h.agents.register_delegate("researcher", &planner);
    let result = h.call_as(&researcher, one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
    assert!(!h.call(one_question(&["A"])).await.is_error);
    let asked_by = probe.asked_by.lock().unwrap().clone();
    assert_eq!(
        asked_by,
        [vec!["root", "planner", "researcher"], vec![]],
        "the chain, root first; nothing for the root's own"
    );
    h.seam().flush_audit().await;
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&trail)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["caller"], "researcher");
    assert_eq!(
        lines[0]["askedBy"],
        serde_json::json!(["root", "planner", "researcher"])
    );
    assert!(lines[1].get("askedBy").is_none(), "{}", lines[1]);
    std::fs::remove_file(&trail).unwrap();
}

#[tokio::test]
async fn a_roots_sub_agents_ask_at_most_their_budget_each_turn() {
    let h = Harness::with_seam(relay(2)).await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let reviewer = h.agents.register_delegate("reviewer", &h.root);
    let tester = h.agents.register_delegate("tester", &h.root);
    for asker in [&reviewer, &tester] {
        assert!(!h.call_as(asker, one_question(&["A"])).await.is_error);
    }
    // The budget is the root's, shared by its sub-agents.
    let refused = h.call_as(&reviewer, one_question(&["A"])).await;
    assert_eq!(refused.code(), Some("DELEGATED_ASK_LIMIT"));
    assert_eq!(refused.error.as_ref().unwrap().name, "UserQuestionError");
    assert!(
        refused.text().contains("at most twice per turn"),
        "{}",
        refused.text()
    );
    assert_eq!(probe.calls(), 2, "the human was not asked a third time");
    // The root's own asks are not counted, nor another root's sub-agents'.
    assert!(!h.call(one_question(&["A"])).await.is_error);
    let other = h.agents.register_root("session-2", None);
    let theirs = h.agents.register_delegate("helper", &other);
    assert!(!h.call_as(&theirs, one_question(&["A"])).await.is_error);
    // A new turn of the root: a new budget.
    assert!(h.agents.start_turn(&h.root));
    assert!(!h.call_as(&tester, one_question(&["A"])).await.is_error);
}

#[tokio::test]
async fn a_root_and_its_sub_agents_asking_at_once_reach_the_human_one_at_a_time() {
    let h = Harness::with_seam(relay(3)).await;
    let probe = h.answerer(Behaviour::Slow(std::time::Duration::from_millis(20)));
    let reviewer = h.agents.register_delegate("reviewer", &h.root);
    let tester = h.agents.register_delegate("tester", &h.root);
    let arguments = one_question(&["A"]);
    let (a, b, c) = tokio::join!(
        h.call_as(&reviewer, arguments.clone()),
        h.call_as(&tester, arguments.clone()),
        h.call(arguments.clone()),
    );
    for result in [a, b, c] {
        assert!(!result.is_error, "{result:?}");
    }
    assert_eq!(probe.calls(), 3);
    assert_eq!(probe.most_at_once(), 1, "one batch at a time");
}

#[tokio::test]
async fn an_unknown_caller_is_not_live() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let stranger = AgentRegistry::new().register_root("stranger", None);
    let result = h.call_as(&stranger, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("CALLER_NOT_LIVE"));
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn an_ended_caller_is_not_live() {
    let h = Harness::new().await;
    let agent = h.agents.register_root("done", None);
    assert!(h.agents.end(&agent));
    assert!(!h.agents.end(&agent), "ending twice is harmless");
    let result = h.call_as(&agent, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("CALLER_NOT_LIVE"));
}

#[tokio::test]
async fn a_stale_handle_is_not_confused_with_the_agent_that_reused_its_id() {
    let h = Harness::new().await;
    h.answerer(Behaviour::ClaimFirst);
    let old = h.agents.register_root("worker", None);
    h.agents.end(&old);
    let new = h.agents.register_root("worker", None);
    assert_eq!(old.id(), new.id());
    assert_ne!(old, new);
    assert_eq!(
        h.call_as(&old, one_question(&["A"])).await.code(),
        Some("CALLER_NOT_LIVE")
    );
    assert!(
        !h.agents.end(&old),
        "a stale handle cannot end the newer agent"
    );
    assert!(h.agents.is_live(&new));
    assert!(!h.call_as(&new, one_question(&["A"])).await.is_error);
}

#[tokio::test]
async fn registering_a_live_id_again_supersedes_the_earlier_agent() {
    let h = Harness::new().await;
    h.answerer(Behaviour::ClaimFirst);
    let first = h.agents.register_root("twin", None);
    let second = h.agents.register_root("twin", None);
    assert_eq!(
        h.call_as(&first, one_question(&["A"])).await.code(),
        Some("CALLER_NOT_LIVE")
    );
    assert!(!h.call_as(&second, one_question(&["A"])).await.is_error);
}

#[tokio::test]
async fn the_policy_is_the_same_when_the_host_asks_directly() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let child = h.agents.register_delegate("child", &h.root);
    let request = ask_user::AskRequest {
        questions: vec![ask_user::Question::new("q", "?")],
    };
    let error = h
        .seam()
        .ask(request, Some(&child), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::DelegatedCaller));
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn a_question_still_waiting_is_withdrawn_when_its_agent_or_one_above_it_ends() {
    for relay_asks in [false, true] {
        let h = Harness::with_seam(relay(3)).await;
        let probe = h.answerer(Behaviour::Hang);
        let planner = h.agents.register_delegate("planner", &h.root);
        let (asker, ending) = match relay_asks {
            // A relayed sub-agent's question, its root ending.
            true => (
                h.agents.register_delegate("reviewer", &planner),
                h.root.clone(),
            ),
            // A root's own question, the root ending.
            false => (h.root.clone(), h.root.clone()),
        };
        let call = h.call_as(&asker, one_question(&["A"]));
        let end = async {
            probe.wait_for_calls(1).await;
            assert!(h.agents.end(&ending));
        };
        let (result, ()) = tokio::join!(call, end);
        assert_eq!(result.code(), Some("CALLER_NOT_LIVE"), "{result:?}");
        assert!(
            result.text().contains("while its question waited"),
            "{}",
            result.text()
        );
        assert_eq!(
            probe.withdrawn.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "the question was withdrawn from its answerer"
        );
    }
}
