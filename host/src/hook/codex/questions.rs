//! Codex's `request_user_input` questions (`questions[]`: `id`, `header`,
//! `question`, `options[{label, description}]`, `isOther`, `isSecret`) as
//! our request, and our answers as its response (`{"answers": {<id>:
//! {"answers": [labels…, "user_note: " own words]}}}`, own words marked as
//! Codex's own UI marks a note; a skipped question: an empty list).

use ask_user_seam::{Accepts, Answer, AskRequest, Question, QuestionOption};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::hook::AgentOption;

/// How Codex's own UI marks a person's words among a question's answers,
/// so that the model reads them as it reads a note typed in Codex.
const NOTE: &str = "user_note: ";

/// One request's questions: ours (ids `q1`, `q2`, … in order, so that an
/// answers file or a rule can name them) and Codex's ids for the answers.
#[derive(Debug)]
pub struct Asked {
    pub request: AskRequest,
    ids: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodexQuestion {
    id: String,
    #[serde(default)]
    header: Option<String>,
    question: String,
    #[serde(default)]
    options: Option<Vec<AgentOption>>,
    #[serde(default)]
    is_secret: bool,
}

impl Asked {
    /// The questions of a `item/tool/requestUserInput` request; why not,
    /// for questions of another shape, or one whose answer is secret (it
    /// is never sent to the inbox or a notification: Codex's UI asks it).
    pub fn from_params(params: &Value) -> Result<Asked, String> {
        let questions = params
            .get("questions")
            .and_then(Value::as_array)
            .filter(|questions| !questions.is_empty())
            .ok_or("the request has no questions")?;
        let mut request = AskRequest {
            questions: Vec::with_capacity(questions.len()),
        };
        let mut ids = Vec::with_capacity(questions.len());
        for (n, value) in questions.iter().enumerate() {
            let asked: CodexQuestion = serde_json::from_value(value.clone())
                .map_err(|e| format!("question {}: {e}", n + 1))?;
            if asked.is_secret {
                return Err(format!(
                    "question {} wants a secret answer, which goes nowhere but Codex's own UI",
                    n + 1
                ));
            }
            let mut question = Question::new(format!("q{}", n + 1), asked.question);
            question.header = asked.header;
            question.options = asked
                .options
                .filter(|o| !o.is_empty())
                .map(|options| options.into_iter().map(QuestionOption::from).collect());
            // Codex's UI takes a choice and a note: so do ours.
            if question.options.is_some() {
                question.accepts = Some(Accepts {
                    note: true,
                    ..Accepts::default()
                });
            }
            request.questions.push(question);
            ids.push(asked.id);
        }
        Ok(Asked { request, ids })
    }

    /// The response that answers the request with `answers`.
    pub fn response(&self, answers: &[Answer]) -> Value {
        let mut by_id = Map::new();
        for (question, id) in self.request.questions.iter().zip(&self.ids) {
            let parts: Vec<String> = Answer::of(answers, &question.id)
                .map(|answer| {
                    let note = answer.custom.as_ref().map(|words| format!("{NOTE}{words}"));
                    answer.selected.iter().cloned().chain(note).collect()
                })
                .unwrap_or_default();
            by_id.insert(id.clone(), json!({"answers": parts}));
        }
        json!({"answers": by_id})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Value {
        json!({"threadId": "t", "turnId": "u", "itemId": "call_1", "isBlocking": true,
        "questions": [
            {"id": "target", "header": "Deploy", "question": "Where to deploy?",
             "isOther": true, "isSecret": false,
             "options": [{"label": "Staging", "description": "Safe."},
                         {"label": "Production", "description": "Now."}]},
            {"id": "note", "header": "Note", "question": "Anything else?", "options": null},
        ]})
    }

    #[test]
    fn codex_questions_become_ours_and_our_answers_go_back_by_its_ids() {
        let asked = Asked::from_params(&params()).unwrap();
        let [target, note] = &asked.request.questions[..] else {
            panic!("two questions")
        };
        assert_eq!((target.id.as_str(), note.id.as_str()), ("q1", "q2"));
        assert_eq!(target.header.as_deref(), Some("Deploy"));
        let labels: Vec<&str> = target.labels().collect();
        assert_eq!(labels, ["Staging", "Production"]);
        assert!(note.options.is_none(), "a free answer");
        let answers = [
            Answer {
                id: "q1".into(),
                selected: vec!["Production".into()],
                custom: Some("after 5pm".into()),
            },
            Answer::skipped("q2"),
        ];
        assert_eq!(
            asked.response(&answers),
            json!({"answers": {
                "target": {"answers": ["Production", "user_note: after 5pm"]},
                "note": {"answers": []},
            }})
        );
    }

    #[test]
    fn a_secret_or_a_broken_question_is_left_to_codex() {
        let mut secret = params();
        secret["questions"][1]["isSecret"] = json!(true);
        assert!(Asked::from_params(&secret).unwrap_err().contains("secret"));
        for broken in [
            json!({}),
            json!({"questions": []}),
            json!({"questions": [{"id": 1}]}),
        ] {
            assert!(Asked::from_params(&broken).is_err(), "{broken}");
        }
    }
}
