//! What the prompt looks like: lines for the current screen, wrapped to the
//! terminal's width, with colour unless `NO_COLOR` is set.

use std::borrow::Cow;

use crossterm::style::Stylize;
use unicode_width::UnicodeWidthStr;

use super::prompt::{Prompt, SKIP, Screen, TYPE_OWN};

/// The lines of the current screen, and where the text cursor belongs (row,
/// column) when the human is typing.
pub struct Frame {
    pub lines: Vec<String>,
    pub caret: Option<(usize, usize)>,
}

pub struct Painter {
    pub color: bool,
    pub width: usize,
}

/// `text` made safe to write to a terminal: the model's words (and pasted
/// ones) must not move the cursor, rewrite what the human reads, retitle the
/// window or set the clipboard. Every C0 and C1 control character (ESC, BEL,
/// CSI…), DEL, and the bidirectional overrides that reorder what is shown
/// are dropped; a tab becomes a space; a newline stays only where
/// `newlines` says it is layout, and is a space otherwise.
pub fn clean(text: &str, newlines: bool) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || is_bidi_control(c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .filter_map(|c| match c {
                '\n' if newlines => Some('\n'),
                '\n' | '\t' => Some(' '),
                c if unsafe_char(c) => None,
                c => Some(c),
            })
            .collect(),
    )
}

/// U+202A–U+202E and U+2066–U+2069: embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl Painter {
    /// One line of `text`, cleaned, in `style` when colour is on.
    fn paint(&self, text: &str, style: fn(&str) -> String) -> String {
        let text = clean(text, false);
        if self.color {
            style(&text)
        } else {
            text.into_owned()
        }
    }

    /// `text` wrapped to the width, the first line after `first`, the rest
    /// indented by `indent` columns.
    fn wrap(
        &self,
        out: &mut Vec<String>,
        first: &str,
        indent: usize,
        text: &str,
        style: fn(&str) -> String,
    ) {
        let room = self.width.saturating_sub(indent).max(20);
        let text = clean(text, true);
        for (n, line) in textwrap::wrap(&text, room).iter().enumerate() {
            let lead = if n == 0 {
                first.to_owned()
            } else {
                " ".repeat(indent)
            };
            out.push(format!("{lead}{}", self.paint(line, style)));
        }
        if text.is_empty() {
            out.push(first.to_owned());
        }
    }

    pub fn frame(&self, prompt: &Prompt) -> Frame {
        let mut lines = Vec::new();
        let caret = match &prompt.screen {
            Screen::Review => {
                self.review(prompt, &mut lines);
                None
            }
            Screen::Choosing => {
                self.question(prompt, &mut lines);
                self.rows(prompt, &mut lines);
                lines.push(String::new());
                let toggle = if prompt.question().is_multi_select() {
                    " · Space tick"
                } else {
                    ""
                };
                lines.push(self.paint(
                    &format!(
                        "↑↓ move · 1-9 pick{toggle} · Enter confirm · ← back · Esc dismiss all"
                    ),
                    dim,
                ));
                None
            }
            Screen::Typing(input) => {
                self.question(prompt, &mut lines);
                let prefix = "› ";
                let room = self.width.saturating_sub(prefix.len() + 1).max(10);
                let scroll = input.visual_scroll(room);
                let shown = skip_columns(&clean(input.value(), false), scroll, room);
                let row = lines.len();
                lines.push(format!("{prefix}{shown}"));
                lines.push(String::new());
                let back = if prompt.options() > 0 {
                    "Esc back to the options"
                } else {
                    "Esc dismiss all"
                };
                lines.push(self.paint(
                    &format!("Type your answer · Enter confirm (empty skips) · {back}"),
                    dim,
                ));
                Some((
                    row,
                    prefix.width() + input.visual_cursor().saturating_sub(scroll),
                ))
            }
        };
        Frame { lines, caret }
    }

    fn question(&self, prompt: &Prompt, out: &mut Vec<String>) {
        let q = prompt.question();
        let mut tag = Vec::new();
        if let Some(header) = &q.header {
            tag.push(self.paint(&format!("[{header}]"), header_style));
        }
        if prompt.questions.len() > 1 {
            tag.push(self.paint(
                &format!("{} of {}", prompt.index + 1, prompt.questions.len()),
                dim,
            ));
        }
        if !tag.is_empty() {
            out.push(tag.join(" "));
        }
        self.wrap(out, "", 0, &q.question, bold);
        if let Some(detail) = &q.detail {
            for paragraph in detail.lines() {
                self.wrap(out, "  ", 2, paragraph, plain);
            }
        }
        out.push(String::new());
    }

    fn rows(&self, prompt: &Prompt, out: &mut Vec<String>) {
        let q = prompt.question();
        let draft = &prompt.drafts[prompt.index];
        let multi = q.is_multi_select();
        let recommended = q.recommended().map(|o| o.label.as_str());
        let options = q.options.as_deref().unwrap_or_default();
        for row in 0..prompt.rows() {
            let pointer = if row == draft.cursor { "›" } else { " " };
            let (label, description) = match options.get(row) {
                Some(option) => (option.label.clone(), option.description.as_deref()),
                None if row == options.len() => match &draft.custom {
                    Some(text) => (format!("{TYPE_OWN}: {text}"), None),
                    None => (TYPE_OWN.to_owned(), None),
                },
                None => (SKIP.to_owned(), None),
            };
            let tick = match (multi, row < options.len()) {
                (true, true) if draft.chosen.contains(&row) => "[x] ",
                (true, true) => "[ ] ",
                _ => "",
            };
            let mark = if recommended == Some(label.as_str()) {
                " ★"
            } else {
                ""
            };
            let lead = format!("{pointer} {}. {tick}", row + 1);
            let style: fn(&str) -> String = if row == draft.cursor { selected } else { plain };
            self.wrap(out, &lead, lead.width(), &format!("{label}{mark}"), style);
            if let Some(description) = description {
                self.wrap(
                    out,
                    &" ".repeat(lead.width()),
                    lead.width(),
                    description,
                    dim,
                );
            }
        }
    }

    fn review(&self, prompt: &Prompt, out: &mut Vec<String>) {
        out.push(self.paint("Review your answers", bold));
        out.push(String::new());
        for (n, (q, answer)) in prompt.questions.iter().zip(prompt.answers()).enumerate() {
            let tag = q
                .header
                .as_deref()
                .map(|h| format!("[{h}] "))
                .unwrap_or_default();
            let lead = format!("{}. ", n + 1);
            self.wrap(
                out,
                &lead,
                lead.width(),
                &format!("{tag}{}", q.question),
                plain,
            );
            let mut parts = answer.selected.clone();
            if let Some(custom) = &answer.custom {
                parts.push(format!("“{custom}”"));
            }
            let shown = if parts.is_empty() {
                "(skipped)".to_owned()
            } else {
                parts.join(", ")
            };
            self.wrap(
                out,
                &format!("{}→ ", " ".repeat(lead.width())),
                lead.width() + 2,
                &shown,
                answer_style,
            );
        }
        out.push(String::new());
        out.push(self.paint(
            "Enter send · 1-9 change an answer · ← back · Esc dismiss all",
            dim,
        ));
    }
}

