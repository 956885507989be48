//! Who may ask the human: only a live root agent (SPEC §2 step 3).

use ask_user::{AgentRegistry, ErrorCode};
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
async fn only_live_ownership_counts() {
    let h = Harness::new().await;
    h.answerer(Behaviour::ClaimFirst);
    let owner = h.agents.register_root("owner", None);
    let child = h.agents.register_delegate("child", &owner);
    h.agents.end(&owner);
    let result = h.call_as(&child, one_question(&["A"])).await;
    assert!(
        !result.is_error,
        "an agent whose owner ended is nobody's delegate: {result:?}"
    );
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
