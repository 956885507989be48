//! Error mapping (SPEC §2 step 6), intents (step 4) and answer checks.

use ask_user::{
    Answer, AnswerError, AskRequest, ErrorCode, Intent, Question, QuestionOption, TransportedError,
};
use ask_user_tests::{Behaviour, Harness, one_question};
use serde_json::{Value, json};

fn transported(name: &str, code: Option<&str>) -> AnswerError {
    AnswerError::Transported(TransportedError {
        name: name.into(),
        message: "closed by the user in the web page".into(),
        code: code.map(Into::into),
    })
}

#[tokio::test]
async fn a_transported_seam_error_is_rebuilt_with_its_cause() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| {
        transported("UserQuestionError", Some("ASK_CANCELLED"))
    }));
    let request = AskRequest {
        questions: vec![Question::new("q", "?")],
    };
    let error = h
        .seam()
        .ask(request, Some(&h.root), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(&ErrorCode::AskCancelled));
    assert_eq!(error.name(), "UserQuestionError");
    assert_eq!(error.message(), "closed by the user in the web page");
    let cause = std::error::Error::source(&error).unwrap();
    let cause = cause
        .downcast_ref::<TransportedError>()
        .expect("the transported error is the cause");
    assert_eq!(cause.code.as_deref(), Some("ASK_CANCELLED"));

    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.code(), Some("ASK_CANCELLED"));
    assert_eq!(result.error.as_ref().unwrap().name, "UserQuestionError");
}

#[tokio::test]
async fn a_code_this_version_does_not_know_reaches_the_model_verbatim() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| {
        transported("UserQuestionError", Some("QUOTA_EXCEEDED"))
    }));
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.code(), Some("QUOTA_EXCEEDED"));
    assert_eq!(result.error.as_ref().unwrap().name, "UserQuestionError");
}

#[tokio::test]
async fn a_transported_error_of_another_kind_passes_through_uncoded() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| transported("TypeError", Some("ERR_X"))));
    let result = h.call(one_question(&["A"])).await;
    assert_eq!(result.error.as_ref().unwrap().name, "TypeError");
    assert_eq!(result.code(), None);
    assert!(
        result.text().contains("closed by the user in the web page"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn a_plain_failure_passes_through_unchanged() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Fail(|| {
        AnswerError::other("the terminal is gone")
    }));
    let result = h.call(one_question(&["A"])).await;
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["error"], json!({"name":"AnswererError"}));
    assert_eq!(result.text(), "Error: the terminal is gone");
}

fn plan_review(options: Option<&[&str]>, approve: &str, detail: Option<&str>) -> AskRequest {
    let mut q = Question::new("plan", "Approve this plan?");
    q.options = options.map(|labels| labels.iter().map(|l| QuestionOption::new(*l)).collect());
    q.detail = detail.map(Into::into);
    q.intent = Some(Intent::PlanReview {
        approve: approve.into(),
    });
    AskRequest { questions: vec![q] }
}

#[tokio::test]
async fn a_plan_review_intent_must_fit_its_question() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    for (request, problem) in [
        (
            plan_review(Some(&["Approve", "Revise"]), "Ship it", Some("1. do")),
            "not one of its options",
        ),
        (plan_review(None, "Approve", Some("1. do")), "no options"),
        (
            plan_review(Some(&[]), "Approve", Some("1. do")),
            "no options",
        ),
        (
            plan_review(Some(&["Approve", "Revise"]), "Approve", None),
            "no detail",
        ),
    ] {
        let error = h
            .seam()
            .ask(request, Some(&h.root), &Default::default())
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(&ErrorCode::BadIntent));
        assert!(
            error.message().contains("\"plan\""),
            "names the question: {}",
            error.message()
        );
        assert!(error.message().contains(problem), "{}", error.message());
    }
    assert_eq!(probe.calls(), 0);
}

#[tokio::test]
async fn a_valid_intent_reaches_the_answerer_with_its_detail() {
    let h = Harness::new().await;
    let probe = h.answerer(Behaviour::ClaimFirst);
    let request = plan_review(
        Some(&["Approve", "Revise"]),
        "Approve",
        Some("1. migrate\n2. deploy"),
    );
    let answers = h
        .seam()
        .ask(request, Some(&h.root), &Default::default())
        .await
        .unwrap();
    assert_eq!(answers[0].selected, ["Approve"]);
    assert_eq!(
        probe.seen_json()[0]["questions"][0],
        json!({"id":"plan","question":"Approve this plan?","detail":"1. migrate\n2. deploy",
               "options":[{"label":"Approve"},{"label":"Revise"}],
               "intent":{"kind":"plan-review","approve":"Approve"}})
    );
}

