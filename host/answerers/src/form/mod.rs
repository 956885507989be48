//! One batch of questions as one elicitation form, and the form's content
//! back as answers (SPEC §6). No I/O here.
//!
//! Every field is optional (absent or empty = skipped). Its key starts with
//! the question's place, `q01_<id>`, `q02_<id>`, …, so the fields come in
//! question order in a client that sorts them by key (Codex) as in one that
//! keeps the schema's order; titles carry the words. A single-select
//! question is a titled string enum whose default is the recommended label;
//! a multi-select one a titled array enum, or, for a client that cannot
//! show arrays ([`Renders::arrays`]), one yes/no field per option
//! (`q02_<id>_opt01`, …); a question with options also gets its own-words
//! field `q01_<id>_own`, titled with the question's; a free-text question
//! is a string. Where the client cannot leave an empty text field last
//! ([`Renders::text_last`]), the form ends with a yes/no "Send" field.
//! Keys are unique by construction: each starts with its question's place.
//!
//! The other way, a form any MCP server sent is read as questions, and
//! the answers go back as its content ([`received`]): what a hook that
//! answers another server's forms (Claude Code's `Elicitation`) needs.

pub mod received;

use ask_user_seam::{Answer, AskError, AskRequest, ErrorCode, Question};
use serde_json::{Map, Value, json};

/// What a client's form can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renders {
    /// A multi-select list (an array of a titled enum, protocol 2025-11-25
    /// and later). Without it: one yes/no field per option.
    pub arrays: bool,
    /// A text field last: one a person can leave empty (Codex 0.169 cannot
    /// leave its last field empty). Without it: a closing "Send" field.
    pub text_last: bool,
}

/// The key of the closing field; it sorts after every question's.
const SEND: &str = "q99_send";

/// What a field of the form stands for.
#[derive(Debug, Clone, PartialEq)]
enum Role {
    /// A single-select question's choice.
    Choice,
    /// A multi-select question's choices, as a list.
    Choices,
    /// One option of a multi-select question, yes or no.
    Option(String),
    /// A question's own words beside its options.
    OwnWords,
    /// A free-text question.
    Text,
}

#[derive(Debug)]
struct Field {
    key: String,
    /// Which question, by place.
    question: usize,
    role: Role,
}

/// The form for one batch, as a client `renders` it.
pub struct Form<'r> {
    request: &'r AskRequest,
    renders: Renders,
    fields: Vec<Field>,
    /// A relayed sub-agent's chain, said first in the message.
    asked_by: Option<String>,
}

impl<'r> Form<'r> {
    /// Lays out the fields of `request` in question order.
    pub fn new(request: &'r AskRequest, renders: Renders) -> Self {
        let mut fields = Vec::new();
        for (n, q) in request.questions.iter().enumerate() {
            let key = format!("q{:02}_{}", n + 1, q.id);
            let mut field = |key: String, role| {
                fields.push(Field {
                    key,
                    question: n,
                    role,
                })
            };
            if q.labels().next().is_none() {
                field(key, Role::Text);
                continue;
            }
            match (q.is_multi_select(), renders.arrays) {
                (false, _) => field(key.clone(), Role::Choice),
                (true, true) => field(key.clone(), Role::Choices),
                (true, false) => {
                    for (o, label) in q.labels().enumerate() {
                        field(
                            format!("{key}_opt{:02}", o + 1),
                            Role::Option(label.to_owned()),
                        );
                    }
                }
            }
            field(format!("{key}_own"), Role::OwnWords);
        }
        Form {
            request,
            renders,
            fields,
            asked_by: None,
        }
    }

    /// Says in the message which sub-agent asks (`session-1 › reviewer`),
    /// when a host relays one.
    pub fn asked_by(mut self, chain: Option<String>) -> Self {
        self.asked_by = chain;
        self
    }

    /// The form's `message`: what the form is, not the questions again
    /// (each field carries its question).
    pub fn message(&self) -> String {
        let what = match self.request.questions.as_slice() {
            [one] => one.question.clone(),
            all => format!(
                "{} questions. Answer what you can; leave the rest empty to skip them.",
                all.len()
            ),
        };
        match &self.asked_by {
            Some(chain) => format!("{ASKED_BY}{chain}.\n\n{what}"),
            None => what,
        }
    }

