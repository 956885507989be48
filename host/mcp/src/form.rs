//! One batch of questions as one elicitation form, and the form's content
//! back as answers (SPEC §6). No I/O here.
//!
//! Every property is optional (absent = skipped), in question order:
//! single-select with options → `<id>`, a titled string enum whose default is
//! the recommended label; multi-select → `<id>`, a titled array enum; either
//! also gets `<id>__own`, "Or in your own words" (the answer's `custom`);
//! free text → `<id>`, a string. Where `<id>__own` is another question's id,
//! the own-words property takes the first of `<id>__own2`, `<id>__own3`, …
//! that is no question's id ([`own_words_keys`]): no answer is ever read
//! from another question's field.

use std::collections::HashSet;

use ask_user_seam::{Answer, AskError, AskRequest, ErrorCode, Question};
use serde_json::{Map, Value, json};

/// The companion property of a question's own words.
pub const OWN_WORDS: &str = "__own";

/// The own-words property of each question with options (`None` for free
/// text), in question order: `<id>__own`, or, where that is a question's id
/// or taken already, `<id>__own2`, `<id>__own3`, …
pub fn own_words_keys(request: &AskRequest) -> Vec<Option<String>> {
    let mut taken: HashSet<String> = request.questions.iter().map(|q| q.id.clone()).collect();
    request
        .questions
        .iter()
        .map(|q| {
            q.options.as_ref().filter(|o| !o.is_empty())?;
            let key = (1..)
                .map(|n| match n {
                    1 => format!("{}{OWN_WORDS}", q.id),
                    n => format!("{}{OWN_WORDS}{n}", q.id),
                })
                .find(|key| !taken.contains(key))
                .expect("a free key among unboundedly many");
            taken.insert(key.clone());
            Some(key)
        })
        .collect()
}

/// The form's `message`: each question's header and text, with the
/// options' descriptions, as plain text.
pub fn message(request: &AskRequest) -> String {
    let mut out = Vec::new();
    for (n, q) in request.questions.iter().enumerate() {
        let number = match request.questions.len() {
            1 => String::new(),
            _ => format!("{}. ", n + 1),
        };
        let header = q
            .header
            .as_deref()
            .map(|h| format!("[{h}] "))
            .unwrap_or_default();
        out.push(format!("{number}{header}{}", q.question));
        for option in q.options.iter().flatten() {
            match &option.description {
                Some(description) => out.push(format!("  - {}: {description}", option.label)),
                None => out.push(format!("  - {}", option.label)),
            }
        }
    }
    out.join("\n")
}

/// The form's `requestedSchema`, as JSON.
pub fn schema(request: &AskRequest) -> Value {
    let mut properties = Map::new();
    for (q, own) in request.questions.iter().zip(own_words_keys(request)) {
        let title = q.header.clone().unwrap_or_else(|| q.question.clone());
        let choices: Vec<Value> = q
            .labels()
            .map(|label| json!({"const": label, "title": label}))
            .collect();
        let property = match (choices.is_empty(), q.is_multi_select()) {
            (true, _) => json!({"type": "string", "title": title, "description": q.question}),
            (false, false) => {
                let mut p = json!({
                    "type": "string", "title": title, "description": q.question, "oneOf": choices
                });
                if let Some(recommended) = q.recommended() {
                    p["default"] = json!(recommended.label);
                }
                p
            }
            (false, true) => json!({
                "type": "array", "title": title, "description": q.question,
                "items": {"anyOf": choices}
            }),
        };
        properties.insert(q.id.clone(), property);
        if let Some(own) = own {
            properties.insert(
                own,
                json!({"type": "string", "title": "Or in your own words"}),
            );
        }
    }
    json!({"type": "object", "properties": properties})
}

/// The answers in an accepted form's `content`. A value of the wrong shape
/// is the client's fault (`INVALID_ANSWER`); a label that is not offered is
/// left for the seam's answer checks, which name it.
pub fn answers(
    request: &AskRequest,
    content: &Map<String, Value>,
) -> Result<Vec<Answer>, AskError> {
    request
        .questions
        .iter()
        .zip(own_words_keys(request))
        .map(|(q, own)| answer(q, own.as_deref(), content))
        .collect()
}

