//! The answerer waterfall (SPEC §3): order, claim / next / reject, chaining,
//! prepend, disposal, scopes.

use ask_user::{AnswerError, AskError, AskRequest, ErrorCode, Placement, Question, Scope};
use ask_user_tests::{Behaviour, Harness, TestAnswerer, one_question};
use serde_json::Value;

fn selected(result: &ask_user::ToolResult) -> Value {
    result.structured_content.as_ref().unwrap()["answers"][0]["selected"].clone()
}

fn tagged(scope: &str) -> Placement {
    Placement {
        scope: Some(scope.into()),
        ..Placement::default()
    }
}

#[tokio::test]
async fn the_first_answerer_to_claim_answers_and_later_ones_are_not_asked() {
    let h = Harness::new().await;
    let passes = h.answerer(Behaviour::Pass);
    let claims = h.answerer(Behaviour::Claim(vec![ask_user::Answer {
        id: "q".into(),
        selected: vec!["B".into()],
        custom: None,
    }]));
    let later = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(one_question(&["A", "B"])).await;
    assert_eq!(selected(&result), serde_json::json!(["B"]));
    assert_eq!((passes.calls(), claims.calls(), later.calls()), (1, 1, 0));
}

#[tokio::test]
async fn everyone_passing_is_no_provider() {
    let h = Harness::new().await;
    let first = h.answerer(Behaviour::Pass);
    let second = h.answerer(Behaviour::Pass);
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.code(), Some("NO_PROVIDER"));
    assert_eq!((first.calls(), second.calls()), (1, 1));
}

#[tokio::test]
async fn a_rejection_ends_the_ask() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| {
        AskError::new(ErrorCode::AskCancelled, "dismissed by the user").into()
    }));
    let later = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.code(), Some("ASK_CANCELLED"));
    assert_eq!(result.text(), "Error: dismissed by the user");
    assert_eq!(later.calls(), 0);
}

#[tokio::test]
async fn a_chained_answerer_runs_once_and_sees_what_came_after_it() {
    let h = Harness::new().await;
    let chained = h.answerer(Behaviour::Chain);
    let claims = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(selected(&result), serde_json::json!(["A"]));
    assert_eq!((chained.calls(), claims.calls()), (1, 1));
    let after = chained.after_next.lock().unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].as_ref().unwrap()[0].selected, ["A"]);
}

#[tokio::test]
async fn a_chained_answerer_sees_no_provider_after_next() {
    let h = Harness::new().await;
    let chained = h.answerer(Behaviour::Chain);
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.code(), Some("NO_PROVIDER"));
    assert_eq!(
        *chained.after_next.lock().unwrap(),
        [Err("NO_PROVIDER".to_owned())]
    );
}

#[tokio::test]
async fn prepend_jumps_ahead_of_registered_answerers() {
    let h = Harness::new().await;
    let registered_first = h.answerer(Behaviour::ClaimFirst);
    let prepended = h.answerer_at(
        Behaviour::Claim(vec![ask_user::Answer::skipped("q")]),
        Placement {
            prepend: true,
            ..Placement::default()
        },
    );
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(selected(&result), serde_json::json!([]));
    assert_eq!((prepended.calls(), registered_first.calls()), (1, 0));
}

#[tokio::test]
async fn disposing_removes_the_answerer_and_twice_is_harmless() {
    let h = Harness::new().await;
    let (answerer, probe) = TestAnswerer::new(Behaviour::ClaimFirst);
    let handle = h
        .seam()
        .waterfall()
        .register(answerer, Placement::default());
    assert!(!h.call(one_question(&["A"])).await.is_error);
    assert!(handle.dispose());
    assert!(!handle.dispose());
    assert!(!handle.clone().dispose());
    assert_eq!(
        h.call(one_question(&["A"])).await.code(),
        Some("NO_PROVIDER")
    );
    assert_eq!(probe.calls(), 1);
}

