//! `inbox list` for a person: each question in a block, wrapped to the
//! terminal's width.

use ask_user::inbox::QuestionView;
use ask_user::text::clean;

use super::{CliError, Context};

/// How long before `now` a thing happened at `at`, as a person says it.
fn ago(at: std::time::SystemTime, now: std::time::SystemTime) -> String {
    let seconds = now.duration_since(at).unwrap_or_default().as_secs();
    match seconds {
        0..10 => "just now".to_owned(),
        10..60 => format!("{seconds} s ago"),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..172_800 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

/// The questions, for a human: one block each.
pub fn print_questions(questions: &[QuestionView]) -> Result<(), CliError> {
    use std::io::Write;
    let text = listing(questions, output_width(), std::time::SystemTime::now());
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context(|| "cannot write to standard output".to_owned())
}

/// The columns standard output has: the terminal's, else 100.
fn output_width() -> usize {
    // SAFETY: TIOCGWINSZ fills the winsize we own, or fails.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    match (got, size.ws_col) {
        (0, columns) if columns >= 20 => usize::from(columns),
        _ => 100,
    }
}

/// `inbox list` for a person: each question with what asked it and when
/// (as long ago, from `now`), its questions wrapped to `width` columns.
fn listing(questions: &[QuestionView], width: usize, now: std::time::SystemTime) -> String {
    let mut text = String::new();
    if questions.is_empty() {
        text.push_str("no questions are waiting\n");
    }
    for view in questions {
        use ask_user::inbox::store::State;
        let waiting = match (view.state, view.agent_waiting) {
            (State::Waiting, true) => "waiting".to_owned(),
            (State::Waiting, false) => {
                "waiting (its agent is gone; answer it for when it asks again)".to_owned()
            }
            // Withdrawn, with why, as its card says: settled elsewhere
            // ("answered in Claude Code") as that, else "withdrawn: why".
            (State::Withdrawn, _) => match &view.settled_by {
                Some(why) if why.starts_with("answered ") || why.starts_with("dismissed ") => {
                    clean(why, false).into_owned()
                }
                Some(why) if !why.is_empty() => format!("withdrawn: {}", clean(why, false)),
                _ => "withdrawn".to_owned(),
            },
            (state, _) => match &view.answered_by {
                Some(person) => format!("{} by {}", state.as_str(), clean(person, false)),
                None => state.as_str().to_owned(),
            },
        };
        // Every text here came from a model, an agent or a file: cleaned
        // before it reaches the terminal.
        let asked = humantime::parse_rfc3339(&view.asked_at)
            .map(|at| ago(at, now))
            .unwrap_or_else(|_| clean(&view.asked_at, false).into_owned());
        text.push_str(&format!(
            "{}  {waiting}\n    session {} · {} · asked {asked}\n",
            clean(&view.id, false),
            clean(&view.session, false),
            clean(&view.agent, false),
        ));
        if let Some(cwd) = &view.cwd {
            text.push_str(&format!("    in {}\n", clean(cwd, false)));
        }
        for question in &view.questions {
            let header = question
                .header
                .as_deref()
                .map(|h| format!("[{}] ", clean(h, false)))
                .unwrap_or_default();
            let lead = format!("    {} {header}", clean(&question.id, false));
            let options = textwrap::Options::new(width)
                .initial_indent(&lead)
                .subsequent_indent("      ");
            for line in textwrap::wrap(&clean(&question.question, true), options) {
                text.push_str(&line);
                text.push('\n');
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_long_question_is_wrapped_to_the_width() {
        let now = SystemTime::now();
        let words: Vec<String> = (0..250).map(|n| format!("word{n}")).collect();
        let view: ask_user::inbox::QuestionView = serde_json::from_value(serde_json::json!({
            "id": "q1", "session": "s", "agent": "a", "askedAt": humantime::format_rfc3339(now).to_string(),
            "state": "waiting", "agentWaiting": true,
            "questions": [{"id": "q", "header": "Plan", "question": words.join(" ")}],
        }))
        .unwrap();
        let text = listing(&[view], 60, now);
        assert!(
            text.lines().all(|line| line.chars().count() <= 60),
            "{text}"
        );
        assert!(text.contains("    q [Plan] word0 word1"), "{text}");
        assert!(text.contains("word249"), "nothing is cut: {text}");
        assert!(text.contains("asked just now"), "{text}");
    }

    #[test]
    fn a_withdrawn_question_says_why_as_its_card_does() {
        let now = SystemTime::now();
        let said = |why: &str| {
            let view: QuestionView = serde_json::from_value(serde_json::json!({
                "id": "q1", "session": "s", "agent": "a", "askedAt": humantime::format_rfc3339(now).to_string(),
                "state": "withdrawn", "agentWaiting": false, "settledBy": why,
                "questions": [{"id": "q", "question": "Deploy?"}],
            }))
            .unwrap();
            listing(&[view], 80, now)
        };
        // Settled elsewhere: said as that, not as withdrawn.
        let text = said("answered in Claude Code");
        assert!(text.contains("q1  answered in Claude Code\n"), "{text}");
        let text = said("dismissed in Claude Code");
        assert!(text.contains("q1  dismissed in Claude Code\n"), "{text}");
        let text = said("the agent stopped waiting");
        assert!(
            text.contains("q1  withdrawn: the agent stopped waiting"),
            "{text}"
        );
    }

    #[test]
    fn a_time_is_said_as_how_long_ago() {
        let now = SystemTime::now();
        let said = |seconds| ago(now - Duration::from_secs(seconds), now);
        assert_eq!(said(3), "just now");
        assert_eq!(said(42), "42 s ago");
        assert_eq!(said(3 * 60 + 5), "3 min ago");
        assert_eq!(said(5 * 3600), "5 h ago");
        assert_eq!(said(3 * 86_400), "3 days ago");
        // A clock behind the server's: not "in the future".
        assert_eq!(ago(now + Duration::from_secs(30), now), "just now");
    }
}
