//! A question as Block Kit blocks: its text (mrkdwn, the model's words
//! escaped and `verbatim`), its buttons or checkboxes, and the own-words
//! modal, within Block Kit's limits.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use ask_user_inbox::store::Record;

use crate::press::Press;
use crate::text::{escape, short, words};

/// A section's text may have 3000 characters; the model's words are cut
/// within it.
const MAX_SECTION_CHARS: usize = 2900;

/// Block Kit's limits: buttons in one actions block, options in one
/// checkboxes element, characters of a button's text.
const BUTTONS_PER_BLOCK: usize = 25;
pub(super) const OPTIONS_PER_CHECKBOXES: usize = 10;
const BUTTON_CHARS: usize = 75;

/// The own-words modal's `callback_id`.
pub(super) const OWN_WORDS: &str = "ask-user-own-words";

/// The own-words modal's input: its block id and action id.
pub(super) const OWN_WORDS_INPUT: (&str, &str) = ("answer", "text");

/// The modal that takes own words for `press`'s question.
pub(super) fn own_words(record: &Record, press: &Press) -> Value {
    let asked = &record.request.questions[press.question()];
    json!({
        "type": "modal",
        "callback_id": OWN_WORDS,
        "private_metadata": press.data(),
        "title": {"type": "plain_text", "text": "Your answer"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "verbatim": true, "text": escape(&words(&asked.question, 2000))}},
            {"type": "input", "block_id": OWN_WORDS_INPUT.0, "label": {"type": "plain_text", "text": "Your answer"},
             "element": {"type": "plain_text_input", "action_id": OWN_WORDS_INPUT.1, "multiline": true,
                         "max_length": 3000}},
        ],
    })
}

/// A message's plain text, for notifications and screen readers. Slack
/// reads it as mrkdwn too (a `<!channel>` in it would ping everyone, a
/// `<https://…|label>` make a disguised link): escaped like the blocks.
pub(super) fn fallback(record: &Record, question: usize) -> String {
    escape(&words(&record.request.questions[question].question, 300))
}

/// The question's text (mrkdwn): header, question, detail, options as fit.
fn section(record: &Record, question: usize) -> String {
    let questions = &record.request.questions;
    let asked = &questions[question];
    let mut head = Vec::new();
    if let Some(header) = &asked.header {
        head.push(format!("*{}*", escape(&words(header, 64))));
    }
    if questions.len() > 1 {
        head.push(format!("question {} of {}", question + 1, questions.len()));
    }
    let mut parts = Vec::new();
    if !head.is_empty() {
        parts.push(head.join(" · "));
    }
    parts.push(escape(&words(&asked.question, 1500)));
    if let Some(detail) = &asked.detail {
        parts.push(format!("_{}_", escape(&words(detail, 600))));
    }
    let used: usize = parts.iter().map(|p| p.chars().count() + 2).sum();
    let room = MAX_SECTION_CHARS.saturating_sub(used);
    let options = asked.options.as_deref().unwrap_or_default();
    let line = |o: &ask_user_seam::QuestionOption, described: bool| {
        let label = format!("• *{}*", escape(&words(&o.label, 100)));
        match (&o.description, described) {
            (Some(d), true) => format!("{label} — {}", escape(&words(d, 200))),
            _ => label,
        }
    };
    let length = |lines: &[String]| lines.iter().map(|l| l.chars().count() + 1).sum::<usize>();
    let mut lines: Vec<String> = options.iter().map(|o| line(o, true)).collect();
    if length(&lines) > room {
        lines = options.iter().map(|o| line(o, false)).collect();
    }
    let mut dropped = 0;
    while length(&lines) > room.saturating_sub(40) && !lines.is_empty() {
        lines.pop();
        dropped += 1;
    }
    if dropped > 0 {
        lines.push(format!("…and {dropped} more (on the buttons)"));
    }
    if !lines.is_empty() {
        parts.push(lines.join("\n"));
    }
    parts.join("\n\n")
}

/// Who asked, as a context block.
fn context(record: &Record) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "verbatim": true, "text": format!(
        "{} · session {}",
        escape(&words(&record.asker(), 200)),
        escape(&words(&ask_user_seam::text::session(&record.session), 100))
    )}]})
}

