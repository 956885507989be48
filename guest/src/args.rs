//! The model's arguments: their types (which generate the input schema),
//! parsing, and the limits of [`crate::limits`].

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::limits::*;
use crate::seam;

/// The arguments of `ask_user_question`.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "ask_user_question arguments")]
pub struct Arguments {
    /// The questions, asked together and answered as one batch.
    #[schemars(length(max = MAX_QUESTIONS))]
    pub questions: Vec<Question>,
}

/// One question for the human.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Question {
    /// Stable id, unique within the call, echoed in the answer.
    #[schemars(length(min = 1, max = MAX_ID_CHARS))]
    pub id: String,
    /// The question, complete and specific.
    #[schemars(length(min = 1, max = MAX_QUESTION_CHARS))]
    pub question: String,
    /// A very short heading for the question, e.g. "Confirm" or "Choose mode".
    #[schemars(length(min = 1, max = MAX_HEADER_CHARS))]
    pub header: Option<String>,
    /// The choices. Put a recommended option first and append " (Recommended)"
    /// to its label. Omit for a free-text question; the human can always type
    /// their own answer instead.
    #[schemars(length(max = MAX_OPTIONS))]
    pub options: Option<Vec<QuestionOption>>,
    /// Whether several options may be chosen. Default false.
    pub multi_select: Option<bool>,
}

/// One choice offered to the human.
#[derive(Debug, JsonSchema)]
pub struct QuestionOption {
    /// What the human sees and what you get back when it is chosen.
    #[schemars(length(min = 1, max = MAX_LABEL_CHARS))]
    pub label: String,
    /// One sentence on the trade-off of this choice.
    #[schemars(length(max = MAX_DESCRIPTION_CHARS))]
    pub description: Option<String>,
    /// Any other keys, kept as the text of one JSON object for the answerer.
    #[schemars(skip)]
    pub extra_json: Option<String>,
}

/// Reads `label` and `description` and keeps every other key verbatim, so
/// that no JSON value is ever built (which keeps the component small).
impl<'de> Deserialize<'de> for QuestionOption {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OptionVisitor;

        impl<'de> Visitor<'de> for OptionVisitor {
            type Value = QuestionOption;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an option object with a label")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QuestionOption, A::Error> {
                let mut label = None;
                let mut description = None;
                let mut extra = String::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "label" if label.is_some() => {
                            return Err(de::Error::duplicate_field("label"));
                        }
                        "label" => label = Some(map.next_value::<String>()?),
                        "description" if description.is_some() => {
                            return Err(de::Error::duplicate_field("description"));
                        }
                        "description" => description = Some(map.next_value::<Option<String>>()?),
                        _ => {
                            let value = map.next_value::<Box<RawValue>>()?;
                            extra.push(if extra.is_empty() { '{' } else { ',' });
                            extra
                                .push_str(&serde_json::to_string(&key).map_err(de::Error::custom)?);
                            extra.push(':');
                            extra.push_str(value.get());
                        }
                    }
                }
                if !extra.is_empty() {
                    extra.push('}');
                }
                Ok(QuestionOption {
                    label: label.ok_or_else(|| de::Error::missing_field("label"))?,
                    description: description.flatten(),
                    extra_json: (!extra.is_empty()).then_some(extra),
                })
            }
        }

        deserializer.deserialize_map(OptionVisitor)
    }
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

impl std::fmt::Display for ArgumentsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let arguments: Arguments =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|e| ArgumentsError {
                path: render_path(e.path()),
                problem: serde_problem(e.inner()),
            })?;
        // Anything after the object is an error too.
        deserializer.end().map_err(|e| ArgumentsError {
            path: String::new(),
            problem: serde_problem(&e),
        })?;
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
        let mut seen = std::collections::HashSet::new();
        for (i, q) in self.questions.iter().enumerate() {
            let at = |field: &str| format!("questions[{i}].{field}");
            check_text(&at("id"), &q.id, MAX_ID_CHARS, "MAX_ID_CHARS")?;
            if !seen.insert(q.id.as_str()) {
                return Err(ArgumentsError {
                    path: at("id"),
                    problem: format!(
                        "the id {:?} is used by an earlier question; answers are keyed by id, \
                         so give every question its own id",
                        q.id
                    ),
                });
            }
            check_text(
                &at("question"),
                &q.question,
                MAX_QUESTION_CHARS,
                "MAX_QUESTION_CHARS",
            )?;
            if let Some(header) = &q.header {
                check_text(&at("header"), header, MAX_HEADER_CHARS, "MAX_HEADER_CHARS")?;
            }
            let Some(options) = &q.options else { continue };
            check_count(&at("options"), options.len(), MAX_OPTIONS, "MAX_OPTIONS")?;
            for (j, o) in options.iter().enumerate() {
                let at = |field: &str| format!("questions[{i}].options[{j}]{field}");
                check_text(&at(".label"), &o.label, MAX_LABEL_CHARS, "MAX_LABEL_CHARS")?;
                if let Some(description) = &o.description {
                    check_length(
                        &at(".description"),
                        description,
                        MAX_DESCRIPTION_CHARS,
                        "MAX_DESCRIPTION_CHARS",
                    )?;
                }
                let extra = o.extra_json.as_deref().unwrap_or_default();
                if extra.len() > MAX_OPTION_EXTRA_BYTES {
                    return Err(ArgumentsError {
                        path: at(""),
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

/// A required, non-empty text field.
fn check_text(path: &str, text: &str, max: usize, name: &str) -> Result<(), ArgumentsError> {
    if text.is_empty() {
        return Err(ArgumentsError {
            path: path.to_owned(),
            problem: "it is empty; give it some text".to_owned(),
        });
    }
    check_length(path, text, max, name)
}

fn check_length(path: &str, text: &str, max: usize, name: &str) -> Result<(), ArgumentsError> {
    let chars = text.chars().count();
    if chars > max {
        return Err(ArgumentsError {
            path: path.to_owned(),
            problem: format!("{chars} characters, over the limit of {max} ({name})"),
        });
    }
    Ok(())
}

fn render_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    out
}

/// serde_json's message without its "at line 1 column 9" suffix, which means
/// nothing to a model that sent the arguments as one object.
fn serde_problem(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let problem = match text.rfind(" at line ") {
        Some(at) if error.line() > 0 => text[..at].to_owned(),
        _ => text,
    };
    if error.is_syntax() || error.is_eof() {
        format!("the arguments are not valid JSON ({problem})")
    } else {
        problem
    }
}
