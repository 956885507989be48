//! The script answerer: answers from rules, for headless runs, CI and evals.
//!
//! A rule matches a question by its id or by a pattern on its text, and
//! answers it (given labels and/or free text, or the recommended option when
//! one is marked), passes, or rejects with a code. For each question the
//! first rule that applies decides. The request is claimed only when every
//! question is answered by a rule; a question no rule answers passes the
//! whole request on. The script never invents an answer no rule gave.

use std::path::{Path, PathBuf};

use ask_user_seam::{
    Answer, AnswerError, AnswerFuture, Answerer, Ask, AskError, ErrorCode, Next, Question,
};
use regex_lite::Regex;
use serde::Deserialize;

use super::{AnswererKind, ConfigProblem, KindTable, Setup, ready};

/// `kind = "script"`: canned `answers` (a file, tried first) and `rules`.
pub struct ScriptKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptTable {
    answers: Option<PathBuf>,
    #[serde(default)]
    rules: Vec<Rule>,
}

impl AnswererKind for ScriptKind {
    fn name(&self) -> &'static str {
        "script"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: ScriptTable = table.read(self.name())?;
        let canned = match &table.answers {
            Some(path) => ScriptAnswerer::from_file(&base.join(path)).map_err(|e| e.to_string())?,
            None => ScriptAnswerer::default(),
        };
        Ok(ready(canned.then(ScriptAnswerer::new(table.rules))))
    }
}

/// The largest answers file read, in bytes: far more than the answers to
/// the most questions one call may ask.
pub const MAX_ANSWERS_BYTES: u64 = 4 << 20;

/// Answers questions by rules.
#[derive(Debug, Clone, Default)]
pub struct ScriptAnswerer {
    rules: Vec<Rule>,
}

/// Which questions a rule is for, and what it does with them.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RuleSpec")]
pub struct Rule {
    matcher: Matcher,
    action: Action,
}

#[derive(Debug, Clone)]
enum Matcher {
    Id(String),
    Text(Regex),
}

#[derive(Debug, Clone)]
enum Action {
    Answer {
        select: Vec<String>,
        custom: Option<String>,
    },
    Recommended,
    Pass,
    Reject {
        code: String,
        message: Option<String>,
    },
}

/// A rule as written in a configuration file: one matcher (`id` or
/// `question`) and one action (`select`/`custom`, `recommended = true`,
/// `pass = true`, or `reject = "CODE"` with an optional `message`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    id: Option<String>,
    question: Option<String>,
    select: Option<Vec<String>>,
    custom: Option<String>,
    #[serde(default)]
    recommended: bool,
    #[serde(default)]
    pass: bool,
    reject: Option<String>,
    message: Option<String>,
}

impl TryFrom<RuleSpec> for Rule {
    type Error = String;

    fn try_from(mut spec: RuleSpec) -> Result<Self, String> {
        let matcher = match (spec.id, spec.question) {
            (Some(id), None) => Matcher::Id(id),
            (None, Some(pattern)) => Matcher::Text(
                Regex::new(&pattern)
                    .map_err(|e| format!("the question pattern {pattern:?} is not a regex: {e}"))?,
            ),
            _ => {
                return Err("a rule matches by exactly one of `id` or `question` (a regex)".into());
            }
        };
        let answers = spec.select.is_some() || spec.custom.is_some();
        let action = match (answers, spec.recommended, spec.pass, spec.reject) {
            (true, false, false, None) => Action::Answer {
                select: spec.select.unwrap_or_default(),
                custom: spec.custom,
            },
            (false, true, false, None) => Action::Recommended,
            (false, false, true, None) => Action::Pass,
            (false, false, false, Some(code)) => Action::Reject {
                code,
                message: spec.message.take(),
            },
            _ => {
                return Err(
                    "a rule does exactly one of: `select`/`custom`, `recommended = true`, \
                            `pass = true`, `reject = \"CODE\"`"
                        .into(),
                );
            }
        };
        if spec.message.is_some() && !matches!(action, Action::Reject { .. }) {
            return Err("`message` goes with `reject`".into());
        }
        Ok(Rule { matcher, action })
    }
}

/// What the script does with one question.
enum Decision {
    Answer(Answer),
    Pass,
    /// A rule's `reject`: ends the ask.
    Reject(AnswerError),
    /// A rule that cannot answer this question (`INVALID_ANSWER`); moot
    /// when another question passes the request on.
    Broken(AnswerError),
}

/// A script file that cannot be used.
#[derive(Debug)]
pub struct ScriptError(String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswersFile {
    answers: Vec<FileAnswer>,
}

/// An answer as the file gives it: the canonical shape, and nothing else
/// (a typo such as `custon` would otherwise skip the question).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAnswer {
    id: String,
    #[serde(default)]
    selected: Vec<String>,
    custom: Option<String>,
}

