//! A question as a Matrix message (a plain body, and HTML with the model's
//! words escaped), its edits and the bot's notices; and what a person's
//! reply or reaction says, read back.

use serde_json::{Value, json};

use ask_user_inbox::store::Record;
use ask_user_seam::Question;

use crate::chat::Said;
use crate::text::{escape, words};

/// The most options a reaction can choose: 1️⃣ to 9️⃣ and 🔟.
const REACTIONS: usize = 10;

/// A line of a message: as plain text and as HTML.
struct Line {
    plain: String,
    html: String,
}

impl Line {
    /// The model's words, escaped in the HTML, `tag` around them there.
    fn of(text: &str, tag: Option<&str>) -> Line {
        let html = match tag {
            Some(tag) => format!("<{tag}>{}</{tag}>", escape(text)),
            None => escape(text),
        };
        Line {
            plain: text.to_owned(),
            html,
        }
    }
}

/// The content of the message of question `question` of `record`, with
/// `said` (an answer given here, or how the question left) under it.
pub(super) fn content(record: &Record, question: usize, said: Option<Said<'_>>) -> Value {
    let questions = &record.request.questions;
    let asked = &questions[question];
    let mut lines = Vec::new();
    let mut head = Vec::new();
    if let Some(header) = &asked.header {
        head.push(Line::of(&words(header, 64), Some("b")));
    }
    if questions.len() > 1 {
        head.push(Line::of(
            &format!("question {} of {}", question + 1, questions.len()),
            None,
        ));
    }
    if !head.is_empty() {
        lines.push(Line {
            plain: head
                .iter()
                .map(|l| l.plain.as_str())
                .collect::<Vec<_>>()
                .join(" · "),
            html: head
                .iter()
                .map(|l| l.html.as_str())
                .collect::<Vec<_>>()
                .join(" · "),
        });
    }
    lines.push(Line::of(&words(&asked.question, 1500), None));
    if let Some(detail) = &asked.detail {
        lines.push(Line::of(&words(detail, 1000), Some("i")));
    }
    for (n, option) in asked.options.iter().flatten().enumerate() {
        let label = words(&option.label, 100);
        let description = option.description.as_deref().map(|d| words(d, 200));
        lines.push(Line {
            plain: match &description {
                Some(d) => format!("{}. {label} — {d}", n + 1),
                None => format!("{}. {label}", n + 1),
            },
            html: match &description {
                Some(d) => format!("{}. <b>{}</b> — {}", n + 1, escape(&label), escape(d)),
                None => format!("{}. <b>{}</b>", n + 1, escape(&label)),
            },
        });
    }
    match said {
        None => lines.push(Line::of(&how(asked), Some("i"))),
        Some(Said::Given { answer, told }) => lines.push(Line {
            plain: format!("Your answer: {} · {told}", words(answer, 500)),
            html: format!(
                "<b>Your answer:</b> {} · {}",
                escape(&words(answer, 500)),
                escape(told)
            ),
        }),
        Some(Said::Left { outcome, answer }) => {
            let answer = answer.map(|a| format!(": {}", words(a, 500)));
            let answer = answer.unwrap_or_default();
            lines.push(Line {
                plain: format!("{}{answer}", words(outcome, 300)),
                html: format!("<b>{}</b>{}", escape(&words(outcome, 300)), escape(&answer)),
            });
        }
    }
    lines.push(Line::of(
        &format!(
            "{} · session {}",
            words(&record.asker(), 200),
            words(&ask_user_seam::text::session(&record.session), 100)
        ),
        Some("i"),
    ));
    json!({
        "msgtype": "m.text",
        "body": lines.iter().map(|l| l.plain.as_str()).collect::<Vec<_>>().join("\n\n"),
        "format": "org.matrix.custom.html",
        "formatted_body": lines.iter().map(|l| l.html.as_str()).collect::<Vec<_>>().join("<br><br>"),
    })
}

/// How a person answers `asked` here.
fn how(asked: &Question) -> String {
    let options = asked.options.as_deref().unwrap_or_default();
    let mut ways = Vec::new();
    match (options.len(), asked.multi_select.unwrap_or(false)) {
        (0, _) => {}
        (_, true) => ways.push("reply with the numbers of your choices (1, 3)".to_owned()),
        (n, false) if n <= REACTIONS => {
            ways.push(format!("react with {}", keycap(0)));
            if n > 1 {
                let last = ways.pop().unwrap_or_default();
                ways.push(format!("{last}–{}", keycap(n - 1)));
            }
            ways.push("reply with its number".to_owned());
        }
        (_, false) => ways.push("reply with its number".to_owned()),
    }
    if asked.own_words().allowed() {
        ways.push(match options.is_empty() {
            true => "reply with your answer".to_owned(),
            false => "reply with your own words".to_owned(),
        });
    }
    if !asked.is_required() {
        ways.push("reply skip".to_owned());
    }
    let mut how = ways.join(", or ");
    if let Some(first) = how.get(..1) {
        how = first.to_uppercase() + &how[1..];
    }
    format!("{how}.")
}

/// An edit of event `event`, its content now `content`.
pub(super) fn edit(event: &str, content: Value) -> Value {
    let star = |text: &Value| format!("* {}", text.as_str().unwrap_or_default());
    json!({
        "msgtype": "m.text",
        "body": star(&content["body"]),
        "format": "org.matrix.custom.html",
        "formatted_body": star(&content["formatted_body"]),
        "m.new_content": content,
        "m.relates_to": {"rel_type": "m.replace", "event_id": event},
    })
}

