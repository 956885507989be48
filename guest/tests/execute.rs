//! The tool logic natively, with a seam that misbehaves in ways this
//! repository's host never does (other hosts might).

use ask_user_tool::limits::*;
use ask_user_tool::seam::{Answer, AskError, Request};
use ask_user_tool::{ErrorCode, ToolFailure, execute};

const TWO_QUESTIONS: &str = r#"{"questions":[
    {"id":"a","question":"1?","options":[{"label":"x"}]},
    {"id":"b","question":"2?"}]}"#;

fn answer(id: &str, selected: &[&str], custom: Option<&str>) -> Answer {
    Answer {
        id: id.into(),
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom: custom.map(Into::into),
    }
}

fn with_answers(answers: Vec<Answer>) -> Result<String, ToolFailure> {
    execute(TWO_QUESTIONS, |_| Ok(answers)).map(|(_, text)| text)
}

fn invalid_output(answers: Vec<Answer>, says: &str) {
    let failure = with_answers(answers).unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::InvalidToolOutput));
    assert_eq!(failure.name, "InvalidToolOutputError");
    assert!(failure.message.contains(says), "{}", failure.message);
}

#[test]
fn answers_that_do_not_fit_the_questions_are_invalid_tool_output() {
    invalid_output(vec![answer("a", &[], None)], "\"b\" got no answer");
    invalid_output(
        vec![answer("a", &[], None), answer("a", &[], None)],
        "answered twice",
    );
    invalid_output(
        vec![answer("a", &[], None), answer("c", &[], None)],
        "no question has",
    );
}

#[test]
fn answers_beyond_the_output_limits_are_invalid_tool_output() {
    let huge = "y".repeat(MAX_CUSTOM_CHARS + 1);
    invalid_output(
        vec![answer("a", &[], None), answer("b", &[], Some(&huge))],
        "MAX_CUSTOM_CHARS",
    );
    let label = "l".repeat(MAX_LABEL_CHARS + 1);
    invalid_output(
        vec![answer("a", &[&label], None), answer("b", &[], None)],
        "MAX_LABEL_CHARS",
    );
    let many: Vec<String> = (0..=MAX_OPTIONS).map(|i| i.to_string()).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    invalid_output(
        vec![answer("a", &many, None), answer("b", &[], None)],
        "MAX_OPTIONS",
    );
}

#[test]
fn the_seam_request_keeps_absent_fields_absent() {
    let mut seen = None;
    let _ = execute(
        r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a","description":null,"k":[1, {"n":null}]}]}]}"#,
        |request: Request| {
            seen = Some(request);
            Err(AskError {
                name: "UserQuestionError".into(),
                code: Some(ErrorCode::NoProvider),
                message: "nobody".into(),
            })
        },
    );
    let request = seen.unwrap();
    let q = &request.questions[0];
    assert_eq!((q.header.as_ref(), q.multi_select), (None, None));
    let option = &q.options.as_ref().unwrap()[0];
    assert_eq!(option.description, None);
    assert_eq!(
        option.extra_json.as_deref(),
        Some(r#"{"k":[1,{"n":null}]}"#)
    );
}

#[test]
fn a_seam_error_becomes_the_tool_failure_unchanged() {
    let failure = execute(TWO_QUESTIONS, |_| {
        Err(AskError {
            name: "UserQuestionError".into(),
            code: Some(ErrorCode::AskCancelled),
            message: "dismissed".into(),
        })
    })
    .unwrap_err();
    assert_eq!(
        failure,
        ToolFailure {
            name: "UserQuestionError".into(),
            code: Some(ErrorCode::AskCancelled),
            message: "dismissed".into()
        }
    );
}

#[test]
fn duplicate_option_keys_are_invalid_args() {
    let failure = execute(
        r#"{"questions":[{"id":"q","question":"?","options":[{"label":"a","label":"b"}]}]}"#,
        |_| unreachable!("not asked"),
    )
    .unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::InvalidArgs));
    assert!(
        failure.message.contains("duplicate field `label`"),
        "{}",
        failure.message
    );
}

#[test]
fn no_questions_is_empty_questions_without_asking() {
    let failure = execute(r#"{"questions":[]}"#, |_| panic!("asked the seam")).unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::EmptyQuestions));
    assert_eq!(failure.name, "UserQuestionError");
}