    /// The form's `requestedSchema`, as JSON.
    pub fn schema(&self) -> Value {
        let mut properties = Map::new();
        for field in &self.fields {
            let q = &self.request.questions[field.question];
            let title = title(q);
            let property = match &field.role {
                Role::Text => json!({"type": "string", "title": title, "description": q.question}),
                Role::Choice => {
                    let mut p = json!({"type": "string", "title": title,
                        "description": q.question, "oneOf": choices(q)});
                    if let Some(recommended) = q.recommended() {
                        p["default"] = json!(recommended.label);
                    }
                    p
                }
                Role::Choices => json!({"type": "array", "title": title,
                    "description": q.question, "items": {"anyOf": choices(q)}}),
                Role::Option(label) => {
                    let mut p = json!({"type": "boolean", "title": format!("{title}: {label}"),
                        "default": false});
                    let option = q.options.iter().flatten().find(|o| &o.label == label);
                    if let Some(description) = option.and_then(|o| o.description.as_ref()) {
                        p["description"] = json!(description);
                    }
                    p
                }
                Role::OwnWords => json!({"type": "string",
                    "title": format!("{title}: or in your own words")}),
            };
            properties.insert(field.key.clone(), property);
        }
        if !self.renders.text_last {
            properties.insert(
                SEND.to_owned(),
                json!({"type": "boolean", "title": "Send these answers", "default": true}),
            );
        }
        json!({"type": "object", "properties": properties})
    }

    /// The answers in an accepted form's `content`. A value of the wrong
    /// shape is the client's fault (`INVALID_ANSWER`); a label that is not
    /// offered is left for the seam's answer checks, which name it. A form
    /// that came back with none of its fields, or with "Send" unset, answers
    /// nothing: the person may never have seen the questions.
    pub fn answers(&self, content: &Map<String, Value>) -> Result<Vec<Answer>, AskError> {
        if content.get(SEND) == Some(&Value::Bool(false)) {
            return Err(AskError::new(
                ErrorCode::AskCancelled,
                "the user chose not to send answers. Do not ask the same again; continue with \
                 what you know or end your turn",
            ));
        }
        let sent = content.get(SEND) == Some(&Value::Bool(true));
        if !sent && !self.fields.iter().any(|f| content.contains_key(&f.key)) {
            return Err(AskError::new(
                ErrorCode::AskCancelled,
                "the client's form came back without any of its fields: the user may not have \
                 been shown the questions, and nothing was answered. Do not take this as the \
                 user's choice; ask in your reply if you need the answers",
            ));
        }
        let mut answers: Vec<Answer> = self
            .request
            .questions
            .iter()
            .map(|q| Answer::skipped(q.id.clone()))
            .collect();
        for field in &self.fields {
            let answer = &mut answers[field.question];
            let value = content.get(&field.key);
            match &field.role {
                Role::Text | Role::OwnWords => answer.custom = text(&field.key, value)?,
                Role::Choice => match value {
                    None | Some(Value::Null) => {}
                    Some(Value::String(label)) => answer.selected = vec![label.clone()],
                    Some(_) => return Err(wrong(&field.key, "a label")),
                },
                Role::Choices => match value {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(labels)) => {
                        answer.selected = labels
                            .iter()
                            .map(|l| {
                                l.as_str()
                                    .map(str::to_owned)
                                    .ok_or_else(|| wrong(&field.key, "a list of labels"))
                            })
                            .collect::<Result<_, _>>()?
                    }
                    Some(_) => return Err(wrong(&field.key, "a list of labels")),
                },
                Role::Option(label) => match value {
                    None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) => answer.selected.push(label.clone()),
                    Some(_) => return Err(wrong(&field.key, "yes or no")),
                },
            }
        }
        // Single-select: the own words replace the choice.
        for (answer, q) in answers.iter_mut().zip(&self.request.questions) {
            if answer.custom.is_some() && !q.is_multi_select() {
                answer.selected.clear();
            }
        }
        Ok(answers)
    }
}

/// How a form's message names the sub-agent that asks.
const ASKED_BY: &str = "Asked by sub-agent ";

/// The sub-agent a form of ours says asks ([`Form::asked_by`]), read back
/// from its `message`: shown, never trusted (any server can write it).
pub fn asked_by_in(message: &str) -> Option<String> {
    let (chain, _) = message.strip_prefix(ASKED_BY)?.split_once(".\n\n")?;
    let chain = ask_user_seam::text::clean(chain, false);
    (!chain.is_empty() && chain.chars().count() <= 300).then(|| chain.into_owned())
}

/// What a dismissed form answers (`how`: "declined", "cancelled"): the
/// ask ends `ASK_CANCELLED`, and the model is told not to ask again.
pub fn dismissed(how: &str) -> AskError {
    AskError::new(
        ErrorCode::AskCancelled,
        format!(
            "the user {how} the form without answering. Do not ask the same again; \
             continue with what you know or end your turn"
        ),
    )
}

