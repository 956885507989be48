//! What each fuzz target checks. Every input must end in a value or a clear
//! error, never a panic, and each target checks its result against an
//! independent oracle, so a wrong answer fails as loudly as a crash.

use arbitrary::Arbitrary;
use ask_user_seam::remote::{Outcome, PendingQuestions, Unsettled, UpFrame};
use ask_user_seam::validate::{MAX_CUSTOM_CHARS, check_answers};
use ask_user_seam::{Answer, Ask, AskRequest, ErrorCode, Question, QuestionOption};
use ask_user_tool::json::{self, Json};
use ask_user_tool::seam as tool_seam;
use serde_json::Value;

/// The component's JSON reader against serde_json: the same texts accepted,
/// the same values read, and what it writes reads back the same.
pub fn json(text: &str) {
    let ours = json::parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok(),
        "{text:?}: ours {ours:?}, serde_json {theirs:?}"
    );
    if let (Ok(ours), Ok(theirs)) = (ours, theirs) {
        assert_eq!(to_value(&ours), theirs, "{text:?}");
        let mut written = String::new();
        json::write(&mut written, &ours);
        assert_eq!(json::parse(&written).as_ref(), Ok(&ours), "{written:?}");
    }
}

/// Ours as a serde_json value (numbers through their text).
fn to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(text) => serde_json::from_str(text).expect("a number serde_json reads"),
        Json::String(s) => Value::String(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

/// The whole tool on the model's `text`, every question answered with its
/// first option (or skipped): accepted arguments are valid JSON, the request
/// keeps every limit, and the result is the compact JSON of the answers.
pub fn tool(text: &str) {
    let mut asked = None;
    let outcome = ask_user_tool::execute(text, |request| {
        let answers = request
            .questions
            .iter()
            .map(|q| tool_seam::Answer {
                id: q.id.clone(),
                selected: q
                    .options
                    .iter()
                    .flatten()
                    .take(1)
                    .map(|o| o.label.clone())
                    .collect(),
                custom: None,
            })
            .collect();
        asked = Some(request);
        Ok(answers)
    });
    let Ok((output, rendered)) = outcome else {
        let failure = outcome.unwrap_err();
        let empty = || {
            serde_json::from_str::<Value>(text)
                .is_ok_and(|v| v["questions"].as_array().is_some_and(Vec::is_empty))
        };
        match failure.code {
            Some(ErrorCode::InvalidArgs) => {}
            Some(ErrorCode::EmptyQuestions) => assert!(empty(), "{text:?}"),
            _ => panic!("{text:?}: {failure:?}"),
        }
        assert!(asked.is_none(), "refused arguments never reach the seam");
        return;
    };
    assert!(
        serde_json::from_str::<Value>(text).is_ok(),
        "accepted {text:?}"
    );
    let request = asked.expect("accepted arguments are asked");
    assert!(!request.questions.is_empty() && request.questions.len() <= 16);
    for (n, q) in request.questions.iter().enumerate() {
        assert!(request.questions[..n].iter().all(|e| e.id != q.id));
        let labels: Vec<&str> = q
            .options
            .iter()
            .flatten()
            .map(|o| o.label.as_str())
            .collect();
        for (m, label) in labels.iter().enumerate() {
            assert!(!labels[..m].contains(label), "duplicate label {label:?}");
        }
        for option in q.options.iter().flatten() {
            if let Some(extra) = &option.extra_json {
                let value: Value = serde_json::from_str(extra).expect("extras are JSON");
                assert!(value.is_object());
            }
        }
    }
    assert_eq!(output.answers.len(), request.questions.len());
    assert_eq!(
        rendered,
        serde_json::to_string(&output).expect("answers serialise")
    );
}

/// A question and answers drawn small, so that ids and labels collide.
#[derive(Arbitrary, Debug)]
pub struct AnswersCase {
    questions: Vec<(u8, Vec<u8>, bool)>,
    answers: Vec<(u8, Vec<u8>, Option<u16>)>,
}

/// The seam's answer checks, and the component's own, against a plain
/// statement of the rules: both pass exactly the answer sets that fit, and
/// refuse the rest as `INVALID_ANSWER`.
pub fn answers(case: AnswersCase) {
    let questions: Vec<Question> = case
        .questions
        .iter()
        .take(6)
        .enumerate()
        .map(|(n, (_, labels, multi))| {
            let mut q = Question::new(format!("q{n}"), "?");
            if !labels.is_empty() {
                let labels = labels.iter().take(6).enumerate();
                q.options = Some(
                    labels
                        .map(|(m, _)| QuestionOption::new(format!("L{m}")))
                        .collect(),
                );
            }
            q.multi_select = Some(*multi);
            q
        })
        .collect();
    let answers: Vec<Answer> = case
        .answers
        .iter()
        .take(8)
        .map(|(id, picks, words)| Answer {
            id: format!("q{}", id % 8),
            selected: picks
                .iter()
                .take(8)
                .map(|p| format!("L{}", p % 8))
                .collect(),
            custom: words.map(|n| "w".repeat(usize::from(n) % (MAX_CUSTOM_CHARS + 2))),
        })
        .collect();
    let request = AskRequest { questions };
    let fits = request.questions.len() == answers.len()
        && request.questions.iter().all(|q| {
            let mut mine = answers.iter().filter(|a| a.id == q.id);
            let (Some(a), None) = (mine.next(), mine.next()) else {
                return false;
            };
            let offered = |l: &String| q.labels().any(|o| o == l);
            let unique = a
                .selected
                .iter()
                .enumerate()
                .all(|(n, l)| !a.selected[..n].contains(l));
            let words = a.custom.as_ref().map_or(0, |c| c.chars().count());
            a.selected.iter().all(offered)
                && unique
                && (q.is_multi_select() || a.selected.len() <= 1)
                && (q.is_multi_select() || a.custom.is_none() || a.selected.is_empty())
                && words <= MAX_CUSTOM_CHARS
        });
    let seam = check_answers(&request, &answers);
    match &seam {
        Ok(()) => assert!(fits, "passed answers that do not fit: {answers:?}"),
        Err(error) => {
            assert!(!fits, "refused answers that fit: {}", error.message());
            assert_eq!(error.code(), Some(&ErrorCode::InvalidAnswer));
        }
    }
    // The component, given the same questions and answers.
    let questions: Vec<tool_seam::Question> = request
        .questions
        .iter()
        .map(|q| tool_seam::Question {
            id: q.id.clone(),
            question: q.question.clone(),
            header: None,
            options: q.options.as_ref().map(|options| {
                options
                    .iter()
                    .map(|o| tool_seam::QuestionOption {
                        label: o.label.clone(),
                        description: None,
                        extra_json: None,
                    })
                    .collect()
            }),
            multi_select: q.multi_select,
        })
        .collect();
    let answers = answers
        .into_iter()
        .map(|a| tool_seam::Answer {
            id: a.id,
            selected: a.selected,
            custom: a.custom,
        })
        .collect();
    let tool = ask_user_tool::output::Output::from_answers(&questions, answers);
    assert_eq!(tool.is_ok(), seam.is_ok(), "{tool:?} / {seam:?}");
}

/// An outcome frame from a bridge or a page, as the host reads it, settled
/// against one open question: a frame either settles it, is refused as not
/// fitting (the question stays open), or names another event.
pub fn frames(text: &str) {
    let Ok(frame) = serde_json::from_str::<UpFrame>(text) else {
        return;
    };
    let questions = PendingQuestions::new("e", |_, _| {});
    let mut q = Question::new("q", "Which?");
    q.options = Some(vec![QuestionOption::new("A"), QuestionOption::new("B")]);
    let ask = Ask {
        request: AskRequest { questions: vec![q] },
        caller: None,
        signal: tokio_util::sync::CancellationToken::new(),
        asked_by: Vec::new(),
    };
    let pending = questions.open(&ask).expect("the list is open");
    let is_result = matches!(frame.outcome, Outcome::Result { .. });
    match questions.settle_checked(&frame.event_id, frame.outcome) {
        Ok(()) => assert_eq!(questions.len(), 0),
        Err(Unsettled::Misfit(error)) => {
            assert!(is_result);
            assert_eq!(error.code(), Some(&ErrorCode::InvalidAnswer));
            assert_eq!(questions.len(), 1);
        }
        Err(Unsettled::NotPending) => assert_ne!(frame.event_id, pending.id()),
        Err(Unsettled::Unrecorded(why)) => panic!("a list in memory has no store to fail: {why}"),
    }
}
