//! The model's arguments: their types (which generate the input schema),
//! parsing, and the limits of [`crate::limits`].

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

#[cfg(not(target_arch = "wasm32"))]
use schemars::JsonSchema;

use crate::json::{self, Json};
use crate::limits::*;
use crate::seam;

/// The arguments of `ask_user_question`. At most 262144 bytes of JSON in
/// all (a limit JSON Schema cannot state); numbers must fit a 64-bit float.
#[derive(Debug)]
#[cfg_attr(not(target_arch = "wasm32"), derive(JsonSchema))]
#[cfg_attr(
    not(target_arch = "wasm32"),
    schemars(title = "ask_user_question arguments")
)]
pub struct Arguments {
    /// The questions, asked together and answered as one batch.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_QUESTIONS)))]
    pub questions: Vec<Question>,
}

/// One question for the human.
#[derive(Debug)]
#[cfg_attr(not(target_arch = "wasm32"), derive(JsonSchema))]
pub struct Question {
    /// Stable id, unique within the call, echoed in the answer.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = MAX_ID_CHARS)))]
    pub id: String,
    /// The question, complete and specific.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = MAX_QUESTION_CHARS)))]
    pub question: String,
    /// A very short heading for the question, e.g. "Confirm" or "Choose mode".
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = MAX_HEADER_CHARS)))]
    pub header: Option<String>,
    /// The choices. Put a recommended option first and append " (Recommended)"
    /// to its label. Omit for a free-text question; the human can always type
    /// their own answer instead.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_OPTIONS)))]
    pub options: Option<Vec<QuestionOption>>,
    /// Whether several options may be chosen. Default false.
    // The reader also takes `multiSelect` (see `Question::from_json`).
    pub multi_select: Option<bool>,
}

/// One choice offered to the human. Other keys are kept for the answerer, at
/// most 4096 bytes of them as compact JSON.
#[derive(Debug)]
#[cfg_attr(not(target_arch = "wasm32"), derive(JsonSchema))]
pub struct QuestionOption {
    /// What the human sees and what you get back when it is chosen. Unique
    /// within the question.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = MAX_LABEL_CHARS)))]
    pub label: String,
    /// One sentence on the trade-off of this choice.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_DESCRIPTION_CHARS)))]
    pub description: Option<String>,
    /// Any other keys, kept as the text of one JSON object for the answerer.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(skip))]
    pub extra_json: Option<String>,
}

/// Arguments that do not fit the input schema or a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentsError {
    /// Where in the arguments, e.g. `questions[0].options[2].label`; empty
    /// for the arguments as a whole.
    pub path: String,
    /// What is wrong there.
    pub problem: String,
}

impl core::fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.path.is_empty() {
            write!(f, "invalid arguments: {}", self.problem)?;
        } else {
            write!(f, "invalid arguments at `{}`: {}", self.path, self.problem)?;
        }
        f.write_str(". Fix the arguments to match the tool's input schema and call again.")
    }
}

impl Arguments {
    /// Parses and checks the model's arguments (a JSON object as text).
    pub fn parse(json: &str) -> Result<Self, ArgumentsError> {
        if json.len() > MAX_ARGUMENTS_BYTES {
            return Err(ArgumentsError {
                path: String::new(),
                problem: format!(
                    "the arguments are {} bytes, over the limit of {MAX_ARGUMENTS_BYTES} bytes \
                     (MAX_ARGUMENTS_BYTES); ask fewer or shorter questions",
                    json.len()
                ),
            });
        }
        let json = json::parse(json).map_err(|e| ArgumentsError {
            path: String::new(),
            problem: format!(
                "the arguments cannot be read as JSON: {} (line {}, column {})",
                e.problem, e.line, e.column
            ),
        })?;
        let arguments = Arguments::from_json(&json)?;
        arguments.check_limits()?;
        Ok(arguments)
    }