/// The batch and the client's rendering a form of ours was made from, read
/// back from its schema: `None` unless the schema is exactly what
/// [`Form::new`] makes of that batch (the round trip is the proof; a form
/// of another server, or one rendered without lists, is read generically,
/// [`received`]).
pub fn read_back(schema: &Value) -> Option<(AskRequest, Renders)> {
    let properties = schema.get("properties")?.as_object()?;
    let renders = Renders {
        arrays: true,
        text_last: !properties.contains_key(SEND),
    };
    let mut questions: Vec<Question> = Vec::new();
    for (key, property) in properties {
        if key == SEND {
            continue;
        }
        // `qNN_<id>`, its question's place counting from 1.
        let place: usize = key.get(1..3)?.parse().ok()?;
        let id = key.strip_prefix('q')?.get(3..)?;
        if place == questions.len() {
            // Its own words, or one of its options: made again below.
            continue;
        }
        if place != questions.len() + 1 || key.as_bytes().get(3) != Some(&b'_') {
            return None;
        }
        let text = property.get("description")?.as_str()?;
        let title = property.get("title")?.as_str()?;
        let mut question = Question::new(id, text);
        question.header = (title != text).then(|| title.to_owned());
        let listed = match property.get("type")?.as_str()? {
            "array" => {
                question.multi_select = Some(true);
                property.get("items")?.get("anyOf")
            }
            _ => property.get("oneOf"),
        };
        if let Some(listed) = listed {
            let options = listed
                .as_array()?
                .iter()
                .map(|choice| {
                    let label = choice.get("const")?.as_str()?;
                    let title = choice.get("title")?.as_str()?;
                    let mut option = ask_user_seam::QuestionOption::new(label);
                    option.description = title
                        .strip_prefix(label)
                        .and_then(|rest| rest.strip_prefix(": "))
                        .map(str::to_owned);
                    Some(option)
                })
                .collect::<Option<Vec<_>>>()?;
            question.options = Some(options);
        }
        questions.push(question);
    }
    let request = AskRequest { questions };
    (!request.questions.is_empty() && Form::new(&request, renders).schema() == *schema)
        .then_some((request, renders))
}

impl Form<'_> {
    /// The content a person sends who answers the form with `answers` (the
    /// other way of [`Form::answers`]): a skipped question's fields left
    /// out; a single-select question's own words instead of its choice.
    pub fn content(&self, answers: &[Answer]) -> Map<String, Value> {
        let mut content = Map::new();
        for field in &self.fields {
            let q = &self.request.questions[field.question];
            let Some(answer) = Answer::of(answers, &q.id) else {
                continue;
            };
            let value = match &field.role {
                Role::Text | Role::OwnWords => answer.custom.clone().map(Value::String),
                Role::Choice if answer.custom.is_some() => None,
                Role::Choice => answer.selected.first().cloned().map(Value::String),
                Role::Choices => {
                    Some(json!(answer.selected)).filter(|_| !answer.selected.is_empty())
                }
                Role::Option(label) => Some(json!(answer.selected.contains(label))),
            };
            if let Some(value) = value {
                content.insert(field.key.clone(), value);
            }
        }
        if !self.renders.text_last {
            content.insert(SEND.to_owned(), Value::Bool(true));
        }
        content
    }
}

/// A field's title: the question's header, else the question.
fn title(q: &Question) -> String {
    q.header.clone().unwrap_or_else(|| q.question.clone())
}

/// The options as titled choices; a description shows in the title, where
/// every client shows it.
fn choices(q: &Question) -> Vec<Value> {
    q.options
        .iter()
        .flatten()
        .map(|o| {
            let title = match &o.description {
                Some(description) => format!("{}: {description}", o.label),
                None => o.label.clone(),
            };
            json!({"const": o.label, "title": title})
        })
        .collect()
}

fn wrong(key: &str, wanted: &str) -> AskError {
    AskError::new(
        ErrorCode::InvalidAnswer,
        format!(
            "the client's form answer for {key:?} is not {wanted}; it was not passed on. This \
             is a fault of the MCP client"
        ),
    )
}

