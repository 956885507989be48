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

/// Answers that do not fit the output schema or the questions asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError(pub String);

impl core::fmt::Display for OutputError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "the answers received do not fit the tool's output: {}. This is a fault of the \
             host's answerer, not of your call; do not retry it unchanged",
            self.0
        )
    }
}

impl Output {
    /// Builds the result from the seam's answers, copying only `id`,
    /// `selected` and `custom`, ordered as `questions` were asked.
    pub fn from_answers(
        questions: &[seam::Question],
        answers: Vec<seam::Answer>,
    ) -> Result<Self, OutputError> {
        let mut slots: Vec<Option<AnswerItem>> = vec![None; questions.len()];
        for answer in answers {
            let Some(index) = questions.iter().position(|q| q.id == answer.id) else {
                return Err(OutputError(format!(
                    "an answer names the id {}, which no question has",
                    json::quoted(&answer.id)
                )));
            };
            if slots[index].is_some() {
                return Err(OutputError(format!(
                    "question {} was answered twice",
                    json::quoted(&answer.id)
                )));
            }
            check_answer(&answer)?;
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
                    OutputError(format!("question {} got no answer", json::quoted(&q.id)))
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

fn check_answer(answer: &seam::Answer) -> Result<(), OutputError> {
    let id = json::quoted(&answer.id);
    if answer.selected.len() > MAX_OPTIONS {
        return Err(OutputError(format!(
            "question {id} has {} selected labels, over the limit of {MAX_OPTIONS} (MAX_OPTIONS)",
            answer.selected.len()
        )));
    }
    if let Some(label) = answer
        .selected
        .iter()
        .find(|l| l.chars().count() > MAX_LABEL_CHARS)
    {
        return Err(OutputError(format!(
            "question {id} has a selected label of {} characters, over the limit of \
             {MAX_LABEL_CHARS} (MAX_LABEL_CHARS)",
            label.chars().count()
        )));
    }
    if let Some(custom) = &answer.custom {
        let chars = custom.chars().count();
        if chars > MAX_CUSTOM_CHARS {
            return Err(OutputError(format!(
                "question {id} has free text of {chars} characters, over the limit of \
                 {MAX_CUSTOM_CHARS} (MAX_CUSTOM_CHARS)"
            )));
        }
    }
    Ok(())
}