    fn check_limits(&self) -> Result<(), ArgumentsError> {
        check_count(
            "questions",
            self.questions.len(),
            MAX_QUESTIONS,
            "MAX_QUESTIONS",
        )?;
        for (i, q) in self.questions.iter().enumerate() {
            // Paths are written only for an error: a call that fits
            // allocates none.
            let at = |field: &'static str| move || format!("questions[{i}].{field}");
            check_text(at("id"), &q.id, MAX_ID_CHARS, "MAX_ID_CHARS")?;
            // At most MAX_QUESTIONS: a scan is cheaper than a hash set here.
            if self.questions[..i].iter().any(|earlier| earlier.id == q.id) {
                return Err(ArgumentsError {
                    path: at("id")(),
                    problem: format!(
                        "the id {} is used by an earlier question; answers are keyed by id, \
                         so give every question its own id",
                        json::quoted(&q.id)
                    ),
                });
            }
            check_text(
                at("question"),
                &q.question,
                MAX_QUESTION_CHARS,
                "MAX_QUESTION_CHARS",
            )?;
            if let Some(header) = &q.header {
                check_text(at("header"), header, MAX_HEADER_CHARS, "MAX_HEADER_CHARS")?;
            }
            let Some(options) = &q.options else { continue };
            check_count(&at("options")(), options.len(), MAX_OPTIONS, "MAX_OPTIONS")?;
            for (j, o) in options.iter().enumerate() {
                let at =
                    |field: &'static str| move || format!("questions[{i}].options[{j}]{field}");
                check_text(at(".label"), &o.label, MAX_LABEL_CHARS, "MAX_LABEL_CHARS")?;
                // An answer names its choice by label: two alike are ambiguous.
                if let Some(k) = options[..j].iter().position(|e| e.label == o.label) {
                    return Err(ArgumentsError {
                        path: at(".label")(),
                        problem: format!(
                            "the label {} is also the label of questions[{i}].options[{k}]; \
                             answers name a choice by its label, so give every option its own",
                            json::quoted(&o.label)
                        ),
                    });
                }
                if let Some(description) = &o.description {
                    check_length(
                        at(".description"),
                        description,
                        MAX_DESCRIPTION_CHARS,
                        "MAX_DESCRIPTION_CHARS",
                    )?;
                }
                let extra = o.extra_json.as_deref().unwrap_or_default();
                if extra.len() > MAX_OPTION_EXTRA_BYTES {
                    return Err(ArgumentsError {
                        path: at("")(),
                        problem: format!(
                            "its extra keys take {} bytes as JSON, over the limit of \
                             {MAX_OPTION_EXTRA_BYTES} bytes (MAX_OPTION_EXTRA_BYTES)",
                            extra.len()
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The seam request for these arguments: fields the model left out stay
    /// out, `multi_select` becomes `multi-select`, extra option keys are kept.
    pub fn to_request(&self) -> seam::Request {
        seam::Request {
            questions: self
                .questions
                .iter()
                .map(|q| seam::Question {
                    id: q.id.clone(),
                    question: q.question.clone(),
                    header: q.header.clone(),
                    options: q.options.as_ref().map(|options| {
                        options
                            .iter()
                            .map(|o| seam::QuestionOption {
                                label: o.label.clone(),
                                description: o.description.clone(),
                                extra_json: o.extra_json.clone(),
                            })
                            .collect()
                    }),
                    multi_select: q.multi_select,
                })
                .collect(),
        }
    }
}

fn check_count(path: &str, count: usize, max: usize, name: &str) -> Result<(), ArgumentsError> {
    if count > max {
        return Err(ArgumentsError {
            path: path.to_owned(),
            problem: format!("{count} items, over the limit of {max} ({name})"),
        });
    }
    Ok(())
}

/// A required, non-empty text field; `path` says where, written only for
/// an error.
fn check_text(
    path: impl Fn() -> String,
    text: &str,
    max: usize,
    name: &str,
) -> Result<(), ArgumentsError> {
    if text.is_empty() {
        return Err(ArgumentsError {
            path: path(),
            problem: "it is empty; give it some text".to_owned(),
        });
    }
    check_length(path, text, max, name)
}

fn check_length(
    path: impl Fn() -> String,
    text: &str,
    max: usize,
    name: &str,
) -> Result<(), ArgumentsError> {
    // Only text that could be too long is counted.
    if text.len() <= max {
        return Ok(());
    }
    let chars = text.chars().count();
    if chars > max {
        return Err(ArgumentsError {
            path: path(),
            problem: format!("{chars} characters, over the limit of {max} ({name})"),
        });
    }
    Ok(())
}

/// The members of the object at `path`.
fn object<'a>(value: &'a Json, path: &str) -> Result<&'a [(String, Json)], ArgumentsError> {
    match value {
        Json::Object(members) => Ok(members),
        other => Err(invalid_type(path, "an object", other)),
    }
}

/// The value of `key` in `members` (`None` when absent or null); a key
/// given twice is an error.
fn field<'a>(
    members: &'a [(String, Json)],
    key: &str,
    path: &str,
) -> Result<Option<&'a Json>, ArgumentsError> {
    let mut found = members.iter().filter(|(k, _)| k == key).map(|(_, v)| v);
    let value = found.next();
    if found.next().is_some() {
        return Err(ArgumentsError {
            path: path.to_owned(),
            problem: format!("duplicate field `{key}`"),
        });
    }
    Ok(value.filter(|v| **v != Json::Null))
}

fn required<'a>(
    members: &'a [(String, Json)],
    key: &str,
    path: &str,
) -> Result<&'a Json, ArgumentsError> {
    field(members, key, path)?.ok_or_else(|| ArgumentsError {
        path: path.to_owned(),
        problem: format!("missing field `{key}`"),
    })
}

/// The string at `key` of the object at `path`.
fn string(value: &Json, path: &str, key: &str) -> Result<String, ArgumentsError> {
    match value {
        Json::String(text) => Ok(text.clone()),
        other => Err(invalid_type(&join(path, key), "a string", other)),
    }
}

/// The array at `key` of the object at `path`.
fn array<'a>(value: &'a Json, path: &str, key: &str) -> Result<&'a [Json], ArgumentsError> {
    match value {
        Json::Array(items) => Ok(items),
        other => Err(invalid_type(&join(path, key), "an array", other)),
    }
}

