//! An MCP server's form (an elicitation's `requestedSchema`), as our
//! questions, and our answers back as the form's `content`: what a hook
//! that answers another server's forms (Claude Code's `Elicitation`) needs.
//!
//! A form `ask-user mcp` made is recognised (it is exactly what the codec
//! makes of the batch it reads back to) and goes on as that batch, its
//! answers back through the same codec. Any other form:
//!
//! Each property is a question, in order, its key the question's id (so
//! that a script's rules can name it): a titled or plain string enum is a
//! single choice, an array of one a multiple choice, a boolean a choice of
//! "Yes" and "No", a string, a number or an integer a free answer. Labels
//! are the choices' titles (their values where untitled). A form with any
//! other property is left to the client.
//!
//! What the form would refuse is said in each question's [`Accepts`], so
//! that answerers offer only what it takes and the seam's checks refuse the
//! rest before anything is sent: a choice takes no own words, a `required`
//! field cannot be skipped, a string keeps to its `minLength` and
//! `maxLength`, a number to its kind, `minimum` and `maximum`. A string's
//! `format` (email, uri, date) is not checked: the server judges it.

use ask_user_seam::limits::{MAX_HEADER_CHARS, MAX_LABEL_CHARS, MAX_OPTIONS, MAX_QUESTIONS};
use ask_user_seam::{Accepts, Answer, AskRequest, OwnWords, Question, QuestionOption};
use serde_json::{Map, Value, json};

use super::{Form, Renders, read_back};

/// One field's kind, with what its answer becomes.
#[derive(Debug)]
enum Kind {
    /// Labels, and the value each stands for.
    Choice(Vec<(String, Value)>),
    Choices(Vec<(String, Value)>),
    Boolean,
    /// Own words, as the question's [`OwnWords`] read them.
    Words,
}

/// A form, as questions.
#[derive(Debug)]
pub struct ReceivedForm {
    reading: Reading,
    pub request: AskRequest,
    /// The sub-agent a form of ours says asks ([`super::asked_by_in`]).
    pub asked_by: Option<String>,
}

/// How a form was read, and so how its answers go back.
#[derive(Debug)]
enum Reading {
    /// A form `ask-user mcp` made: its batch as it was asked, answered
    /// back through the same codec.
    Ours(Renders),
    /// Any other server's: each field a question.
    Fields(Vec<(String, Kind)>),
}

impl ReceivedForm {
    /// The questions of `schema` (with the form's `message` shown with the
    /// first); `None` when a property is not one a person can answer here.
    pub fn from_schema(message: &str, schema: &Value) -> Option<ReceivedForm> {
        if let Some((request, renders)) = read_back(schema) {
            return Some(ReceivedForm {
                reading: Reading::Ours(renders),
                request,
                asked_by: super::asked_by_in(message),
            });
        }
        let properties = schema.get("properties")?.as_object()?;
        if properties.is_empty() || properties.len() > MAX_QUESTIONS {
            return None;
        }
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut fields = Vec::new();
        let mut questions = Vec::new();
        for (key, property) in properties {
            let (kind, own_words) = kind(property)?;
            let title = property["title"].as_str();
            let description = property["description"].as_str();
            let text = description.or(title).unwrap_or(key);
            let mut question = Question::new(key.clone(), text);
            // The title heads a description; alone, it is the question,
            // said once.
            question.header = title
                .filter(|title| description.is_some_and(|d| d != *title))
                .map(|title| title.chars().take(MAX_HEADER_CHARS).collect());
            let labels = match &kind {
                Kind::Choice(choices) | Kind::Choices(choices) => {
                    choices.iter().map(|(label, _)| label.clone()).collect()
                }
                Kind::Boolean => vec!["Yes".to_owned(), "No".to_owned()],
                Kind::Words => Vec::new(),
            };
            let accepts = Accepts {
                required: required.contains(&key.as_str()),
                own_words,
                ..Accepts::default()
            };
            question.accepts = (accepts != Accepts::default()).then_some(accepts);
            if !labels.is_empty() {
                question.options = Some(labels.into_iter().map(QuestionOption::new).collect());
                question.multi_select = Some(matches!(kind, Kind::Choices(_)));
            }
            questions.push(question);
            fields.push((key.clone(), kind));
        }
        if let Some(first) = questions.first_mut().filter(|_| !message.trim().is_empty()) {
            first.detail = Some(message.to_owned());
        }
        Some(ReceivedForm {
            reading: Reading::Fields(fields),
            request: AskRequest { questions },
            asked_by: None,
        })
    }

