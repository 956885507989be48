//! How a channel words what it shows: the model's words cut to fit
//! ([`words`], [`short`]) and escaped ([`escape`]), an answer
//! ([`answer_line`]), what became of a question ([`outcome_line`]), and
//! whether a phone could open the page ([`opens_elsewhere`]).

use ask_user_inbox::notify::ChannelHost;
use ask_user_inbox::store::Record;
use ask_user_seam::Answer;

/// Where a piece of the model's words cut short goes on.
pub const CONTINUED: &str = "…(continued on the page)";

/// Words from the model, an agent or a person, as a channel shows them:
/// no control characters but newlines ([`ask_user_seam::text::clean`]),
/// cut to `most` characters, saying where the rest is ([`CONTINUED`]).
pub fn words(text: &str, most: usize) -> String {
    cut(&ask_user_seam::text::clean(text, true), most, CONTINUED)
}

/// As [`words`], for a button's label: cut with "…".
pub fn short(text: &str, most: usize) -> String {
    cut(&ask_user_seam::text::clean(text, false), most, "…")
}

fn cut(text: &str, most: usize, tail: &str) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}{tail}", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` with `&`, `<` and `>` escaped: all that Telegram's HTML and
/// Slack's mrkdwn read as markup (a tag, a link, a mention such as
/// `<!channel>`), so that the model's words stay text.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Whether a phone could open the page at `address`: not when it is on
/// this machine's loopback (127.0.0.1, ::1, localhost), where a phone
/// reaches only itself.
pub fn opens_elsewhere(address: &str) -> bool {
    let url = reqwest::Url::parse(address);
    let Some(host) = url.as_ref().ok().and_then(|url| url.host_str()) else {
        return false;
    };
    match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        Ok(ip) => !ip.is_loopback(),
        Err(_) => !host.eq_ignore_ascii_case("localhost"),
    }
}

/// What a notice says in place of a page that opens only on the inbox's
/// machine.
pub const AT_THE_COMPUTER: &str = "Answer at your computer: the inbox's page is on that \
    machine only (`ask-user inbox page` opens it there).";

/// An answer as one line: the labels chosen and the own words, or
/// "skipped".
pub fn answer_line(answer: &Answer) -> String {
    let mut parts: Vec<String> = answer.selected.clone();
    if let Some(custom) = &answer.custom {
        parts.push(format!("“{custom}”"));
    }
    match parts.is_empty() {
        true => "skipped".to_owned(),
        false => parts.join(", "),
    }
}

/// What became of `record`, which left the waiting state, in a line: how,
/// where and by whom ("Answered in Telegram by @ana", "Withdrawn: the
/// call was aborted").
pub fn outcome_line(record: &Record, host: &dyn ChannelHost) -> String {
    ask_user_inbox::notify::outcome_line(record, &|name| host.title(name))
}

/// The answers stored with `record`, when it was answered.
pub fn answers_of(record: &Record) -> Vec<Answer> {
    record
        .outcome
        .as_ref()
        .and_then(|outcome| outcome.get("value")?.get("answers"))
        .and_then(|answers| serde_json::from_value(answers.clone()).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_page_beyond_loopback_opens_on_a_phone() {
        for here in [
            "http://127.0.0.1:8787",
            "http://127.8.0.1/",
            "http://[::1]:8787",
            "http://localhost:8787",
            "http://LocalHost",
            "not a url",
        ] {
            assert!(!opens_elsewhere(here), "{here}");
        }
        for there in [
            "http://192.168.1.20:8787",
            "https://inbox.example.com/team",
            "http://[2001:db8::1]:8787",
        ] {
            assert!(opens_elsewhere(there), "{there}");
        }
    }

    #[test]
    fn an_answer_reads_as_its_labels_and_own_words() {
        let answer = Answer {
            id: "q".into(),
            selected: vec!["Tests".into(), "Docs".into()],
            custom: Some("and the bench".into()),
        };
        assert_eq!(answer_line(&answer), "Tests, Docs, “and the bench”");
        assert_eq!(answer_line(&Answer::skipped("q")), "skipped");
    }
}