/// A text field's words, trimmed; empty is none.
fn text(key: &str, value: Option<&Value>) -> Result<Option<String>, AskError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(wrong(key, "a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::QuestionOption;

    /// A client that shows forms as the protocol describes.
    const ALL: Renders = Renders {
        arrays: true,
        text_last: true,
    };
    /// Codex 0.169.
    const CODEX: Renders = Renders {
        arrays: false,
        text_last: false,
    };

    fn request() -> AskRequest {
        let mut target = Question::new("target", "Where should it go?");
        target.header = Some("Deploy".into());
        let mut staging = QuestionOption::new("Staging (Recommended)");
        staging.description = Some("Safe to try.".into());
        target.options = Some(vec![staging, QuestionOption::new("Production")]);
        let mut checks = Question::new("checks", "Which checks?");
        checks.options = Some(vec![
            QuestionOption::new("Unit"),
            QuestionOption::new("E2E"),
        ]);
        checks.multi_select = Some(true);
        AskRequest {
            questions: vec![target, checks, Question::new("note", "Anything else?")],
        }
    }

    fn keys(schema: &Value) -> Vec<&str> {
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect()
    }

    /// A form of ours reads back as its batch, and its answers go back as
    /// the content the codec reads as those answers; a form the codec
    /// would not make, or one without lists, is not taken for ours.
    #[test]
    fn a_form_of_ours_reads_back_as_its_batch_and_answers_both_ways() {
        let asked = request();
        for renders in [
            ALL,
            Renders {
                arrays: true,
                text_last: false,
            },
        ] {
            let schema = Form::new(&asked, renders).schema();
            let (read, read_renders) = read_back(&schema).expect("ours");
            assert_eq!(read_renders, renders);
            assert_eq!(
                serde_json::to_value(&read.questions).unwrap(),
                serde_json::to_value(&asked.questions).unwrap(),
                "the batch as it was asked"
            );
            let form = Form::new(&read, renders);
            let answers = vec![
                Answer {
                    custom: Some("Canary".into()),
                    ..Answer::skipped("target".to_owned())
                },
                Answer {
                    selected: vec!["Unit".into(), "E2E".into()],
                    ..Answer::skipped("checks".to_owned())
                },
                Answer::skipped("note".to_owned()),
            ];
            assert_eq!(form.answers(&form.content(&answers)).unwrap(), answers);
        }
        assert!(read_back(&Form::new(&asked, CODEX).schema()).is_none());
        let mut altered = Form::new(&asked, ALL).schema();
        altered["properties"]["q01_target"]["title"] = json!("Somewhere");
        assert!(read_back(&altered).is_none(), "not what the codec makes");
        let mut extra = Form::new(&asked, ALL).schema();
        extra["properties"]["q04_more"] = json!({"type": "string", "title": "More?"});
        assert!(read_back(&extra).is_none());
    }

    #[test]
    fn the_fields_follow_the_questions_whether_kept_in_order_or_sorted() {
        let request = request();
        for renders in [ALL, CODEX] {
            let schema = Form::new(&request, renders).schema();
            let keys = keys(&schema);
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted, "{renders:?}");
        }
        let schema = Form::new(&request, ALL).schema();
        assert_eq!(
            keys(&schema),
            [
                "q01_target",
                "q01_target_own",
                "q02_checks",
                "q02_checks_own",
                "q03_note"
            ]
        );
        assert_eq!(
            schema["properties"]["q01_target"],
            json!({"type":"string","title":"Deploy","description":"Where should it go?",
                   "oneOf":[{"const":"Staging (Recommended)",
                             "title":"Staging (Recommended): Safe to try."},
                            {"const":"Production","title":"Production"}],
                   "default":"Staging (Recommended)"})
        );
        assert_eq!(
            schema["properties"]["q02_checks"]["items"],
            json!({"anyOf":[{"const":"Unit","title":"Unit"},{"const":"E2E","title":"E2E"}]})
        );
        assert_eq!(
            schema["properties"]["q01_target_own"]["title"], "Deploy: or in your own words",
            "the own words name their question"
        );
        assert_eq!(schema["properties"]["q03_note"]["type"], "string");
        assert!(
            schema.get("required").is_none(),
            "every question may be skipped"
        );
    }

    #[test]
    fn a_client_without_lists_gets_a_yes_or_no_per_option_and_a_closing_send() {
        let request = request();
        let schema = Form::new(&request, CODEX).schema();
        assert_eq!(
            keys(&schema),
            [
                "q01_target",
                "q01_target_own",
                "q02_checks_opt01",
                "q02_checks_opt02",
                "q02_checks_own",
                "q03_note",
                "q99_send"
            ]
        );
        assert_eq!(
            schema["properties"]["q02_checks_opt02"],
            json!({"type": "boolean", "title": "Which checks?: E2E", "default": false})
        );
        let last = &schema["properties"]["q99_send"];
        assert_eq!(last["type"], "boolean", "a text field never comes last");
        let content = json!({"q02_checks_opt01": true, "q02_checks_opt02": false,
            "q02_checks_own": "smoke", "q99_send": true});
        let answers = Form::new(&request, CODEX)
            .answers(content.as_object().unwrap())
            .unwrap();
        assert_eq!(answers[1].selected, ["Unit"]);
        assert_eq!(answers[1].custom.as_deref(), Some("smoke"));
        assert_eq!(answers[0], Answer::skipped("target"));
    }

    #[test]
    fn the_message_does_not_repeat_the_questions() {
        let request = request();
        let message = Form::new(&request, ALL).message();
        assert!(message.starts_with("3 questions."), "{message}");
        assert!(!message.contains("Where should it go?"), "{message}");
        let one = AskRequest {
            questions: vec![Question::new("go", "Ship it?")],
        };
        assert_eq!(Form::new(&one, ALL).message(), "Ship it?");
        let relayed = Form::new(&one, ALL).asked_by(Some("session-1 › reviewer".to_owned()));
        assert_eq!(
            relayed.message(),
            "Asked by sub-agent session-1 › reviewer.\n\nShip it?"
        );
        // Read back by whoever receives the form (a client's hook).
        assert_eq!(
            asked_by_in(&relayed.message()).as_deref(),
            Some("session-1 › reviewer")
        );
        assert_eq!(asked_by_in(&Form::new(&one, ALL).message()), None);
        assert_eq!(
            asked_by_in("Asked by sub-agent \u{1b}[2J.\n\nx").as_deref(),
            Some("[2J")
        );
    }

    #[test]
    fn content_becomes_answers_with_skips_and_own_words() {
        let content = json!({
            "q01_target": "Production", "q01_target_own": "  canary first ",
            "q02_checks": ["Unit", "E2E"], "q02_checks_own": "smoke",
        });
        let request = request();
        let answers = Form::new(&request, ALL)
            .answers(content.as_object().unwrap())
            .unwrap();
        assert_eq!(
            answers[0],
            Answer {
                id: "target".into(),
                selected: vec![],
                custom: Some("canary first".into())
            }
        );
        assert_eq!(answers[1].selected, ["Unit", "E2E"]);
        assert_eq!(answers[1].custom.as_deref(), Some("smoke"));
        assert_eq!(answers[2], Answer::skipped("note"));
    }

    #[test]
    fn a_form_back_empty_or_not_sent_answers_nothing() {
        let request = request();
        for (renders, content) in [
            (ALL, json!({})),
            (ALL, json!({"unrelated": "x"})),
            (CODEX, json!({})),
            (
                CODEX,
                json!({"q01_target": "Production", "q99_send": false}),
            ),
        ] {
            let error = Form::new(&request, renders)
                .answers(content.as_object().unwrap())
                .unwrap_err();
            assert_eq!(error.code(), Some(&ErrorCode::AskCancelled), "{content}");
        }
        // Sent with every question left empty: the person skipped them all.
        let sent = json!({"q99_send": true});
        let answers = Form::new(&request, CODEX)
            .answers(sent.as_object().unwrap())
            .unwrap();
        assert!(
            answers
                .iter()
                .all(|a| a.selected.is_empty() && a.custom.is_none())
        );
    }

    #[test]
    fn a_question_named_like_another_ones_field_takes_nothing_from_it() {
        let mut deploy = Question::new("deploy", "Deploy where?");
        deploy.options = Some(vec![
            QuestionOption::new("Staging"),
            QuestionOption::new("Production"),
        ]);
        let mut own = Question::new("deploy_own", "And the region?");
        own.options = Some(vec![QuestionOption::new("eu"), QuestionOption::new("us")]);
        let request = AskRequest {
            questions: vec![deploy, own],
        };
        let form = Form::new(&request, ALL);
        let content = json!({"q01_deploy": "Production", "q02_deploy_own": "eu"});
        let answers = form.answers(content.as_object().unwrap()).unwrap();
        assert_eq!(answers[0].selected, ["Production"], "the choice is kept");
        assert_eq!(answers[0].custom, None);
        assert_eq!(answers[1].selected, ["eu"]);
    }

    #[test]
    fn a_value_of_the_wrong_shape_is_an_invalid_answer() {
        let request = request();
        for (renders, content) in [
            (ALL, json!({"q01_target": ["Production"]})),
            (ALL, json!({"q02_checks": "Unit"})),
            (ALL, json!({"q03_note": 3})),
            (CODEX, json!({"q02_checks_opt01": "yes"})),
        ] {
            let error = Form::new(&request, renders)
                .answers(content.as_object().unwrap())
                .unwrap_err();
            assert_eq!(error.code(), Some(&ErrorCode::InvalidAnswer), "{content}");
        }
    }
}