fn invalid_type(path: &str, expected: &str, found: &Json) -> ArgumentsError {
    ArgumentsError {
        path: path.to_owned(),
        problem: format!("invalid type: expected {expected}, found {}", found.kind()),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

impl Arguments {
    /// The arguments in `json`, shaped as the input schema says. Unknown keys
    /// on the arguments and on questions are dropped; on options they are kept.
    fn from_json(json: &Json) -> Result<Self, ArgumentsError> {
        let members = object(json, "")?;
        let questions = array(required(members, "questions", "")?, "", "questions")?;
        let questions = questions
            .iter()
            .enumerate()
            .map(|(i, q)| Question::from_json(q, &format!("questions[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(Arguments { questions })
    }
}

impl Question {
    fn from_json(json: &Json, path: &str) -> Result<Self, ArgumentsError> {
        let members = object(json, path)?;
        let text = |key: &str| -> Result<Option<String>, ArgumentsError> {
            field(members, key, path)?
                .map(|v| string(v, path, key))
                .transpose()
        };
        let id = string(required(members, "id", path)?, path, "id")?;
        let question = string(required(members, "question", path)?, path, "question")?;
        let options = match field(members, "options", path)? {
            None => None,
            Some(options) => {
                let at = join(path, "options");
                let options = array(options, path, "options")?
                    .iter()
                    .enumerate()
                    .map(|(j, o)| QuestionOption::from_json(o, &format!("{at}[{j}]")))
                    .collect::<Result<_, _>>()?;
                Some(options)
            }
        };
        // `multiSelect` is how Claude Code's own tool spells it, and what
        // models have seen most: read as a synonym, never dropped.
        let flag = |key: &str| match field(members, key, path)? {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(invalid_type(&join(path, key), "a boolean", other)),
        };
        let multi_select = match (flag("multi_select")?, flag("multiSelect")?) {
            (Some(snake), Some(camel)) if snake != camel => {
                return Err(ArgumentsError {
                    path: path.to_owned(),
                    problem: "`multi_select` and `multiSelect` disagree; send only \
                              `multi_select`"
                        .into(),
                });
            }
            (snake, camel) => snake.or(camel),
        };
        Ok(Question {
            id,
            question,
            header: text("header")?,
            options,
            multi_select,
        })
    }
}

impl QuestionOption {
    fn from_json(json: &Json, path: &str) -> Result<Self, ArgumentsError> {
        let members = object(json, path)?;
        let label = string(required(members, "label", path)?, path, "label")?;
        let description = field(members, "description", path)?
            .map(|v| string(v, path, "description"))
            .transpose()?;
        let mut extra = members
            .iter()
            .filter(|(k, _)| k != "label" && k != "description")
            .peekable();
        let extra_json = extra.peek().is_some().then(|| {
            let mut text = String::new();
            json::write_object(&mut text, extra.map(|(k, v)| (k.as_str(), v)));
            text
        });
        Ok(QuestionOption {
            label,
            description,
            extra_json,
        })
    }
}