    /// The form's `content` for `answers`: a skipped question, or own words
    /// where the field takes only its choices, leave its field out.
    pub fn content(&self, answers: &[Answer]) -> Map<String, Value> {
        let fields = match &self.reading {
            Reading::Ours(renders) => return Form::new(&self.request, *renders).content(answers),
            Reading::Fields(fields) => fields,
        };
        let mut content = Map::new();
        for ((key, kind), question) in fields.iter().zip(&self.request.questions) {
            let Some(answer) = Answer::of(answers, key) else {
                continue;
            };
            let value_of = |choices: &[(String, Value)], label: &str| {
                choices
                    .iter()
                    .find(|(l, _)| l == label)
                    .map(|(_, v)| v.clone())
            };
            let value = match kind {
                Kind::Choice(choices) => answer
                    .selected
                    .first()
                    .and_then(|label| value_of(choices, label)),
                Kind::Choices(choices) => Some(Value::Array(
                    answer
                        .selected
                        .iter()
                        .filter_map(|label| value_of(choices, label))
                        .collect(),
                ))
                .filter(|values| values.as_array().is_some_and(|v| !v.is_empty())),
                Kind::Boolean => answer.selected.first().map(|label| json!(label == "Yes")),
                Kind::Words => answer
                    .custom
                    .as_deref()
                    .and_then(|text| question.own_words().value(text).ok()),
            };
            if let Some(value) = value {
                content.insert(key.clone(), value);
            }
        }
        content
    }
}

/// What kind of field `property` is, and what own words it takes, when a
/// person can answer it here.
fn kind(property: &Value) -> Option<(Kind, OwnWords)> {
    let bound = |key: &str| property[key].as_f64();
    let length = |key: &str| property[key].as_u64();
    match property["type"].as_str()? {
        "string" => {
            let listed = ["enum", "oneOf", "anyOf"]
                .iter()
                .any(|k| property.get(k).is_some());
            match listed {
                true => choices(property).map(|c| (Kind::Choice(c), OwnWords::None)),
                false => Some((
                    Kind::Words,
                    match (length("minLength"), length("maxLength")) {
                        (None, None) => OwnWords::Any,
                        (min_length, max_length) => OwnWords::Text {
                            min_length,
                            max_length,
                        },
                    },
                )),
            }
        }
        "array" => choices(&property["items"]).map(|c| (Kind::Choices(c), OwnWords::None)),
        "boolean" => Some((Kind::Boolean, OwnWords::None)),
        kind @ ("number" | "integer") => Some((
            Kind::Words,
            OwnWords::Number {
                integer: kind == "integer",
                minimum: bound("minimum"),
                maximum: bound("maximum"),
            },
        )),
        _ => None,
    }
}