#[tokio::test]
async fn disposing_after_the_host_is_gone_is_harmless() {
    let (answerer, _) = TestAnswerer::new(Behaviour::Pass);
    let handle = {
        let h = Harness::new().await;
        h.seam()
            .waterfall()
            .register(answerer, Placement::default())
    };
    assert!(!handle.dispose());
}

#[tokio::test]
async fn a_request_reaches_answerers_of_its_scope_and_its_ancestors_only() {
    let h = Harness::new().await;
    let session = Scope::root("session-1");
    let agent = h.agents.register_root("agent-a", Some(&session));
    let sibling = h.agents.register_root("agent-b", Some(&session));
    let for_sibling = h.answerer_at(Behaviour::ClaimFirst, tagged("agent-b"));
    let for_other_session = h.answerer_at(Behaviour::ClaimFirst, tagged("session-2"));
    let for_session = h.answerer_at(Behaviour::Pass, tagged("session-1"));
    let for_agent = h.answerer_at(Behaviour::ClaimFirst, tagged("agent-a"));

    let result = h.call_as(&agent, one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
    assert_eq!(for_session.calls(), 1, "the ancestor's answerer is reached");
    assert_eq!(for_agent.calls(), 1, "the agent's own answerer is reached");
    assert_eq!(
        for_sibling.calls(),
        0,
        "a sibling's answerer is never reached"
    );
    assert_eq!(for_other_session.calls(), 0);

    let result = h.call_as(&sibling, one_question(&["A"])).await;
    assert!(!result.is_error);
    assert_eq!((for_sibling.calls(), for_agent.calls()), (1, 1));
}

#[tokio::test]
async fn a_request_never_reaches_a_descendant_scope() {
    let h = Harness::new().await;
    let session = Scope::root("session-1");
    let agent = h.agents.register_root("agent-a", Some(&session));
    // The delegate's scope is inside agent-a's.
    let _delegate = h.agents.register_delegate("agent-a-helper", &agent);
    let for_descendant = h.answerer_at(Behaviour::ClaimFirst, tagged("agent-a-helper"));
    let result = h.call_as(&agent, one_question(&["A"])).await;
    assert_eq!(result.code(), Some("NO_PROVIDER"));
    assert_eq!(for_descendant.calls(), 0);
}

#[tokio::test]
async fn an_agentless_request_reaches_untagged_answerers_only() {
    let h = Harness::new().await;
    let tagged_root = h.answerer_at(Behaviour::ClaimFirst, tagged("root"));
    let untagged = h.answerer(Behaviour::Pass);
    let request = AskRequest {
        questions: vec![Question::new("q", "?")],
    };
    let error = h
        .seam()
        .ask(request.clone(), None, &Default::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::NoProvider));
    assert_eq!((tagged_root.calls(), untagged.calls()), (0, 1));
    // The same request from the root reaches its tagged answerer.
    let answers = h
        .seam()
        .ask(request, Some(&h.root), &Default::default())
        .await
        .unwrap();
    assert_eq!(answers[0].id, "q");
    assert_eq!(tagged_root.calls(), 1);
}

#[tokio::test]
async fn an_answerer_prepended_after_a_failure_serves_the_next_ask() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| AnswerError::other("not yet")));
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.error.as_ref().unwrap().name, "AnswererError");
    let prepended = h.answerer_at(
        Behaviour::ClaimFirst,
        Placement {
            prepend: true,
            ..Placement::default()
        },
    );
    assert!(!h.call(one_question(&["A"])).await.is_error);
    assert_eq!(prepended.calls(), 1);
}

#[tokio::test]
async fn a_terminal_that_cannot_ask_holds_up_no_one() {
    // No terminal device: it passes on. Concurrent asks must reach the slow
    // answerer after it together, not one at a time behind its turn.
    let h = std::sync::Arc::new(Harness::new().await);
    h.seam().waterfall().register(
        ask_user::answerers::terminal::TerminalAnswerer::with_device("/nonexistent/tty"),
        Placement::default(),
    );
    let probe = h.answerer(Behaviour::FailOnAbort(|| {
        AskError::new(ErrorCode::AskAborted, "aborted").into()
    }));
    let signal = tokio_util::sync::CancellationToken::new();
    let calls: Vec<_> = (0..2)
        .map(|n| {
            let (h, signal) = (h.clone(), signal.clone());
            tokio::spawn(async move {
                let agent = h.agents.register_root(format!("agent-{n}"), None);
                let arguments = one_question(&["A", "B"]).to_string();
                h.runtime.call(&agent, &signal, &arguments).await
            })
        })
        .collect();
    probe.wait_for_calls(2).await;
    signal.cancel();
    for call in calls {
        assert_eq!(call.await.unwrap().code(), Some("ASK_ABORTED"));
    }
}