/// A notice in reply to event `event`: what became of what was sent.
pub(super) fn notice(event: &str, text: &str) -> Value {
    json!({
        "msgtype": "m.notice",
        "body": text,
        "m.relates_to": {"m.in_reply_to": {"event_id": event}},
    })
}

/// The reaction that chooses option `option` (from 0).
fn keycap(option: usize) -> String {
    match option {
        9 => "🔟".to_owned(),
        n => format!("{}\u{fe0f}\u{20e3}", n + 1),
    }
}

/// The option (from 0) reaction `key` chooses, when it is a number's.
pub(super) fn reaction(key: &str) -> Option<usize> {
    if key == "🔟" {
        return Some(9);
    }
    let key: String = key.chars().filter(|&c| c != '\u{fe0f}').collect();
    let mut chars = key.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(digit @ '1'..='9'), Some('\u{20e3}'), None) => Some(digit as usize - '1' as usize),
        _ => None,
    }
}

/// What a reply says.
#[derive(Debug, PartialEq)]
pub(super) enum Reply {
    /// Options, by their numbers (from 0), in order, once each.
    Options(Vec<usize>),
    Skip,
    /// Anything else: the person's own words.
    OwnWords(String),
}

/// A reply's `body` as its sender typed it: the quote of the message it
/// answers (a reply fallback, which older clients send) left out.
pub(super) fn text(body: &str) -> String {
    let mut lines = body.lines().peekable();
    if body.starts_with("> ") {
        while lines.next_if(|line| line.starts_with('>')).is_some() {}
        lines.next_if(|line| line.is_empty());
    }
    lines.collect::<Vec<_>>().join("\n").trim().to_owned()
}

/// Reads a reply's `body` ([`text`]).
pub(super) fn reply(body: &str) -> Reply {
    let text = text(body);
    if text.eq_ignore_ascii_case("skip") {
        return Reply::Skip;
    }
    let numbers: Option<Vec<usize>> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse::<usize>().ok()?.checked_sub(1))
        .collect();
    match numbers {
        Some(mut numbers) if !numbers.is_empty() => {
            numbers.sort_unstable();
            numbers.dedup();
            Reply::Options(numbers)
        }
        _ => Reply::OwnWords(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::{AskRequest, QuestionOption};

    #[test]
    fn a_reply_reads_as_numbers_skip_or_own_words_without_its_quote() {
        assert_eq!(reply("2"), Reply::Options(vec![1]));
        assert_eq!(reply(" 3, 1 3 "), Reply::Options(vec![0, 2]));
        assert_eq!(reply("Skip"), Reply::Skip);
        assert_eq!(reply("0"), Reply::OwnWords("0".into()));
        assert_eq!(reply("2 and docs"), Reply::OwnWords("2 and docs".into()));
        assert_eq!(
            reply("> <@bot:x> Deploy?\n> 1. yes\n\nstaging first"),
            Reply::OwnWords("staging first".into())
        );
        assert_eq!(reply("> <@bot:x> Deploy?\n\n1"), Reply::Options(vec![0]));
    }

    #[test]
    fn a_reaction_chooses_by_its_keycap() {
        assert_eq!(reaction("1\u{fe0f}\u{20e3}"), Some(0));
        assert_eq!(reaction("3\u{20e3}"), Some(2));
        assert_eq!(reaction("🔟"), Some(9));
        for other in ["👍", "0\u{20e3}", "1", "12\u{20e3}", ""] {
            assert_eq!(reaction(other), None, "{other}");
        }
        for option in 0..REACTIONS {
            assert_eq!(reaction(&keycap(option)), Some(option));
        }
    }

    #[test]
    fn the_models_words_are_escaped_in_the_html_and_plain_in_the_body() {
        let mut asked = Question::new("q", "<b>Deploy</b> & go?");
        asked.header = Some("Re<lease".into());
        asked.options = Some(vec![
            QuestionOption::new("<main>"),
            QuestionOption::new("b"),
        ]);
        let record = crate::record_of(AskRequest {
            questions: vec![asked, Question::new("r", "Why?")],
        });
        let content = content(&record, 0, None);
        let html = content["formatted_body"].as_str().unwrap();
        assert!(
            html.starts_with("<b>Re&lt;lease</b> · question 1 of 2"),
            "{html}"
        );
        assert!(
            html.contains("&lt;b&gt;Deploy&lt;/b&gt; &amp; go?"),
            "{html}"
        );
        assert!(html.contains("1. <b>&lt;main&gt;</b>"), "{html}");
        assert!(!html.contains("<main>"), "{html}");
        let body = content["body"].as_str().unwrap();
        assert!(
            body.contains("<b>Deploy</b> & go?\n\n1. <main>\n\n2. b"),
            "{body}"
        );
        assert!(
            body.contains("React with 1\u{fe0f}\u{20e3}–2\u{fe0f}\u{20e3}, or reply with its number, or reply with your own words, or reply skip."),
            "{body}"
        );
        let edited = edit("$e", content.clone());
        assert_eq!(edited["m.relates_to"]["event_id"], "$e");
        assert_eq!(edited["m.new_content"], content);
    }
}
