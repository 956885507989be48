//! The turn's cancellation and time limits: the host races both itself and
//! withdraws the pending answerer (SPEC §3, Beyond).

use std::sync::Arc;
use std::time::Duration;

use ask_user::{AnswerError, AskError, AskRequest, ErrorCode, Placement, Question};
use ask_user_tests::{Behaviour, Harness, one_question};
use tokio_util::sync::CancellationToken;

/// A guard against a hang: these tests assert outcomes, not speed.
const HANG_GUARD: Duration = Duration::from_secs(20);

fn request() -> AskRequest {
    AskRequest {
        questions: vec![Question::new("q", "?")],
    }
}

#[tokio::test]
async fn an_already_aborted_turn_asks_nobody() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let signal = CancellationToken::new();
    signal.cancel();
    let result = h
        .runtime
        .call(&h.root, &signal, &one_question(&["A"]).to_string())
        .await;
    assert_eq!(result.code(), Some("ASK_ABORTED"));
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn abort_comes_before_every_other_check() {
    let h = Harness::new().await;
    let child = h.agents.register_delegate("child", &h.root);
    let signal = CancellationToken::new();
    signal.cancel();
    let empty = AskRequest { questions: vec![] };
    let error = h
        .seam()
        .ask(empty, Some(&child), &signal)
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::AskAborted));
}

/// Calls the tool as the root and aborts the turn once the answerer has the question.
async fn call_then_abort(
    h: &Arc<Harness>,
    probe: &Arc<ask_user_tests::Probe>,
) -> ask_user::ToolResult {
    let signal = CancellationToken::new();
    let call = {
        let (h, signal) = (h.clone(), signal.clone());
        tokio::spawn(async move {
            h.runtime
                .call(&h.root, &signal, &one_question(&["A"]).to_string())
                .await
        })
    };
    probe.wait_for_calls(1).await;
    signal.cancel();
    tokio::time::timeout(HANG_GUARD, call)
        .await
        .expect("the call returned")
        .unwrap()
}

#[tokio::test]
async fn aborting_while_an_answerer_ignores_the_signal_withdraws_it() {
    let h = Arc::new(Harness::new().await);
    let probe = h.answerer(Behaviour::Hang);
    let result = call_then_abort(&h, &probe).await;
    assert_eq!(result.code(), Some("ASK_ABORTED"));
    assert_eq!(
        probe.withdrawn(),
        1,
        "the pending answerer's future was dropped"
    );
}

#[tokio::test]
async fn a_domain_error_given_on_abort_wins_over_the_abort() {
    let h = Arc::new(Harness::new().await);
    let probe = h.answerer(Behaviour::FailOnAbort(|| {
        AskError::new(ErrorCode::AskCancelled, "the user closed the prompt").into()
    }));
    let result = call_then_abort(&h, &probe).await;
    assert_eq!(result.code(), Some("ASK_CANCELLED"));
    assert_eq!(probe.withdrawn(), 0, "the answerer finished by itself");
}

#[tokio::test]
async fn a_plain_failure_after_abort_becomes_ask_aborted_with_its_cause() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::FailOnAbort(|| {
        AnswerError::other("socket closed")
    }));
    let signal = CancellationToken::new();
    let ask = h.seam().ask(request(), Some(&h.root), &signal);
    let abort = async {
        probe.wait_for_calls(1).await;
        signal.cancel();
    };
    let (result, ()) = tokio::join!(ask, abort);
    let error = result.unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::AskAborted));
    let cause = std::error::Error::source(&error).expect("the cause is kept");
    assert_eq!(cause.to_string(), "socket closed");
}

#[tokio::test]
async fn the_host_time_limit_ends_the_ask_and_withdraws_the_answerer() {
    let h = Harness::with_seam(|seam| seam.with_timeout(Some(Duration::from_millis(50)))).await;
    let probe = h.answerer(Behaviour::Hang);
    let result = tokio::time::timeout(HANG_GUARD, h.call(one_question(&["A"])))
        .await
        .unwrap();
    assert_eq!(result.code(), Some("ASK_TIMED_OUT"));
    assert!(result.text().contains("50ms"), "{}", result.text());
    assert_eq!(probe.withdrawn(), 1);
}

#[tokio::test]
async fn an_answerer_time_limit_ends_the_ask() {
    let h = Harness::new().await;
    let probe = h.answerer_at(
        Behaviour::Hang,
        Placement {
            timeout: Some(Duration::from_millis(50)),
            ..Placement::default()
        },
    );
    let later = h.answerer(Behaviour::ClaimFirst);
    let result = tokio::time::timeout(HANG_GUARD, h.call(one_question(&["A"])))
        .await
        .unwrap();
    assert_eq!(result.code(), Some("ASK_TIMED_OUT"));
    assert!(result.text().contains("test answerer"), "{}", result.text());
    assert_eq!(probe.withdrawn(), 1);
    assert_eq!(
        later.calls(),
        0,
        "silence is never turned into a pass or an answer"
    );
}

#[tokio::test]
async fn an_answerer_time_limit_stops_once_it_passes_the_request_on() {
    let h = Harness::new().await;
    h.answerer_at(
        Behaviour::Pass,
        Placement {
            timeout: Some(Duration::from_millis(20)),
            ..Placement::default()
        },
    );
    h.answerer(Behaviour::Slow(Duration::from_millis(200)));
    let result = h.call(one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
}

#[tokio::test]
async fn with_no_time_limit_a_slow_answer_is_waited_for() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Slow(Duration::from_millis(300)));
    let result = h.call(one_question(&["A"])).await;
    assert!(!result.is_error, "{result:?}");
}
