//! What the prompt looks like: lines for the current screen, wrapped to the
//! terminal's width, with colour unless `NO_COLOR` is set.

use crossterm::style::Stylize;
use tui_input::Input;
use unicode_width::UnicodeWidthStr;

use super::prompt::{ADD_NOTE, Prompt, Row, SKIP, Screen, TYPE_OWN};
use ask_user_seam::text::clean;

/// The current screen in three parts, each line already wrapped to the
/// width. When they do not all fit the height ([`Painter::fit`]), the keys
/// stay whole, the rows keep the highlighted one in view, and the question
/// (or the review) scrolls.
pub struct Frame {
    /// The question and its detail, or the review: scrolls, but for its
    /// first `pinned` lines.
    pub top: Vec<String>,
    /// The lines of `top` that never scroll away: who asks, the bar of
    /// questions and "2 of 4".
    pub pinned: usize,
    /// The rows to choose among, or the line being typed.
    pub rows: Vec<String>,
    /// The blank line and the key line: always shown.
    pub keys: Vec<String>,
    /// The line of `rows` that stays in view: the highlighted row's first.
    pub focus: usize,
    /// Where the text cursor belongs while typing: (line of `rows`, column).
    pub caret: Option<(usize, usize)>,
}

/// A frame fitted to the screen: the lines to draw, the caret's (line,
/// column), and the question's scroll offset and page as used.
pub struct Layout {
    pub lines: Vec<String>,
    pub caret: Option<(usize, usize)>,
    pub scroll: usize,
    pub page: usize,
}

/// The most columns a question's header takes in the bar of questions.
const BAR_NAME: usize = 16;

/// Lines of the question a screen too small for everything still shows:
/// three of the question and the line saying how to scroll it.
const KEEP_TOP: usize = 4;

