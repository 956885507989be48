//! OpenCode's questions (`questions[]`: `question`, `header`,
//! `options[{label, description}]`, `multiple`, `custom`, this last
//! absent meaning own words are taken) as our request, and our answers as
//! its reply: one list per question, in order, of the labels chosen and
//! the own words typed (as OpenCode's own UI sends them); a skipped
//! question, an empty list.

use ask_user_seam::{Accepts, Answer, AskRequest, OwnWords, Question, QuestionOption};
use serde::Deserialize;
use serde_json::Value;

use crate::hook::AgentOption;

#[derive(Deserialize)]
struct OpenCodeQuestion {
    question: String,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    options: Vec<AgentOption>,
    #[serde(default)]
    multiple: bool,
    #[serde(default = "own_words_by_default")]
    custom: bool,
}

fn own_words_by_default() -> bool {
    true
}

/// OpenCode's `questions` as our request (ids `q1`, `q2`, … in order, so
/// that an answers file or a rule can name them); why not, for questions
/// of another shape.
pub fn request(questions: &[Value]) -> Result<AskRequest, String> {
    if questions.is_empty() {
        return Err("the request has no questions".into());
    }
    let mut request = AskRequest {
        questions: Vec::with_capacity(questions.len()),
    };
    for (n, value) in questions.iter().enumerate() {
        let asked: OpenCodeQuestion = serde_json::from_value(value.clone())
            .map_err(|e| format!("question {}: {e}", n + 1))?;
        let mut question = Question::new(format!("q{}", n + 1), asked.question);
        question.header = asked.header.filter(|header| !header.trim().is_empty());
        if !asked.options.is_empty() {
            question.options = Some(
                asked
                    .options
                    .into_iter()
                    .map(|o| {
                        // OpenCode sends an empty description for none.
                        let mut option = QuestionOption::from(o);
                        option.description = option.description.filter(|d| !d.is_empty());
                        option
                    })
                    .collect(),
            );
            question.multi_select = asked.multiple.then_some(true);
            if !asked.custom {
                question.accepts = Some(Accepts {
                    own_words: OwnWords::None,
                    ..Accepts::default()
                });
            }
        }
        request.questions.push(question);
    }
    Ok(request)
}

/// The reply's `answers` for `request` answered with `answers`.
pub fn reply(request: &AskRequest, answers: &[Answer]) -> Vec<Vec<String>> {
    request
        .questions
        .iter()
        .map(|question| {
            Answer::of(answers, &question.id)
                .map(|answer| {
                    let own = answer.custom.iter().cloned();
                    answer.selected.iter().cloned().chain(own).collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn questions() -> Vec<Value> {
        vec![
            json!({"question": "Where to deploy?", "header": "Deploy",
                   "options": [{"label": "Staging", "description": "Safe."},
                               {"label": "Production", "description": "Now."}]}),
            json!({"question": "Which checks?", "header": "Checks", "multiple": true,
                   "custom": false,
                   "options": [{"label": "Unit", "description": ""},
                               {"label": "Load", "description": ""}]}),
            json!({"question": "Anything else?", "header": "", "options": []}),
        ]
    }

    #[test]
    fn opencodes_questions_become_ours_and_our_answers_go_back_in_order() {
        let request = request(&questions()).unwrap();
        let [target, checks, note] = &request.questions[..] else {
            panic!("three questions")
        };
        assert_eq!(
            (target.id.as_str(), checks.id.as_str(), note.id.as_str()),
            ("q1", "q2", "q3")
        );
        assert_eq!(target.header.as_deref(), Some("Deploy"));
        assert_eq!(
            target.labels().collect::<Vec<_>>(),
            ["Staging", "Production"]
        );
        assert_eq!(target.accepts, None, "own words beside the options");
        assert_eq!(checks.multi_select, Some(true));
        assert_eq!(
            checks.accepts.as_ref().map(|a| &a.own_words),
            Some(&OwnWords::None),
            "custom: false takes only its options"
        );
        assert!(checks.options.as_ref().unwrap()[0].description.is_none());
        assert!(
            note.options.is_none() && note.header.is_none(),
            "a free answer"
        );
        let answers = [
            Answer {
                id: "q1".into(),
                selected: vec![],
                custom: Some("Canary first".into()),
            },
            Answer {
                id: "q2".into(),
                selected: vec!["Unit".into(), "Load".into()],
                custom: None,
            },
            Answer::skipped("q3"),
        ];
        assert_eq!(
            reply(&request, &answers),
            vec![
                vec!["Canary first".to_owned()],
                vec!["Unit".to_owned(), "Load".to_owned()],
                vec![],
            ]
        );
    }

    #[test]
    fn a_request_of_another_shape_is_left_to_opencode() {
        for broken in [
            vec![],
            vec![json!({"header": "no question"})],
            vec![json!({"question": "Q?", "options": [{"description": "no label"}]})],
        ] {
            assert!(request(&broken).is_err(), "{broken:?}");
        }
    }
}
