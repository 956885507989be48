//! Checks on what crosses the seam: intents on the way in (`BAD_INTENT`),
//! answers on the way out (`INVALID_ANSWER`).

use std::collections::HashSet;

use crate::ErrorCode;
use crate::error::AskError;
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

/// Longest free text (`custom`) an answer may carry, in characters (Unicode
/// scalar values): the tool's own output limit; checked here, in the host,
/// a longer text is the answerer's fault and never reaches the component's
/// memory.
pub use ask_user_codes::limits::MAX_CUSTOM_CHARS;

/// **Beyond** the reference: answers fit the questions before they reach the
/// model, whoever gave them ([`answers_fit`]). This is the seam's check of
/// what an answerer returned: a misfit is the host's answerer's fault.
pub fn check_answers(request: &AskRequest, answers: &[Answer]) -> Result<(), AskError> {
    answers_fit(request, answers).map_err(|problem| {
        AskError::new(
            ErrorCode::InvalidAnswer,
            format!(
                "the answerer returned answers that do not fit the questions ({problem}); \
                 they were not passed on. This is a fault of the host's answerer"
            ),
        )
    })
}

/// The same check of answers a person gave (on a page, in a chat, with
/// `ask-user inbox answer`): the misfit is said to them, and the question
/// stays open for a fitting answer.
pub fn check_given_answers(request: &AskRequest, answers: &[Answer]) -> Result<(), AskError> {
    answers_fit(request, answers).map_err(|problem| {
        AskError::new(
            ErrorCode::InvalidAnswer,
            format!(
                "these answers do not fit the questions ({problem}); nothing was sent, and \
                 the question is still open: answer it again"
            ),
        )
    })
}