/// Answers in the canonical shape
/// `{"answers":[{"id":…,"selected":[…],"custom":…}]}`, each id once and no
/// other keys (a typo such as `custon` would otherwise skip the question).
pub fn read_answers(json: &str) -> Result<Vec<Answer>, ScriptError> {
    if json.trim_start().starts_with('[') {
        return Err(ScriptError(
            "the answers are a bare list: put it in an object, {\"answers\":[…]}".to_owned(),
        ));
    }
    let file: AnswersFile = serde_json::from_str(json).map_err(|e| {
        ScriptError(format!(
            "the answers are not of the shape {{\"answers\":[{{\"id\":…,\"selected\":[…],\"custom\":…}}]}}: {e}"
        ))
    })?;
    let mut answers: Vec<Answer> = Vec::new();
    for answer in file.answers {
        if answers.iter().any(|a| a.id == answer.id) {
            return Err(ScriptError(format!(
                "the answers hold the id {:?} twice",
                answer.id
            )));
        }
        answers.push(Answer {
            id: answer.id,
            selected: answer.selected,
            custom: answer.custom,
        });
    }
    Ok(answers)
}

/// The text of an answers file, at most [`MAX_ANSWERS_BYTES`] of it.
pub fn read_answers_file(path: &Path) -> Result<String, ScriptError> {
    ask_user_seam::files::read_bounded(path, MAX_ANSWERS_BYTES)
        .map_err(|e| ScriptError(format!("cannot read {}: {e}", path.display())))
}

impl ScriptAnswerer {
    /// A script of `rules`, tried in order.
    pub fn new(rules: Vec<Rule>) -> Self {
        ScriptAnswerer { rules }
    }

    /// Canned answers in the canonical shape
    /// `{"answers":[{"id":…,"selected":[…],"custom":…}]}`: one rule per id.
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        let rules = read_answers(json)?
            .into_iter()
            .map(|answer| Rule {
                matcher: Matcher::Id(answer.id),
                action: Action::Answer {
                    select: answer.selected,
                    custom: answer.custom,
                },
            })
            .collect();
        Ok(ScriptAnswerer { rules })
    }

    /// Canned answers from a file; see [`from_json`](Self::from_json).
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        Self::from_json(&read_answers_file(path)?)
            .map_err(|e| ScriptError(format!("{}: {e}", path.display())))
    }

    /// Adds `other`'s rules after this script's.
    pub fn then(mut self, other: ScriptAnswerer) -> Self {
        self.rules.extend(other.rules);
        self
    }

    fn decide(&self, question: &Question) -> Decision {
        for (n, rule) in self.rules.iter().enumerate() {
            let matches = match &rule.matcher {
                Matcher::Id(id) => *id == question.id,
                Matcher::Text(pattern) => pattern.is_match(&question.question),
            };
            if !matches {
                continue;
            }
            let (selected, custom) = match &rule.action {
                Action::Pass => return Decision::Pass,
                Action::Reject { code, message } => {
                    let message = message.clone().unwrap_or_else(|| {
                        format!(
                            "the script rejected question {:?} (rule {})",
                            question.id,
                            n + 1
                        )
                    });
                    return Decision::Reject(AskError::new(ErrorCode::parse(code), message).into());
                }
                // Only when one is marked; otherwise the next rule may apply.
                Action::Recommended => match question.recommended() {
                    Some(option) => (vec![option.label.clone()], None),
                    None => continue,
                },
                Action::Answer { select, custom } => (select.clone(), custom.clone()),
            };
            if let Some(label) = selected
                .iter()
                .find(|l| !question.labels().any(|o| o == *l))
            {
                let error = AskError::new(
                    ErrorCode::InvalidAnswer,
                    format!(
                        "script rule {} selects {label:?}, which question {:?} does not offer; \
                         fix the rule or the answers file",
                        n + 1,
                        question.id
                    ),
                );
                return Decision::Broken(error.into());
            }
            return Decision::Answer(Answer {
                id: question.id.clone(),
                selected,
                custom,
            });
        }
        Decision::Pass
    }
}

