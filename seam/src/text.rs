//! Text from a model, an agent or a file, made safe for where it goes: a
//! terminal ([`clean`]), a Slack message ([`slack`]), a desktop
//! notification's markup ([`markup`]), one line of a name ([`name_line`]).
//! Whatever it says, it stays text:
//! it never moves a cursor, sets a clipboard, mentions a channel or turns
//! into a link. And a folder and a session's id as a person reads them
//! ([`folder`], [`session`]).

use std::borrow::Cow;
use std::path::Path;

/// `path` as a person reads it: under the home folder, `~/…` (the home
/// folder itself `~`); elsewhere as it is.
pub fn folder(path: &Path) -> String {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home
        .as_deref()
        .and_then(|home| path.strip_prefix(home).ok())
    {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => path.display().to_string(),
    }
}

/// A session's id as a heading shows it: whole when short (`s1`,
/// `deploy`), else its last 8 characters after "…", which tell one run
/// from another (`claude-code-0b9d…6e21` is `…8a7b6e21`: the client is
/// named beside it already). Where the id itself is wanted (`inbox list
/// --json`, a page's tooltip), it is given whole.
pub fn session(id: &str) -> String {
    const WHOLE: usize = 16;
    let chars: Vec<char> = id.chars().collect();
    match chars.len() {
        n if n <= WHOLE => id.to_owned(),
        n => format!("…{}", chars[n - 8..].iter().collect::<String>()),
    }
}

/// `text` made safe to write to a terminal: the model's words (and pasted
/// ones) must not move the cursor, rewrite what the human reads, retitle the
/// window or set the clipboard. Every C0 and C1 control character (ESC, BEL,
/// CSI…), DEL, and the bidirectional overrides that reorder what is shown
/// are dropped; a tab becomes a space; a newline stays only where
/// `newlines` says it is layout, and is a space otherwise (a carriage
/// return, which would let a line overwrite itself, always goes).
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

/// `text` as one line of a name (a client's, a sub-agent's, which a
/// program or a model chose): every control character and bidirectional
/// override a space, at most `most` characters, trimmed; `None` when
/// nothing printable is left.
pub fn name_line(text: &str, most: usize) -> Option<String> {
    let line: String = text
        .chars()
        .map(|c| match c.is_control() || is_bidi_control(c) {
            true => ' ',
            false => c,
        })
        .take(most)
        .collect();
    let line = line.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// U+202A–U+202E and U+2066–U+2069: embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` as Slack mrkdwn shows it literally: `&`, `<` and `>` escaped, so
/// `<!channel>` mentions nobody and `<https://…|Open>` is no disguised link
/// (Slack's own rule for text in messages); control characters dropped.
pub fn slack(text: &str) -> String {
    escape(
        &clean(text, true),
        &[('&', "&amp;"), ('<', "&lt;"), ('>', "&gt;")],
    )
}

/// `text` for the body of a desktop notification, whose servers may read
/// a subset of markup (`<b>`, `<a href>`): shown as written, never as
/// markup.
pub fn markup(text: &str) -> String {
    escape(
        &clean(text, true),
        &[
            ('&', "&amp;"),
            ('<', "&lt;"),
            ('>', "&gt;"),
            ('"', "&quot;"),
            ('\'', "&#39;"),
        ],
    )
}

fn escape(text: &str, table: &[(char, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match table.iter().find(|(from, _)| *from == c) {
            Some((_, to)) => out.push_str(to),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_one_printable_line_that_reorders_nothing() {
        assert_eq!(
            name_line("evil\u{1b}[2Jname\n", 60).as_deref(),
            Some("evil [2Jname")
        );
        assert_eq!(
            name_line("a\u{202E}gpj.exe", 60).as_deref(),
            Some("a gpj.exe")
        );
        assert_eq!(name_line("ééé", 2).as_deref(), Some("éé"));
        assert_eq!(name_line("\n\t\u{2066}", 60), None);
    }

    #[test]
    fn a_long_session_id_is_shown_by_its_end() {
        assert_eq!(session("s1"), "s1");
        assert_eq!(session("sixteen-chars-id"), "sixteen-chars-id");
        assert_eq!(
            session("claude-code-0b9d3c6e-2f41-4a7e-9d55-1f0c8a7b6e21"),
            "…8a7b6e21"
        );
        assert_eq!(
            session("ééééééééééééééééé"),
            "…éééééééé",
            "characters, not bytes"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let hostile = "a\u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}b\u{9b}31mc\u{7f}\u{202e}d\te\rf";
        assert_eq!(clean(hostile, false), "a[2J]52;c;cHduZWQ=b31mcd ef");
        assert_eq!(clean("one\ntwo", true), "one\ntwo");
        assert_eq!(clean("one\ntwo", false), "one two");
        assert!(matches!(clean("plain ✓ 文字", false), Cow::Borrowed(_)));
    }

    #[test]
    fn slack_shows_mentions_and_links_as_text() {
        assert_eq!(
            slack("<!channel> see <https://evil|Open the inbox> & more\u{1b}[2J"),
            "&lt;!channel&gt; see &lt;https://evil|Open the inbox&gt; &amp; more[2J"
        );
    }

    #[test]
    fn desktop_markup_is_shown_as_written() {
        assert_eq!(
            markup("<a href=\"x\">Open</a> & 'it'"),
            "&lt;a href=&quot;x&quot;&gt;Open&lt;/a&gt; &amp; &#39;it&#39;"
        );
    }
}