/// Whether `answers` fit `request`'s questions, or why not: one item per
/// question id, no unknown or duplicate ids, selected labels among the
/// offered options and none twice, at most one for single-select, and there
/// not together with own words (SPEC §1: `custom` replaces the choice), free
/// text within [`MAX_CUSTOM_CHARS`], and what a question's `accepts` says.
pub fn answers_fit(request: &AskRequest, answers: &[Answer]) -> Result<(), String> {
    let invalid = |problem: String| Err(problem);
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
            let offered: Vec<String> = q.labels().map(|l| format!("{l:?}")).collect();
            return invalid(match offered.is_empty() {
                true => format!(
                    "question {:?} has no options: answer it in own words (custom)",
                    q.id
                ),
                false => format!(
                    "question {:?} has no option labelled {label:?}; its options are {}",
                    q.id,
                    offered.join(", ")
                ),
            });
        }
        if let Some(label) = answer
            .selected
            .iter()
            .enumerate()
            .find_map(|(n, l)| answer.selected[..n].contains(l).then_some(l))
        {
            return invalid(format!("question {:?} has {label:?} selected twice", q.id));
        }
        if let Some(custom) = &answer.custom {
            if !q.is_multi_select() && !answer.selected.is_empty() && !q.takes_a_note() {
                return invalid(format!(
                    "single-select question {:?} has both a selected label and own words; \
                     own words replace the choice, so send \"selected\": [] with them",
                    q.id
                ));
            }
            // Counting stops past the limit: a huge text costs no more.
            if custom.chars().nth(MAX_CUSTOM_CHARS).is_some() {
                return invalid(format!(
                    "question {:?} has own words of {} characters, over the limit of \
                     {MAX_CUSTOM_CHARS}",
                    q.id,
                    custom.chars().count()
                ));
            }
        }
        if let Some(problem) = q.refuses(answer) {
            return invalid(format!("question {:?}: {problem}", q.id));
        }
    }
    if let Some(q) = request.questions.iter().find(|q| !seen.contains(&q.id)) {
        return invalid(format!("question {:?} got no answer", q.id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::{Question, QuestionOption};

    fn request(multi: bool) -> AskRequest {
        let mut q = Question::new("q", "Which?");
        q.options = Some(vec![QuestionOption::new("A"), QuestionOption::new("B")]);
        q.multi_select = Some(multi);
        AskRequest {
            questions: vec![q, Question::new("free", "Anything else?")],
        }
    }

    fn answer(id: &str, selected: &[&str]) -> Answer {
        Answer {
            id: id.into(),
            selected: selected.iter().map(|s| s.to_string()).collect(),
            custom: None,
        }
    }

    fn problem(request: &AskRequest, answers: &[Answer]) -> String {
        let error = check_answers(request, answers).unwrap_err();
        assert_eq!(error.code(), Some(&ErrorCode::InvalidAnswer));
        error.message().to_owned()
    }

    #[test]
    fn answers_that_fit_pass() {
        let answers = [answer("q", &["B"]), Answer::skipped("free")];
        assert!(check_answers(&request(false), &answers).is_ok());
        let answers = [answer("free", &[]), answer("q", &["A", "B"])];
        assert!(check_answers(&request(true), &answers).is_ok());
    }

    #[test]
    fn a_misfit_is_blamed_on_whoever_gave_it() {
        let answers = [answer("q", &["C"]), Answer::skipped("free")];
        // The host's answerer, through the seam.
        let by_answerer = problem(&request(false), &answers);
        assert!(
            by_answerer.contains("no option labelled \"C\""),
            "{by_answerer}"
        );
        assert!(
            by_answerer.ends_with("a fault of the host's answerer"),
            "{by_answerer}"
        );
        // A person, in the inbox or on a page: told, with the question open.
        let by_person = check_given_answers(&request(false), &answers).unwrap_err();
        assert_eq!(by_person.code(), Some(&ErrorCode::InvalidAnswer));
        let said = by_person.message();
        assert!(said.contains("no option labelled \"C\""), "{said}");
        assert!(!said.contains("host's answerer"), "{said}");
        assert!(said.contains("the question is still open"), "{said}");
    }

    #[test]
    fn each_kind_of_misfit_is_named() {
        let r = request(false);
        let with_custom = |selected: &[&str], custom: String| Answer {
            custom: Some(custom),
            ..answer("q", selected)
        };
        let skipped = Answer::skipped("free");
        let cases: [(&[Answer], &str); 8] = [
            (&[answer("q", &["A"])], "question \"free\" got no answer"),
            (
                &[answer("q", &["A"]), answer("q", &["A"])],
                "answered twice",
            ),
            (&[answer("zz", &[])], "unknown question id \"zz\""),
            (
                &[answer("q", &["A", "B"]), Answer::skipped("free")],
                "2 selected labels",
            ),
            (
                &[answer("q", &["C"]), Answer::skipped("free")],
                "no option labelled \"C\"",
            ),
            (
                &[with_custom(&["A"], "mine".into()), skipped.clone()],
                "both a selected label and own words",
            ),
            (
                &[
                    with_custom(&[], "x".repeat(MAX_CUSTOM_CHARS + 1)),
                    skipped.clone(),
                ],
                "own words of 16001 characters",
            ),
            (
                &[with_custom(&[], "x".repeat(30 << 20)), skipped.clone()],
                "over the limit of 16000",
            ),
        ];
        for (answers, says) in cases {
            let message = problem(&r, answers);
            assert!(message.contains(says), "{message:?} should say {says:?}");
        }
        let twice = [answer("q", &["A", "A"]), Answer::skipped("free")];
        let message = problem(&request(true), &twice);
        assert!(message.contains("\"A\" selected twice"), "{message}");
    }

    #[test]
    fn own_words_at_the_limit_and_with_picks_on_multi_select_pass() {
        let answers = [
            Answer {
                custom: Some("é".repeat(MAX_CUSTOM_CHARS)),
                ..answer("q", &["A", "B"])
            },
            Answer::skipped("free"),
        ];
        assert!(check_answers(&request(true), &answers).is_ok());
    }

    #[test]
    fn a_note_goes_beside_a_single_choice_only_where_a_question_takes_one() {
        use crate::question::Accepts;
        let mut r = request(false);
        let both = [
            Answer {
                custom: Some("after 5pm".into()),
                ..answer("q", &["A"])
            },
            Answer::skipped("free"),
        ];
        let refused = check_answers(&r, &both).unwrap_err();
        assert!(
            refused.message().contains("own words replace the choice"),
            "{refused:?}"
        );
        r.questions[0].accepts = Some(Accepts {
            note: true,
            ..Accepts::default()
        });
        assert!(check_answers(&r, &both).is_ok());
    }

    #[test]
    fn what_a_question_accepts_is_held_to() {
        use crate::question::{Accepts, OwnWords};
        let mut r = request(false);
        r.questions[0].accepts = Some(Accepts {
            required: true,
            own_words: OwnWords::None,
            ..Accepts::default()
        });
        r.questions[1].accepts = Some(Accepts {
            required: false,
            own_words: OwnWords::Number {
                integer: true,
                minimum: Some(1.0),
                maximum: Some(9.0),
            },
            ..Accepts::default()
        });
        let with = |id: &str, custom: &str| Answer {
            custom: Some(custom.into()),
            ..answer(id, &[])
        };
        let cases = [
            (
                [with("q", "C"), Answer::skipped("free")],
                "question \"q\": it takes only its options, not own words",
            ),
            (
                [Answer::skipped("q"), Answer::skipped("free")],
                "question \"q\": it must be answered",
            ),
            (
                [answer("q", &["A"]), with("free", "3.5")],
                "it takes a whole number, not \"3.5\"",
            ),
            (
                [answer("q", &["A"]), with("free", "12")],
                "a whole number of at most 9",
            ),
            (
                [answer("q", &["A"]), with("free", "0")],
                "a whole number of at least 1",
            ),
        ];
        for (answers, says) in cases {
            let message = problem(&r, &answers);
            assert!(message.contains(says), "{message:?} should say {says:?}");
        }
        for fits in [
            [answer("q", &["A"]), with("free", " 7 ")],
            [answer("q", &["B"]), Answer::skipped("free")],
        ] {
            assert!(check_answers(&r, &fits).is_ok(), "{fits:?}");
        }
        r.questions[1].accepts.as_mut().unwrap().own_words = OwnWords::Text {
            min_length: Some(2),
            max_length: Some(3),
        };
        for (text, fits) in [("é", false), ("éé", true), ("ééé", true), ("éééé", false)] {
            let answers = [answer("q", &["A"]), with("free", text)];
            assert_eq!(check_answers(&r, &answers).is_ok(), fits, "{text}");
        }
    }

    #[test]
    fn a_plan_review_needs_its_label_offered_and_a_detail() {
        let mut r = request(false);
        r.questions[0].intent = Some(Intent::PlanReview {
            approve: "A".into(),
        });
        let error = check_intents(&r).unwrap_err();
        assert_eq!(error.code(), Some(&ErrorCode::BadIntent));
        assert!(error.message().contains("no detail"), "{}", error.message());
        r.questions[0].detail = Some("the plan".into());
        assert!(check_intents(&r).is_ok());
        r.questions[0].intent = Some(Intent::PlanReview {
            approve: "Z".into(),
        });
        assert!(check_intents(&r).unwrap_err().message().contains("\"Z\""));
    }
}