impl Answerer for ScriptAnswerer {
    fn name(&self) -> &str {
        "script"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        let decisions: Vec<Decision> = ask
            .request
            .questions
            .iter()
            .map(|q| self.decide(q))
            .collect();
        // An explicit rejection ends the ask; a question no rule answers
        // passes the request on (a broken rule elsewhere is then moot); a
        // broken rule fails it; otherwise the script claims.
        let mut answers = Vec::new();
        let (mut unanswered, mut broken) = (Vec::new(), None);
        for (decision, question) in decisions.into_iter().zip(&ask.request.questions) {
            match decision {
                Decision::Answer(answer) => answers.push(answer),
                Decision::Pass => unanswered.push(format!("{:?}", question.id)),
                Decision::Reject(error) => return Box::pin(std::future::ready(Err(error))),
                Decision::Broken(error) => broken = broken.or(Some(error)),
            }
        }
        match (unanswered.is_empty(), broken) {
            (false, _) => next.pass(format!(
                "no answer or rule for question {}",
                unanswered.join(", ")
            )),
            (true, Some(error)) => Box::pin(std::future::ready(Err(error))),
            (true, None) => Box::pin(std::future::ready(Ok(answers))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::QuestionOption;

    fn rule(toml: &str) -> Result<Rule, String> {
        #[derive(Deserialize)]
        struct One {
            rule: Rule,
        }
        toml::from_str::<One>(&format!("rule = {toml}"))
            .map(|one| one.rule)
            .map_err(|e| e.message().to_owned())
    }

    fn question(id: &str, text: &str, labels: &[&str]) -> Question {
        let mut q = Question::new(id, text);
        if !labels.is_empty() {
            q.options = Some(labels.iter().map(|l| QuestionOption::new(*l)).collect());
        }
        q
    }

    fn decided(script: &ScriptAnswerer, q: &Question) -> Result<Option<Answer>, String> {
        match script.decide(q) {
            Decision::Answer(answer) => Ok(Some(answer)),
            Decision::Pass => Ok(None),
            Decision::Reject(AnswerError::Seam(e)) => Err(e.code().unwrap().to_string()),
            Decision::Broken(AnswerError::Seam(e)) => {
                Err(format!("{}: {}", e.code().unwrap(), e.message()))
            }
            other => panic!("not a coded decision: {:?}", std::mem::discriminant(&other)),
        }
    }

    #[test]
    fn a_rule_has_exactly_one_matcher_and_one_action() {
        for (toml, says) in [
            (r#"{ select = ["A"] }"#, "exactly one of `id` or `question`"),
            (
                r#"{ id = "a", question = "b", pass = true }"#,
                "exactly one of `id`",
            ),
            (r#"{ id = "a" }"#, "does exactly one of"),
            (
                r#"{ id = "a", pass = true, recommended = true }"#,
                "does exactly one of",
            ),
            (
                r#"{ id = "a", pass = true, message = "m" }"#,
                "`message` goes with `reject`",
            ),
            (r#"{ question = "(", pass = true }"#, "is not a regex"),
            (
                r#"{ id = "a", pass = true, colour = 1 }"#,
                "unknown field `colour`",
            ),
        ] {
            let problem = rule(toml).err().unwrap_or_default();
            assert!(
                problem.contains(says),
                "{toml}: {problem:?} should say {says:?}"
            );
        }
    }

    #[test]
    fn a_bare_list_of_answers_says_to_wrap_it() {
        let error = read_answers(r#"[{"id":"q","selected":["A"]}]"#).unwrap_err();
        assert!(error.0.contains(r#"{"answers":[…]}"#), "{}", error.0);
    }

    #[test]
    fn the_first_rule_that_applies_decides() {
        let script = ScriptAnswerer::new(vec![
            rule(r#"{ id = "skip", pass = true }"#).unwrap(),
            rule(r#"{ question = "(?i)deploy", recommended = true }"#).unwrap(),
            rule(r#"{ question = "(?i)delete", reject = "ASK_CANCELLED" }"#).unwrap(),
            rule(r#"{ question = ".", custom = "fallback" }"#).unwrap(),
        ]);
        let deploy = question("d", "Deploy where?", &["Prod", "Staging (Recommended)"]);
        assert_eq!(
            decided(&script, &deploy).unwrap().unwrap().selected,
            ["Staging (Recommended)"]
        );
        // No recommended option: the next rule that applies decides.
        let plain = question("p", "Deploy now?", &["Yes", "No"]);
        assert_eq!(
            decided(&script, &plain).unwrap().unwrap().custom.as_deref(),
            Some("fallback")
        );
        assert_eq!(
            decided(&script, &question("skip", "Deploy?", &[])),
            Ok(None)
        );
        assert_eq!(
            decided(&script, &question("x", "Delete it?", &[])),
            Err("ASK_CANCELLED".to_owned())
        );
    }

    #[test]
    fn a_rule_never_selects_what_is_not_offered() {
        let script = ScriptAnswerer::new(vec![rule(r#"{ id = "q", select = ["C"] }"#).unwrap()]);
        let problem = decided(&script, &question("q", "Which?", &["A", "B"])).unwrap_err();
        assert!(problem.starts_with("INVALID_ANSWER: "), "{problem}");
        assert!(problem.contains("does not offer"), "{problem}");
    }

    #[test]
    fn canned_answers_name_each_id_once() {
        let twice = r#"{"answers":[{"id":"a","selected":[]},{"id":"a","selected":[]}]}"#;
        assert!(
            ScriptAnswerer::from_json(twice)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
        assert!(ScriptAnswerer::from_json(r#"{"answer":[]}"#).is_err());
    }

    #[test]
    fn canned_answers_refuse_unknown_keys() {
        let typo = r#"{"answers":[{"id":"a","custon":"mine"}]}"#;
        let problem = ScriptAnswerer::from_json(typo).unwrap_err().to_string();
        assert!(problem.contains("unknown field `custon`"), "{problem}");
    }
}
