//! Checks on what crosses the seam: intents on the way in (`BAD_INTENT`),
//! answers on the way out (`INVALID_ANSWER`).

use std::collections::HashSet;

use crate::error::{AskError, ErrorCode};
use crate::question::{Answer, AskRequest, Intent};

/// SPEC §2 step 4: a plan-review question offers its `approve` label and
/// carries the plan in `detail`.
pub fn check_intents(request: &AskRequest) -> Result<(), AskError> {
    for q in &request.questions {
        let Some(Intent::PlanReview { approve }) = &q.intent else {
            continue;
        };
        let problem = if q.options.as_ref().is_none_or(|o| o.is_empty()) {
            "it offers no options".to_owned()
        } else if !q.labels().any(|label| label == approve) {
            format!("its approve label {approve:?} is not one of its options")
        } else if q.detail.is_none() {
            "it has no detail holding the plan".to_owned()
        } else {
            continue;
        };
        return Err(AskError::new(
            ErrorCode::BadIntent,
            format!(
                "question {:?} has a plan-review intent, but {problem}. Offer the approve label as \
                 an option and put the plan in detail",
                q.id
            ),
        ));
    }
    Ok(())
}

/// **Beyond** the reference: answers fit the questions before they reach the
/// model. One item per question id, no unknown or duplicate ids, selected
/// labels among the offered options, at most one for single-select.
pub fn check_answers(request: &AskRequest, answers: &[Answer]) -> Result<(), AskError> {
    let invalid = |problem: String| {
        Err(AskError::new(
            ErrorCode::InvalidAnswer,
            format!(
                "the answerer returned answers that do not fit the questions ({problem}); \
                 they were not passed on. This is a fault of the host's answerer"
            ),
        ))
    };
    let mut seen = HashSet::new();
    for answer in answers {
        let Some(q) = request.questions.iter().find(|q| q.id == answer.id) else {
            return invalid(format!(
                "an answer names the unknown question id {:?}",
                answer.id
            ));
        };
        if !seen.insert(&answer.id) {
            return invalid(format!("question {:?} is answered twice", answer.id));
        }
        if !q.is_multi_select() && answer.selected.len() > 1 {
            return invalid(format!(
                "single-select question {:?} has {} selected labels",
                q.id,
                answer.selected.len()
            ));
        }
        if let Some(label) = answer
            .selected
            .iter()
            .find(|l| !q.labels().any(|o| o == *l))
        {
            return invalid(format!(
                "question {:?} has no option labelled {label:?}",
                q.id
            ));
        }
    }
    if let Some(q) = request.questions.iter().find(|q| !seen.contains(&q.id)) {
        return invalid(format!("question {:?} got no answer", q.id));
    }
    Ok(())
}