/// A race of answerers as one link: all are offered the request at once.
fn race(h: &Harness, behaviours: Vec<Behaviour>) -> Vec<std::sync::Arc<ask_user_tests::Probe>> {
    let (answerers, probes): (Vec<std::sync::Arc<dyn ask_user::Answerer>>, Vec<_>) = behaviours
        .into_iter()
        .map(|behaviour| {
            let (answerer, probe) = TestAnswerer::new(behaviour);
            (std::sync::Arc::new(answerer) as _, probe)
        })
        .unzip();
    h.seam()
        .waterfall()
        .register(ask_user::Race::new(answerers), Placement::default());
    probes
}

#[tokio::test]
async fn in_a_race_the_first_answer_wins_and_the_others_are_withdrawn() {
    let h = Harness::new().await;
    let probes = race(
        &h,
        vec![
            Behaviour::Hang,
            Behaviour::Slow(std::time::Duration::from_millis(20)),
        ],
    );
    let later = h.answerer(Behaviour::ClaimFirst);
    let result = h.call(one_question(&["A", "B"])).await;
    assert_eq!(selected(&result), serde_json::json!(["A"]));
    assert_eq!(
        (probes[0].calls(), probes[1].calls(), later.calls()),
        (1, 1, 0)
    );
    assert_eq!(
        probes[0]
            .withdrawn
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the one still waiting is withdrawn"
    );
    assert_eq!(
        *probes[0].settled_elsewhere.lock().unwrap(),
        ["answered elsewhere"],
        "and hears where the question went"
    );
    // A dismissal elsewhere is said as one.
    let h = Harness::new().await;
    let probes = race(
        &h,
        vec![
            Behaviour::Hang,
            Behaviour::Fail(|| {
                ask_user::AskError::new(ask_user::ErrorCode::AskCancelled, "dismissed").into()
            }),
        ],
    );
    assert_eq!(
        h.call(one_question(&["A"])).await.code(),
        Some("ASK_CANCELLED")
    );
    assert_eq!(
        *probes[0].settled_elsewhere.lock().unwrap(),
        ["dismissed elsewhere"]
    );
}

#[tokio::test]
async fn in_a_race_one_that_passes_drops_out_and_all_passing_goes_on() {
    let h = Harness::new().await;
    race(&h, vec![Behaviour::Pass, Behaviour::ClaimFirst]);
    let result = h.call(one_question(&["A", "B"])).await;
    assert_eq!(selected(&result), serde_json::json!(["A"]));

    let h = Harness::new().await;
    let probes = race(&h, vec![Behaviour::Pass, Behaviour::Pass]);
    let later = h.answerer(Behaviour::Claim(vec![ask_user::Answer {
        id: "q".into(),
        selected: vec!["B".into()],
        custom: None,
    }]));
    let result = h.call(one_question(&["A", "B"])).await;
    assert_eq!(selected(&result), serde_json::json!(["B"]));
    assert_eq!(
        (probes[0].calls(), probes[1].calls(), later.calls()),
        (1, 1, 1)
    );

    // A failure in one lane ends the ask, as it would in the chain.
    let h = Harness::new().await;
    race(
        &h,
        vec![
            Behaviour::Hang,
            Behaviour::Fail(|| AskError::new(ErrorCode::AskCancelled, "dismissed").into()),
        ],
    );
    assert_eq!(
        h.call(one_question(&["A"])).await.code(),
        Some("ASK_CANCELLED")
    );
}