/// The part of `text` after its first `skip` columns that fits in `room`.
fn skip_columns(text: &str, skip: usize, room: usize) -> String {
    let (mut column, mut out) = (0, String::new());
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if column >= skip && column + w <= skip + room {
            out.push(c);
        }
        column += w;
    }
    out
}

fn plain(text: &str) -> String {
    text.to_owned()
}
fn bold(text: &str) -> String {
    text.bold().to_string()
}
fn dim(text: &str) -> String {
    text.dim().to_string()
}
fn selected(text: &str) -> String {
    text.bold().cyan().to_string()
}
fn header_style(text: &str) -> String {
    text.bold().magenta().to_string()
}
fn answer_style(text: &str) -> String {
    text.green().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::question::{Question, QuestionOption};

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let hostile = "a\u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}b\u{9b}31mc\u{7f}\u{202e}d\te";
        assert_eq!(clean(hostile, false), "a[2J]52;c;cHduZWQ=b31mcd e");
        assert_eq!(clean("one\ntwo", true), "one\ntwo");
        assert_eq!(clean("one\ntwo", false), "one two");
        assert!(matches!(clean("plain ✓ 文字", false), Cow::Borrowed(_)));
    }

    #[test]
    fn nothing_the_model_wrote_draws_an_escape() {
        let evil = "\u{1b}[1A\u{1b}[2KApproved\u{1b}]52;c;ZXZpbA==\u{7}";
        let mut q = Question::new("q", format!("Deploy?{evil}"));
        q.header = Some(format!("H{evil}"));
        let mut option = QuestionOption::new(format!("Yes{evil}"));
        option.description = Some(format!("Ships it{evil}"));
        q.options = Some(vec![option]);
        let questions = [q];
        let prompt = super::super::prompt::Prompt::new(&questions);
        let painter = Painter {
            color: false,
            width: 79,
        };
        let frame = painter.frame(&prompt);
        let text = frame.lines.join("\n");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(
            text.contains("Deploy?[1A[2KApproved]52;c;ZXZpbA=="),
            "{text}"
        );
    }
}