/// The blocks of question `question` of `record`, posted under `key`, with
/// `chosen` ticked and `said` under it.
pub(super) fn blocks(
    record: &Record,
    key: u64,
    question: usize,
    chosen: &BTreeSet<usize>,
    said: Option<&str>,
) -> Value {
    let asked = &record.request.questions[question];
    let options = asked.options.as_deref().unwrap_or_default();
    let mut blocks = vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "verbatim": true, "text": section(record, question)}}),
        context(record),
    ];
    let button = |text: String, press: Press| {
        json!({"type": "button", "text": {"type": "plain_text", "text": short(&text, BUTTON_CHARS - 1)},
               "action_id": press.data(), "value": press.data()})
    };
    let mut elements: Vec<Value> = Vec::new();
    if asked.multi_select.unwrap_or(false) {
        for first in (0..options.len()).step_by(OPTIONS_PER_CHECKBOXES) {
            let group: Vec<(usize, Value)> = options
                .iter()
                .enumerate()
                .skip(first)
                .take(OPTIONS_PER_CHECKBOXES)
                .map(|(option, o)| {
                    let value = Press::Toggle { key, question, option }.data();
                    (option, json!({"text": {"type": "plain_text", "text": short(&o.label, BUTTON_CHARS - 1)}, "value": value}))
                })
                .collect();
            let mut element = json!({
                "type": "checkboxes",
                "action_id": Press::Toggle { key, question, option: first }.data(),
                "options": group.iter().map(|(_, o)| o.clone()).collect::<Vec<_>>(),
            });
            let initial: Vec<Value> = group
                .iter()
                .filter(|(option, _)| chosen.contains(option))
                .map(|(_, o)| o.clone())
                .collect();
            if !initial.is_empty() {
                element["initial_options"] = initial.into();
            }
            elements.push(element);
        }
        elements.push(button("Send ✓".into(), Press::Send { key, question }));
    } else {
        elements.extend(options.iter().enumerate().map(|(option, o)| {
            button(
                o.label.clone(),
                Press::Choose {
                    key,
                    question,
                    option,
                },
            )
        }));
    }
    elements.extend(
        Press::closing(record, key, question)
            .into_iter()
            .map(|(label, press)| button(label, press)),
    );
    for (n, chunk) in elements.chunks(BUTTONS_PER_BLOCK).enumerate() {
        blocks.push(json!({"type": "actions", "block_id": format!("b{key}.{question}.{n}"), "elements": chunk}));
    }
    if let Some(said) = said {
        blocks.push(
            json!({"type": "section", "text": {"type": "mrkdwn", "verbatim": true, "text": said}}),
        );
    }
    blocks.into()
}

/// The blocks of a question that left: its text, who asked, and `said`.
pub(super) fn settled(record: &Record, question: usize, said: &str) -> Value {
    json!([
        {"type": "section", "text": {"type": "mrkdwn", "verbatim": true, "text": section(record, question)}},
        context(record),
        {"type": "section", "text": {"type": "mrkdwn", "verbatim": true, "text": said}},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use ask_user_seam::{AskRequest, Question, QuestionOption};

    #[test]
    fn the_blocks_stay_within_block_kits_limits_and_escape_the_models_words() {
        let mut asked = Question::new("q", "<!channel> deploy <https://x|here>?");
        asked.multi_select = Some(true);
        asked.options = Some(
            (0..32)
                .map(|n| {
                    let mut o = QuestionOption::new(format!("{n} {}", "L".repeat(200)));
                    o.description = Some("D".repeat(1000));
                    o
                })
                .collect(),
        );
        let record = crate::record_of(AskRequest {
            questions: vec![asked],
        });
        let blocks = blocks(&record, 7, 0, &BTreeSet::from([3, 31]), None);
        let text = blocks[0]["text"]["text"].as_str().unwrap();
        assert!(
            text.starts_with("&lt;!channel&gt; deploy &lt;https://x|here&gt;?"),
            "{text}"
        );
        assert!(text.chars().count() <= 3000);
        let elements: Vec<&Value> = blocks
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "actions")
            .flat_map(|b| b["elements"].as_array().unwrap())
            .collect();
        let checkboxes: Vec<&&Value> = elements
            .iter()
            .filter(|e| e["type"] == "checkboxes")
            .collect();
        assert_eq!(checkboxes.len(), 4);
        assert!(
            checkboxes
                .iter()
                .all(|c| c["options"].as_array().unwrap().len() <= 10)
        );
        assert_eq!(checkboxes[0]["initial_options"][0]["value"], "t7.0.3");
        assert_eq!(checkboxes[3]["action_id"], "t7.0.30");
        for element in &elements {
            if let Some(text) = element["text"]["text"].as_str() {
                assert!(text.chars().count() <= BUTTON_CHARS, "{text}");
            }
        }
    }
}