fn answer(id: &str, selected: &[&str]) -> Answer {
    Answer {
        id: id.into(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom: None,
    }
}

#[tokio::test]
async fn answers_that_do_not_fit_the_questions_are_invalid_answer() {
    let cases: Vec<(Vec<Answer>, &str)> = vec![
        (
            vec![answer("q", &["A"]), answer("zzz", &[])],
            "unknown question id \"zzz\"",
        ),
        (
            vec![answer("q", &["A"]), answer("q", &["B"])],
            "answered twice",
        ),
        (vec![answer("q", &["A"])], "\"r\" got no answer"),
        (
            vec![answer("q", &["A", "B"]), answer("r", &[])],
            "single-select question \"q\" has 2",
        ),
        (
            vec![answer("q", &["D"]), answer("r", &[])],
            "no option labelled \"D\"; its options are \"A\", \"B\"",
        ),
        (
            vec![answer("q", &[]), answer("r", &["A"])],
            "\"r\" has no options: answer it in own words",
        ),
        (
            vec![with_custom(answer("q", &["A"]), "mine"), answer("r", &[])],
            "both a selected label and own words",
        ),
        // Tens of MB from an answerer: refused by the host before a byte
        // reaches the component (whose memory cap would blame the tool).
        (
            vec![
                answer("q", &[]),
                with_custom(answer("r", &[]), &"x".repeat(40 << 20)),
            ],
            "over the limit of 16000",
        ),
    ];
    let arguments = json!({"questions":[
        {"id":"q","question":"?","options":[{"label":"A"},{"label":"B"}]},
        {"id":"r","question":"Free text?"}
    ]});
    for (answers, problem) in cases {
        let h = Harness::new().await;
        h.answerer(Behaviour::Claim(answers));
        let result = h.call(arguments.clone()).await;
        assert_eq!(result.code(), Some("INVALID_ANSWER"), "{problem}");
        assert!(
            result.text().contains(problem),
            "{problem}: {}",
            result.text()
        );
        assert!(
            result.structured_content.is_none(),
            "a bad answer set is never passed on"
        );
    }
}

#[test]
fn the_host_and_the_tool_agree_on_the_longest_own_words() {
    assert_eq!(
        ask_user::seam::validate::MAX_CUSTOM_CHARS,
        ask_user_tool::limits::MAX_CUSTOM_CHARS
    );
}

fn with_custom(answer: Answer, custom: &str) -> Answer {
    Answer {
        custom: Some(custom.into()),
        ..answer
    }
}

#[tokio::test]
async fn a_label_picked_twice_is_invalid_answer() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![answer("q", &["A", "A"])]));
    let mut arguments = one_question(&["A", "B"]);
    arguments["questions"][0]["multi_select"] = json!(true);
    let result = h.call(arguments).await;
    assert_eq!(result.code(), Some("INVALID_ANSWER"), "{}", result.text());
    assert!(
        result.text().contains("\"A\" selected twice"),
        "{}",
        result.text()
    );
}

/// The largest call the limits allow: 16 questions whose ids and labels
/// fill the 256 KiB of arguments with characters JSON writes as six bytes
/// (`\u0001`), every label picked, and 16,000 such characters of own words
/// on each (docs/src/reference/limits.md); its arguments and answers.
fn the_largest_call() -> (Value, Vec<Answer>) {
    let wide = |prefix: usize, n: usize| format!("{prefix:02}{}", "\u{1}".repeat(n - 2));
    let questions: Vec<Value> = (0..16)
        .map(|i| {
            let options: Vec<Value> = (0..12).map(|j| json!({"label": wide(j, 200)})).collect();
            json!({"id": wide(i, 128), "question": "?", "options": options, "multi_select": true})
        })
        .collect();
    let answers = questions
        .iter()
        .map(|q| Answer {
            id: q["id"].as_str().unwrap().into(),
            selected: q["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["label"].as_str().unwrap().into())
                .collect(),
            custom: Some("\u{1}".repeat(16_000)),
        })
        .collect();
    (json!({ "questions": questions }), answers)
}

/// The largest answers the limits allow fit the default output limit, so
/// an answer the human gave is never dropped for its size.
#[tokio::test]
async fn the_largest_answers_the_limits_allow_fit_the_output_limit() {
    let (arguments, answers) = the_largest_call();
    assert!(arguments.to_string().len() <= 256 * 1024);
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(answers));
    let result = h.call(arguments).await;
    let text = result.text();
    assert_eq!(result.code(), None, "{}", &text[..300.min(text.len())]);
    assert!(text.len() > 1_700_000, "{}", text.len());
}

/// The tool's allocator never reuses memory (a call's instance is dropped
/// whole): even so the largest call runs within a quarter of the default
/// memory cap (it takes about 5 MiB), and a cap below what it needs is
/// `GUEST_MEMORY_EXCEEDED`, never a crash.
#[tokio::test]
async fn the_largest_call_runs_within_a_quarter_of_the_memory_cap() {
    let (arguments, answers) = the_largest_call();
    for (mib, fits) in [(8, true), (2, false)] {
        let h = Harness::with_config(ask_user::RuntimeConfig {
            memory_cap: mib << 20,
            ..Default::default()
        })
        .await;
        h.answerer(Behaviour::Claim(answers.clone()));
        let result = h.call(arguments.clone()).await;
        let code = result.code();
        match fits {
            true => assert_eq!(code, None, "within {mib} MiB"),
            false => assert_eq!(code, Some("GUEST_MEMORY_EXCEEDED"), "within {mib} MiB"),
        }
    }
}

#[tokio::test]
async fn several_labels_fit_a_multi_select_question() {
    let h = Harness::new().await;
    h.answerer(Behaviour::Claim(vec![answer("q", &["B", "A"])]));
    let mut arguments = one_question(&["A", "B"]);
    arguments["questions"][0]["multi_select"] = json!(true);
    let result = h.call(arguments).await;
    assert_eq!(
        result.text(),
        r#"{"answers":[{"id":"q","selected":["B","A"]}]}"#
    );
}
