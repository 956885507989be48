//! The tool's result: its types (which generate the output schema), the
//! check that the seam's answers fit it, and the model-facing rendering.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

#[cfg(not(target_arch = "wasm32"))]
use schemars::JsonSchema;
#[cfg(not(target_arch = "wasm32"))]
use serde::Serialize;

use crate::json;
use crate::limits::*;
use crate::seam;

/// The structured result of `ask_user_question`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(Serialize, JsonSchema))]
#[cfg_attr(
    not(target_arch = "wasm32"),
    schemars(title = "ask_user_question result", deny_unknown_fields)
)]
pub struct Output {
    /// One answer per question, in the order the questions were asked.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_QUESTIONS)))]
    pub answers: Vec<AnswerItem>,
}

/// The human's answer to one question.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(Serialize, JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(deny_unknown_fields))]
pub struct AnswerItem {
    /// The id of the question.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = MAX_ID_CHARS)))]
    pub id: String,
    /// Labels of the chosen options; empty when the question was skipped or
    /// answered with free text only.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_OPTIONS), inner(length(max = MAX_LABEL_CHARS))))]
    pub selected: Vec<String>,
    /// The human's own words. Single-select: instead of a choice.
    /// Multi-select: in addition to the chosen labels.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        serde(skip_serializing_if = "Option::is_none")
    )]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(max = MAX_CUSTOM_CHARS)))]
    pub custom: Option<String>,
}

/// Answers that do not fit the questions asked (`INVALID_ANSWER`): checked
/// here, in the component, so that a host in any language gets the same
/// check (the Rust host also checks them in its seam, before they are
/// copied in). Answers that fit the questions fit the output schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswersError(pub String);

impl core::fmt::Display for AnswersError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "the answerer returned answers that do not fit the questions ({}); they were not \
             passed on. This is a fault of the host's answerer",
            self.0
        )
    }
}

impl Output {
    /// Builds the result from the seam's answers, copying only `id`,
    /// `selected` and `custom`, ordered as `questions` were asked, once
    /// they fit the questions: one answer per question, labels among its
    /// options and none twice, at most one for a single-select question and
    /// then no own words with it, own words within [`MAX_CUSTOM_CHARS`].
    pub fn from_answers(
        questions: &[seam::Question],
        answers: Vec<seam::Answer>,
    ) -> Result<Self, AnswersError> {
        let mut slots: Vec<Option<AnswerItem>> = vec![None; questions.len()];
        for answer in answers {
            let Some(index) = questions.iter().position(|q| q.id == answer.id) else {
                return Err(AnswersError(format!(
                    "an answer names the unknown question id {}",
                    json::quoted(&answer.id)
                )));
            };
            if slots[index].is_some() {
                return Err(AnswersError(format!(
                    "question {} is answered twice",
                    json::quoted(&answer.id)
                )));
            }
            check_answer(&questions[index], &answer)?;
            slots[index] = Some(AnswerItem {
                id: answer.id,
                selected: answer.selected,
                custom: answer.custom,
            });
        }
        let answers = slots
            .into_iter()
            .zip(questions)
            .map(|(slot, q)| {
                slot.ok_or_else(|| {
                    AnswersError(format!("question {} got no answer", json::quoted(&q.id)))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Output { answers })
    }

    /// The model-facing text: compact JSON, keys in the order `id`,
    /// `selected`, `custom`.
    pub fn render(&self) -> String {
        let mut out = String::from("{\"answers\":[");
        for (n, answer) in self.answers.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str("{\"id\":");
            json::write_string(&mut out, &answer.id);
            out.push_str(",\"selected\":[");
            for (m, label) in answer.selected.iter().enumerate() {
                if m > 0 {
                    out.push(',');
                }
                json::write_string(&mut out, label);
            }
            out.push(']');
            if let Some(custom) = &answer.custom {
                out.push_str(",\"custom\":");
                json::write_string(&mut out, custom);
            }
            out.push('}');
        }
        out.push_str("]}");
        out
    }
}

fn check_answer(question: &seam::Question, answer: &seam::Answer) -> Result<(), AnswersError> {
    let id = json::quoted(&answer.id);
    let multi = question.multi_select == Some(true);
    let offered = question.options.as_deref().unwrap_or_default();
    if !multi && answer.selected.len() > 1 {
        return Err(AnswersError(format!(
            "single-select question {id} has {} selected labels",
            answer.selected.len()
        )));
    }
    for (n, label) in answer.selected.iter().enumerate() {
        if !offered.iter().any(|o| o.label == *label) {
            let labels: Vec<String> = offered.iter().map(|o| json::quoted(&o.label)).collect();
            return Err(AnswersError(match labels.is_empty() {
                true => format!("question {id} has no options: answer it in own words (custom)"),
                false => format!(
                    "question {id} has no option labelled {}; its options are {}",
                    json::quoted(label),
                    labels.join(", ")
                ),
            }));
        }
        if answer.selected[..n].contains(label) {
            return Err(AnswersError(format!(
                "question {id} has {} selected twice",
                json::quoted(label)
            )));
        }
    }
    if let Some(custom) = &answer.custom {
        if !multi && !answer.selected.is_empty() {
            return Err(AnswersError(format!(
                "single-select question {id} has both a selected label and own words; own \
                 words replace the choice, so send \"selected\": [] with them"
            )));
        }
        if custom.chars().nth(MAX_CUSTOM_CHARS).is_some() {
            return Err(AnswersError(format!(
                "question {id} has own words of {} characters, over the limit of \
                 {MAX_CUSTOM_CHARS}",
                custom.chars().count()
            )));
        }
    }
    Ok(())
}