pub struct Painter {
    pub color: bool,
    pub width: usize,
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
        let (mut top, mut rows, mut keys) = (Vec::new(), Vec::new(), vec![String::new()]);
        let (mut focus, mut caret) = (0, None);
        if let Some(chain) = &prompt.asked_by {
            self.wrap(
                &mut top,
                "",
                0,
                &format!("Asked by sub-agent {chain}"),
                bold,
            );
        }
        self.heading(prompt, &mut top);
        let pinned = top.len();
        let key_line = match &prompt.screen {
            Screen::Review => {
                self.review(prompt, &mut top);
                "Enter send · 1-9 change an answer · ⇧Tab/← back · Esc dismiss all".to_owned()
            }
            Screen::Choosing => {
                self.question(prompt, &mut top);
                focus = self.rows(prompt, &mut rows, None).0;
                let toggle = if prompt.question().is_multi_select() {
                    " · Space tick"
                } else {
                    ""
                };
                format!(
                    "↑↓ move · 1-9 pick{toggle} · Enter confirm · Tab/→ next · ⇧Tab/← back · \
                     Esc dismiss all"
                )
            }
            Screen::Typing(input) => {
                self.question(prompt, &mut top);
                if prompt.options() > 0 {
                    // Typed in place of "Type your own answer", among the
                    // options and their ticks.
                    (focus, caret) = self.rows(prompt, &mut rows, Some(input));
                } else {
                    caret = Some(self.typing(input, &mut rows, "› "));
                }
                let back = if prompt.options() > 0 {
                    "⇧Tab back to the options"
                } else {
                    "⇧Tab back"
                };
                let empty = if prompt.drafts[prompt.index].chosen.is_empty() {
                    "empty skips"
                } else {
                    "empty keeps your choice"
                };
                format!(
                    "Type your answer · Enter confirm ({empty}) · Alt+Enter new line · Tab next \
                     · {back} · Esc dismiss all"
                )
            }
        };
        let key_line = match prompt.dismissing {
            true => "Esc again dismisses all the questions · any other key goes on".to_owned(),
            false => key_line,
        };
        // Why an answer was not taken, above the keys until the next key.
        if let Some(problem) = &prompt.problem {
            self.wrap(&mut keys, "", 0, &format!("Not taken: {problem}"), bold);
        }
        // Wrapped here, not by the terminal: every line drawn is one row.
        self.wrap(&mut keys, "", 0, &key_line, dim);
        // Where else it may be answered stays in view with the keys.
        for address in &prompt.also_at {
            self.wrap(&mut keys, "", 0, &format!("Browser: {address}"), dim);
        }
        Frame {
            top,
            pinned,
            rows,
            keys,
            focus,
            caret,
        }
    }

    /// Fits `frame` into `height` rows, the question scrolled by `scroll`
    /// lines (clamped to what there is): when it does not all fit, the keys
    /// stay whole, the question keeps at least its first [`KEEP_TOP`] - 1
    /// lines, and the rows around the highlighted one take the rest.
    pub fn fit(&self, frame: &Frame, height: usize, scroll: usize) -> Layout {
        let height = height.max(3);
        let (top, rows) = (&frame.top, &frame.rows);
        let whole = top.len() + rows.len() + frame.keys.len();
        if whole <= height {
            let lines: Vec<String> = top.iter().chain(rows).chain(&frame.keys).cloned().collect();
            return Layout {
                caret: frame.caret.map(|(line, column)| (top.len() + line, column)),
                lines,
                scroll: 0,
                page: height,
            };
        }
        // Short of room: no blank line above the keys; the keys whole (but
        // one row for the rest); the rows around the highlighted one; the
        // question in what is left, with a line saying how to scroll it.
        let keys: Vec<String> = frame
            .keys
            .iter()
            .filter(|k| !k.is_empty())
            .cloned()
            .collect();
        let keys_shown = keys.len().min(height - 1);
        // The question keeps its first lines (and the line saying how to
        // scroll it) however many rows there are; the rows keep one.
        let room = height - keys_shown;
        let keep_top = top
            .len()
            .min(frame.pinned + KEEP_TOP)
            .min(room.saturating_sub(1));
        let rows_room = rows
            .len()
            .min(room - keep_top)
            .max(usize::from(!rows.is_empty()));
        let focus = frame.caret.map_or(frame.focus, |(line, _)| line);
        let first_row = focus
            .saturating_sub(rows_room / 2)
            .min(rows.len().saturating_sub(rows_room));
        let top_room = height.saturating_sub(keys_shown + rows_room);
        let mut lines = Vec::new();
        let (asked, mut scroll, mut page) = (scroll, 0, 1);
        if top.len() <= top_room {
            lines.extend(top.iter().cloned());
        } else if top_room > 0 {
            // The pinned lines stay while one line of the rest and the
            // note fit beside them.
            let pin = frame.pinned.min(top_room.saturating_sub(2));
            lines.extend(top[..pin].iter().cloned());
            let (rest, room) = (&top[pin..], top_room - pin);
            page = (room - 1).max(1);
            let shown = room - 1;
            scroll = asked.min(rest.len() - shown);
            lines.extend(rest[scroll..scroll + shown].iter().cloned());
            let note = format!(
                "⋯ lines {}–{} of {} · PgUp/PgDn scroll",
                scroll + 1,
                scroll + shown,
                rest.len()
            );
            lines.push(self.paint(&cut(&note, self.width), dim));
        }
        let rows_at = lines.len();
        lines.extend(rows[first_row..first_row + rows_room].iter().cloned());
        lines.extend(keys[keys.len() - keys_shown..].iter().cloned());
        Layout {
            caret: frame
                .caret
                .filter(|(line, _)| (first_row..first_row + rows_room).contains(line))
                .map(|(line, column)| (rows_at + line - first_row, column)),
            lines,
            scroll,
            page,
        }
    }

    /// The bar of all questions: each one's header (or number) with its
    /// state, ✓ answered, – skipped, · not yet; the current one in brackets.
    fn bar(&self, prompt: &Prompt, out: &mut Vec<String>) {
        let mut items: Vec<String> = prompt
            .questions
            .iter()
            .zip(&prompt.drafts)
            .enumerate()
            .map(|(n, (q, draft))| {
                // A long header is cut, so the bar stays one line as long
                // as it can.
                let name = match &q.header {
                    Some(header) if header.width() > BAR_NAME => {
                        format!("{}…", cut(header, BAR_NAME - 1))
                    }
                    Some(header) => header.clone(),
                    None => format!("Q{}", n + 1),
                };
                let state = match (
                    draft.done,
                    draft.chosen.is_empty() && draft.custom.is_none(),
                ) {
                    (false, _) => "·",
                    (true, true) => "–",
                    (true, false) => "✓",
                };
                if n == prompt.index && !matches!(prompt.screen, Screen::Review) {
                    format!("[{name} {state}]")
                } else {
                    format!(" {name} {state} ")
                }
            })
            .collect();
        let review = if matches!(prompt.screen, Screen::Review) {
            "[Review]"
        } else {
            " Review "
        };
        items.push(review.to_owned());
        let bar = items.join("│");
        if !self.color || bar.width() > self.width {
            self.wrap(out, "", 0, &bar, header_style);
            return;
        }
        // One line: the current item stands out by more than its brackets.
        let current = match prompt.screen {
            Screen::Review => items.len() - 1,
            _ => prompt.index,
        };
        let painted: Vec<String> = items
            .iter()
            .enumerate()
            .map(|(n, item)| match n == current {
                true => self.paint(item, selected),
                false => self.paint(item, header_style),
            })
            .collect();
        out.push(painted.join("│"));
    }

    /// What stays above the question or review however far it scrolls: the
    /// bar of questions and where this one is in it ("2 of 4").
    fn heading(&self, prompt: &Prompt, out: &mut Vec<String>) {
        if prompt.questions.len() < 2 {
            return;
        }
        self.bar(prompt, out);
        if !matches!(prompt.screen, Screen::Review) {
            out.push(self.paint(
                &format!("{} of {}", prompt.index + 1, prompt.questions.len()),
                dim,
            ));
        }
    }

    fn question(&self, prompt: &Prompt, out: &mut Vec<String>) {
        let q = prompt.question();
        if prompt.questions.len() < 2
            && let Some(header) = &q.header
        {
            out.push(self.paint(&format!("[{header}]"), header_style));
        }
        self.wrap(out, "", 0, &q.question, bold);
        if let Some(detail) = &q.detail {
            for paragraph in detail.lines() {
                self.wrap(out, "  ", 2, paragraph, plain);
            }
        }
        out.push(String::new());
    }

    /// The words being typed, after `lead`, pushed onto `out`: wrapped to
    /// the width and as many lines as they take (a new line in them starts
    /// one); where the caret goes (line of `out`, column).
    fn typing(&self, input: &Input, out: &mut Vec<String>, lead: &str) -> (usize, usize) {
        let room = self.width.saturating_sub(lead.width() + 1).max(10);
        let cursor = input.cursor();
        let (mut lines, mut column) = (vec![String::new()], 0);
        let mut caret = None;
        for (n, c) in input.value().chars().enumerate() {
            if n == cursor {
                caret = Some((lines.len() - 1, column));
            }
            if c == '\n' {
                lines.push(String::new());
                column = 0;
                continue;
            }
            // One shown character for each typed one, so the caret's place
            // holds: what the terminal would act on shows as �.
            let shown = clean(c.encode_utf8(&mut [0; 4]), false)
                .chars()
                .next()
                .unwrap_or('\u{fffd}');
            let w = unicode_width::UnicodeWidthChar::width(shown).unwrap_or(0);
            if column + w > room {
                lines.push(String::new());
                column = 0;
            }
            lines.last_mut().expect("one line at least").push(shown);
            column += w;
        }
        let caret = caret.unwrap_or_else(|| match column >= room {
            // At the very end of a full line: the caret starts the next.
            true => {
                lines.push(String::new());
                (lines.len() - 1, 0)
            }
            false => (lines.len() - 1, column),
        });
        let first = out.len();
        let indent = " ".repeat(lead.width());
        for (n, line) in lines.iter().enumerate() {
            out.push(format!("{}{line}", if n == 0 { lead } else { &indent }));
        }
        (first + caret.0, lead.width() + caret.1)
    }

    /// Draws the rows, with `typing` in place of "Type your own answer";
    /// returns the line where the highlighted row starts, and the caret.
    fn rows(
        &self,
        prompt: &Prompt,
        out: &mut Vec<String>,
        typing: Option<&Input>,
    ) -> (usize, Option<(usize, usize)>) {
        let (mut focus, mut caret) = (0, None);
        let q = prompt.question();
        let draft = &prompt.drafts[prompt.index];
        let multi = q.is_multi_select();
        let recommended = q.recommended().map(|o| o.label.as_str());
        let options = q.options.as_deref().unwrap_or_default();
        for row in 0..prompt.rows() {
            let pointer = if row == draft.cursor { "›" } else { " " };
            let (label, description) = match prompt.row(row) {
                Row::Option(n) => (options[n].label.clone(), options[n].description.as_deref()),
                Row::OwnWords => {
                    let own = if q.takes_a_note() { ADD_NOTE } else { TYPE_OWN };
                    match &draft.custom {
                        Some(text) => (format!("{own}: {text}"), None),
                        None => (own.to_owned(), None),
                    }
                }
                Row::Skip => (SKIP.to_owned(), None),
            };
            let tick = match (multi, row < options.len()) {
                (true, true) if draft.chosen.contains(&row) => "[x] ",
                (true, true) => "[ ] ",
                _ => "",
            };
            let mut mark = if recommended == Some(label.as_str()) {
                " ★"
            } else {
                ""
            }
            .to_owned();
            // Coming back to an answered question shows what was chosen.
            if !multi && draft.chosen.contains(&row) {
                mark.push_str(" ✓ chosen");
            }
            // Only a digit reaches a row, so rows past 9 have no number.
            let lead = match row {
                0..9 => format!("{pointer} {}. {tick}", row + 1),
                _ => format!("{pointer}    {tick}"),
            };
            if row == draft.cursor {
                focus = out.len();
            }
            if let Some(input) = typing.filter(|_| row == options.len()) {
                let at = self.typing(input, out, &format!("{lead}› "));
                (focus, caret) = (at.0, Some(at));
                continue;
            }
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
        (focus, caret)
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
    }
}

/// `text` cut to `width` columns.
fn cut(text: &str, width: usize) -> String {
    skip_columns(text, 0, width)
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
// Styles use the terminal's own colours (bold, underline, reverse), never
// a fixed one: bright cyan or green is unreadable on a light theme.
fn selected(text: &str) -> String {
    text.bold().reverse().to_string()
}
fn header_style(text: &str) -> String {
    text.bold().underlined().to_string()
}
fn answer_style(text: &str) -> String {
    text.bold().to_string()
}

#[cfg(test)]
mod tests;