/// The choices of an enum: titled (`oneOf`/`anyOf` of `const` and `title`)
/// or plain (`enum`, with `enumNames`); `None` for a field without, or with
/// labels that cannot tell them apart.
fn choices(schema: &Value) -> Option<Vec<(String, Value)>> {
    let titled = schema["oneOf"].as_array().or(schema["anyOf"].as_array());
    let choices: Vec<(String, Value)> = match (titled, schema["enum"].as_array()) {
        (Some(titled), _) => titled
            .iter()
            .map(|choice| {
                let value = choice.get("const")?.clone();
                let label = choice["title"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| text(&value))?;
                Some((label, value))
            })
            .collect::<Option<_>>()?,
        (None, Some(values)) => {
            let names = schema["enumNames"].as_array();
            values
                .iter()
                .enumerate()
                .map(|(n, value)| {
                    let name = names.and_then(|names| names.get(n)).and_then(Value::as_str);
                    Some((
                        name.map(str::to_owned).or_else(|| text(value))?,
                        value.clone(),
                    ))
                })
                .collect::<Option<_>>()?
        }
        (None, None) => return None,
    };
    let choices: Vec<(String, Value)> = choices
        .into_iter()
        .map(|(label, value)| (label.chars().take(MAX_LABEL_CHARS).collect(), value))
        .collect();
    let mut labels: Vec<&String> = choices.iter().map(|(label, _)| label).collect();
    labels.sort();
    labels.dedup();
    (!choices.is_empty() && choices.len() <= MAX_OPTIONS && labels.len() == choices.len())
        .then_some(choices)
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "target": {"type": "string", "title": "Deploy", "description": "Where to?",
                "oneOf": [{"const": "stg", "title": "Staging"}, {"const": "prod", "title": "Production"}]},
            "checks": {"type": "array", "title": "Checks",
                "items": {"anyOf": [{"const": "unit", "title": "Unit"}, {"const": "load", "title": "Load"}]}},
            "region": {"type": "string", "enum": ["eu", "us"], "enumNames": ["Europe", "America"]},
            "notify": {"type": "boolean", "title": "Notify the team?"},
            "note": {"type": "string", "title": "Note"},
            "replicas": {"type": "integer", "title": "Replicas"},
        }})
    }

    #[test]
    fn each_field_is_a_question_in_order() {
        let form = ReceivedForm::from_schema("Release 42", &schema()).unwrap();
        let questions = &form.request.questions;
        let ids: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(
            ids,
            ["target", "checks", "region", "notify", "note", "replicas"]
        );
        assert_eq!(questions[0].question, "Where to?");
        assert_eq!(questions[0].header.as_deref(), Some("Deploy"));
        assert_eq!(questions[0].detail.as_deref(), Some("Release 42"));
        assert_eq!(
            questions[0].labels().collect::<Vec<_>>(),
            ["Staging", "Production"]
        );
        assert!(questions[1].is_multi_select());
        assert_eq!(
            questions[2].labels().collect::<Vec<_>>(),
            ["Europe", "America"]
        );
        assert_eq!(questions[3].labels().collect::<Vec<_>>(), ["Yes", "No"]);
        assert!(questions[4].options.is_none() && questions[5].options.is_none());
        // A title without a description is the question, not its header too.
        assert_eq!(questions[3].question, "Notify the team?");
        assert_eq!(questions[3].header, None);
    }

    #[test]
    fn answers_become_the_values_the_form_takes() {
        let form = ReceivedForm::from_schema("", &schema()).unwrap();
        let pick = |id: &str, selected: &[&str], custom: Option<&str>| Answer {
            id: id.into(),
            selected: selected.iter().map(|s| s.to_string()).collect(),
            custom: custom.map(str::to_owned),
        };
        // In another order than the fields: matched by key, not place.
        let answers = [
            pick("replicas", &[], Some(" 3 ")),
            pick("notify", &["No"], None),
            pick("target", &["Production"], None),
            pick("note", &[], Some("ship it")),
            pick("checks", &["Unit", "Load"], None),
            pick("region", &[], Some("somewhere else")),
        ];
        assert_eq!(
            Value::Object(form.content(&answers)),
            json!({"target": "prod", "checks": ["unit", "load"], "notify": false,
                   "note": "ship it", "replicas": 3})
        );
    }

    #[test]
    fn what_each_field_takes_is_said_with_its_question() {
        let mut schema = schema();
        schema["required"] = json!(["target", "note", "notify"]);
        schema["properties"]["note"]["maxLength"] = json!(80);
        schema["properties"]["replicas"]["minimum"] = json!(1);
        let form = ReceivedForm::from_schema("", &schema).unwrap();
        let accepts: Vec<(bool, OwnWords)> = form
            .request
            .questions
            .iter()
            .map(|q| (q.is_required(), q.own_words().clone()))
            .collect();
        assert_eq!(
            accepts,
            [
                (true, OwnWords::None),
                (false, OwnWords::None),
                (false, OwnWords::None),
                (true, OwnWords::None),
                (
                    true,
                    OwnWords::Text {
                        min_length: None,
                        max_length: Some(80)
                    }
                ),
                (
                    false,
                    OwnWords::Number {
                        integer: true,
                        minimum: Some(1.0),
                        maximum: None
                    }
                ),
            ]
        );
        // So the page's own checks, and the seam's, refuse what the
        // server would: own words for a choice, a required field skipped.
        let answers = [
            Answer::skipped("target"),
            Answer::skipped("checks"),
            Answer::skipped("region"),
            Answer::skipped("notify"),
            Answer::skipped("note"),
            Answer::skipped("replicas"),
        ];
        let refused = ask_user_seam::validate::check_answers(&form.request, &answers);
        assert!(
            refused
                .unwrap_err()
                .message()
                .contains("question \"target\": it must be answered")
        );
    }

    #[test]
    fn a_form_we_cannot_show_is_left_to_the_client() {
        for property in [
            json!({"type": "object"}),
            json!({"type": "string", "enum": ["a", "a"]}),
            json!({"type": "array", "items": {"type": "string"}}),
        ] {
            let schema = json!({"type": "object", "properties": {"x": property}});
            assert!(ReceivedForm::from_schema("", &schema).is_none(), "{schema}");
        }
        assert!(
            ReceivedForm::from_schema("", &json!({"type": "object", "properties": {}})).is_none()
        );
    }
}