fn answer(
    q: &Question,
    own: Option<&str>,
    content: &Map<String, Value>,
) -> Result<Answer, AskError> {
    let wrong = |key: &str, wanted: &str| {
        AskError::new(
            ErrorCode::InvalidAnswer,
            format!(
                "the client's form answer for {key:?} is not {wanted}; it was not passed on. \
                 This is a fault of the MCP client"
            ),
        )
    };
    let text = |key: &str| -> Result<Option<String>, AskError> {
        match content.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(_) => Err(wrong(key, "a string")),
        }
    };
    let Some(own) = own else {
        return Ok(Answer {
            id: q.id.clone(),
            selected: Vec::new(),
            custom: text(&q.id)?,
        });
    };
    let custom = text(own)?;
    let mut selected = match content.get(&q.id) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(label)) if !q.is_multi_select() => vec![label.clone()],
        Some(Value::Array(labels)) if q.is_multi_select() => labels
            .iter()
            .map(|l| {
                l.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| wrong(&q.id, "a list of labels"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) if q.is_multi_select() => return Err(wrong(&q.id, "a list of labels")),
        Some(_) => return Err(wrong(&q.id, "a label")),
    };
    // Single-select: the own words replace the choice.
    if custom.is_some() && !q.is_multi_select() {
        selected.clear();
    }
    Ok(Answer {
        id: q.id.clone(),
        selected,
        custom,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::QuestionOption;

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

    #[test]
    fn the_form_follows_the_questions_in_order() {
        let schema = schema(&request());
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["target", "target__own", "checks", "checks__own", "note"]
        );
        assert_eq!(
            schema["properties"]["target"],
            json!({"type":"string","title":"Deploy","description":"Where should it go?",
                   "oneOf":[{"const":"Staging (Recommended)","title":"Staging (Recommended)"},
                            {"const":"Production","title":"Production"}],
                   "default":"Staging (Recommended)"})
        );
        assert_eq!(
            schema["properties"]["checks"]["items"],
            json!({"anyOf":[{"const":"Unit","title":"Unit"},{"const":"E2E","title":"E2E"}]})
        );
        assert_eq!(schema["properties"]["note"]["type"], "string");
        assert!(
            schema.get("required").is_none(),
            "every question may be skipped"
        );
        let message = message(&request());
        assert!(message.starts_with("1. [Deploy] Where should it go?\n  - Staging (Recommended): Safe to try.\n  - Production\n2. Which checks?"), "{message}");
    }

    #[test]
    fn content_becomes_answers_with_skips_and_own_words() {
        let content = json!({
            "target": "Production", "target__own": "  canary first ",
            "checks": ["Unit", "E2E"], "checks__own": "smoke",
        });
        let answers = answers(&request(), content.as_object().unwrap()).unwrap();
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
    fn a_question_named_like_another_ones_own_words_takes_nothing_from_it() {
        let mut deploy = Question::new("deploy", "Deploy where?");
        deploy.options = Some(vec![
            QuestionOption::new("Staging"),
            QuestionOption::new("Production"),
        ]);
        let mut own = Question::new("deploy__own", "And the region?");
        own.options = Some(vec![QuestionOption::new("eu"), QuestionOption::new("us")]);
        let request = AskRequest {
            questions: vec![deploy, own],
        };
        let schema = schema(&request);
        let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["deploy", "deploy__own2", "deploy__own", "deploy__own__own"]
        );
        let content = json!({"deploy": "Production", "deploy__own": "eu"});
        let answers = answers(&request, content.as_object().unwrap()).unwrap();
        assert_eq!(answers[0].selected, ["Production"], "the choice is kept");
        assert_eq!(answers[0].custom, None);
        assert_eq!(answers[1].selected, ["eu"]);
    }

    #[test]
    fn a_value_of_the_wrong_shape_is_an_invalid_answer() {
        for content in [
            json!({"target": ["Production"]}),
            json!({"checks": "Unit"}),
            json!({"note": 3}),
        ] {
            let error = answers(&request(), content.as_object().unwrap()).unwrap_err();
            assert_eq!(error.code(), Some(&ErrorCode::InvalidAnswer), "{content}");
        }
    }
}
