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

fn invalid_answer(answers: Vec<Answer>, says: &str) {
    let failure = with_answers(answers).unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::InvalidAnswer));
    assert_eq!(failure.name, "UserQuestionError");
    assert!(failure.message.contains(says), "{}", failure.message);
}

/// The component checks answers against the questions itself, as the
/// Rust host's seam does, so a host in any language gets `INVALID_ANSWER`
/// for answers that do not fit (the messages are the seam's).
#[test]
fn answers_that_do_not_fit_the_questions_are_invalid_answer() {
    let none = || answer("b", &[], None);
    invalid_answer(vec![answer("a", &[], None)], "\"b\" got no answer");
    invalid_answer(
        vec![answer("a", &[], None), answer("a", &[], None)],
        "answered twice",
    );
    invalid_answer(
        vec![answer("a", &[], None), answer("c", &[], None)],
        "unknown question id \"c\"",
    );
    invalid_answer(
        vec![answer("a", &["y"], None), none()],
        "no option labelled \"y\"",
    );
    invalid_answer(
        vec![answer("a", &["x", "x"], None), none()],
        "single-select question \"a\" has 2 selected labels",
    );
    invalid_answer(
        vec![answer("a", &["x"], Some("mine")), none()],
        "both a selected label and own words",
    );
    let huge = "y".repeat(MAX_CUSTOM_CHARS + 1);
    invalid_answer(
        vec![answer("a", &[], None), answer("b", &[], Some(&huge))],
        "over the limit of 16000",
    );
    let label = "l".repeat(MAX_LABEL_CHARS + 1);
    invalid_answer(
        vec![answer("a", &[&label], None), none()],
        "no option labelled",
    );
}

#[test]
fn a_multi_select_answer_takes_labels_once_and_own_words_too() {
    let arguments = r#"{"questions":[{"id":"m","question":"?","multi_select":true,
        "options":[{"label":"x"},{"label":"y"}]}]}"#;
    let failure = execute(arguments, |_| Ok(vec![answer("m", &["x", "x"], None)])).unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::InvalidAnswer));
    assert!(
        failure.message.contains("\"x\" selected twice"),
        "{}",
        failure.message
    );
    let (_, text) = execute(arguments, |_| Ok(vec![answer("m", &["y", "x"], Some("z"))])).unwrap();
    assert_eq!(
        text,
        r#"{"answers":[{"id":"m","selected":["y","x"],"custom":"z"}]}"#
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

/// `multiSelect` (Claude Code's spelling) means `multi_select`: a
/// multi-select question never turns single-select by its spelling.
#[test]
fn multi_select_is_read_in_either_spelling() {
    let asked = |flags: &str| {
        let mut seen = None;
        let arguments = format!(
            r#"{{"questions":[{{"id":"q","question":"?","options":[{{"label":"a"}},{{"label":"b"}}]{flags}}}]}}"#
        );
        let result = execute(&arguments, |request: Request| {
            seen = request.questions[0].multi_select;
            Ok(vec![answer("q", &["a", "b"], None)])
        });
        (seen, result)
    };
    for flags in [
        r#","multiSelect":true"#,
        r#","multi_select":true"#,
        r#","multi_select":true,"multiSelect":true"#,
    ] {
        let (seen, result) = asked(flags);
        assert_eq!(seen, Some(true), "{flags}");
        assert!(result.is_ok(), "{flags}: {result:?}");
    }
    assert_eq!(asked(r#","multiSelect":false"#).0, Some(false));
    let (seen, result) = asked(r#","multi_select":true,"multiSelect":false"#);
    assert_eq!(seen, None, "not asked");
    let failure = result.unwrap_err();
    assert_eq!(failure.code, Some(ErrorCode::InvalidArgs));
    assert!(failure.message.contains("disagree"), "{}", failure.message);
    let (_, result) = asked(r#","multiSelect":"yes""#);
    assert!(
        result
            .unwrap_err()
            .message
            .contains("questions[0].multiSelect")
    );
}
