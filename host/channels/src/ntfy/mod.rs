//! ntfy, in two ways.
//!
//! `ntfy = "https://ntfy.sh/your-topic"` (in `[inbox.notify]`) notifies: the
//! question as plain text (no markdown: ntfy reads none unless asked),
//! control characters dropped, with `Title` and `Click` headers; the page's
//! address without any way in. When the question leaves, the notice is
//! updated in place (its sequence is the question's id) to say how.
//!
//! `[inbox.channels.ntfy]` (a table) is two-way: the question with answer
//! buttons. Each button is an `http` action that posts to a reply topic on
//! the same server, which the inbox subscribes to (its JSON stream, a
//! connection the inbox opens):
//!
//! ```toml
//! [inbox.channels.ntfy]
//! topic = "https://ntfy.sh/ask-3k9x…"   # where the questions go (long, random)
//! replies = "ask-3k9x…-replies"         # the reply topic; default: the topic's name and -replies
//! # token_env = "NTFY_TOKEN"            # an access token, for a server that wants one
//! # person = "alice"                    # who answers, in a team's inbox (a person's token name)
//! ```
//!
//! In a team's inbox the topic gets only the questions its `person` may
//! answer (their groups, read as each is posted): none while it names
//! nobody, or a person whose token was revoked.
//!
//! Whoever reads a topic can post to it, so a button's body carries a MAC
//! (HMAC-SHA-256 with a key of this inbox, kept in its store) over the
//! question, which of its questions, and the choice; the inbox takes only
//! bodies it signed, and each question's first. A batch whose every question
//! is a single choice of at most three options gets a notification per
//! question with a button per option (ntfy shows three at most); any other
//! batch (several choices, more options, own words) gets one notification
//! whose button opens the page, as ntfy has no way to type a reply. When a
//! question leaves (answered there or anywhere else, dismissed, withdrawn),
//! its notifications say how, updated in place, their buttons gone: each
//! carries a sequence id, which ntfy 2.16 and later (and its apps) use to
//! replace it; an older server shows the update as a new notification.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use ask_user_inbox::notify::{Channel, ChannelError, ChannelKind, Configured, Note};

use crate::http::{self, HttpUrl};
use crate::secret;
use crate::text;

mod answers;
pub mod phone;
mod stream;

use answers::NtfyAnswers;

pub struct Ntfy;

/// `ntfy = "https://…"` (a topic's URL: it notifies) or
/// `[inbox.channels.ntfy]` (a table: it answers).
#[derive(Deserialize)]
#[serde(try_from = "toml::Value")]
pub enum Config {
    Notify(String),
    Answers(Table),
}

impl TryFrom<toml::Value> for Config {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        if value.is_table() {
            return value
                .try_into()
                .map(Config::Answers)
                .map_err(|e: toml::de::Error| e.message().to_owned());
        }
        HttpUrl::try_from(value)
            .map(|HttpUrl(url)| Config::Notify(url))
            .map_err(|why| {
                format!("{why} (a topic's URL notifies; a table, [inbox.channels.ntfy], answers)")
            })
    }
}

impl ChannelKind for Ntfy {
    const NAME: &'static str = "ntfy";
    const TITLE: &'static str = "ntfy";
    type Config = Config;

    fn configure(&self, config: Config) -> Result<Configured, ChannelError> {
        let table = match config {
            Config::Notify(topic) => {
                return Ok(Configured::Notifies(Arc::new(NtfyChannel { topic })));
            }
            Config::Answers(table) => table,
        };
        let (server, topic) = table
            .topic
            .rsplit_once('/')
            .filter(|(server, topic)| {
                (server.starts_with("https://") || server.starts_with("http://"))
                    && topic_name(topic)
            })
            .ok_or_else(|| {
                ChannelError::config(format!(
                    "topic {:?} is not a topic's URL (https://ntfy.sh/<letters, digits, - and _>)",
                    table.topic
                ))
            })?;
        let replies = table.replies.unwrap_or_else(|| format!("{topic}-replies"));
        if !topic_name(&replies) || replies == topic {
            return Err(ChannelError::config(format!(
                "replies {replies:?} must be another topic's name on the same server (letters, \
                 digits, - and _)"
            )));
        }
        let token = secret::secret_from("token", table.token_env, table.token_file)?;
        Ok(Configured::TwoWay(Arc::new(NtfyAnswers {
            server: server.to_owned(),
            topic: topic.to_owned(),
            replies,
            token,
            person: table.person,
        })))
    }
}

/// How long a publication may take.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// Publishes `message` (JSON naming its topic) on `server`, with `token`
/// when the server wants one.
async fn publish(
    http: &reqwest::Client,
    server: &str,
    token: Option<&str>,
    message: &serde_json::Value,
) -> Result<(), ChannelError> {
    let mut request = http
        .post(format!("{server}/"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(message.to_string())
        .timeout(PUBLISH_TIMEOUT);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    http::sent(request).await
}

/// A topic's name as ntfy takes it.
pub(crate) fn topic_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(Debug)]
struct NtfyChannel {
    topic: String,
}

impl Channel for NtfyChannel {
    fn name(&self) -> &'static str {
        Ntfy::NAME
    }

    fn send(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>> {
        let text = ask_user_seam::text::clean(&note.text, true);
        let request = self.notice(&http, "ask-user: an agent is waiting", "question", &note);
        // A page on this machine's loopback opens nowhere on a phone.
        let request = match text::opens_elsewhere(&note.address) {
            true => request
                .header("Click", &note.address)
                .body(format!("{text}\n{}", note.address)),
            false => request.body(format!("{text}\n{}", text::AT_THE_COMPUTER)),
        };
        Box::pin(http::sent(request))
    }

    fn updates(&self) -> bool {
        true
    }

    /// The notice, updated in place (its sequence: the question's id) to
    /// say how the question ended.
    fn left(
        &self,
        note: Arc<Note>,
        http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>> {
        let request = self
            .notice(
                &http,
                "ask-user: no longer waiting",
                "white_check_mark",
                &note,
            )
            .body(ask_user_seam::text::clean(&note.text, true).into_owned());
        Box::pin(http::sent(request))
    }
}

impl NtfyChannel {
    /// A notice of `note`'s question on the topic, titled and tagged, in
    /// its question's sequence.
    fn notice(
        &self,
        http: &reqwest::Client,
        title: &str,
        tags: &str,
        note: &Note,
    ) -> reqwest::RequestBuilder {
        http.post(&self.topic)
            .header("Title", title)
            .header("Tags", tags)
            .header(SEQUENCE, &note.record.id)
    }
}

/// The header that names a notice's sequence: ntfy (2.16 and later)
/// updates the notice of the same sequence in place.
const SEQUENCE: &str = "X-Sequence-ID";

/// `[inbox.channels.ntfy]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    topic: String,
    replies: Option<String>,
    token_env: Option<String>,
    token_file: Option<std::path::PathBuf>,
    person: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_two_way_and_its_topics_are_checked() {
        let two_way = |text: &str| {
            let config: Config = toml::from_str::<toml::Value>(text)
                .unwrap()
                .try_into()
                .map_err(|e: toml::de::Error| e.message().to_owned())?;
            Ntfy.configure(config).map_err(|e| e.report())
        };
        assert!(matches!(
            two_way("topic = \"https://ntfy.example/ask-x1\"").unwrap(),
            Configured::TwoWay(_)
        ));
        for (table, why) in [
            ("topic = \"ntfy.example/ask\"", "not a topic's URL"),
            ("topic = \"https://ntfy.example/a b\"", "not a topic's URL"),
            (
                "topic = \"https://ntfy.example/ask\"\nreplies = \"ask\"",
                "another topic",
            ),
            (
                "topic = \"https://ntfy.example/ask\"\nreplies = \"x/y\"",
                "another topic",
            ),
            (
                "topic = \"https://ntfy.example/ask\"\nsecret = 1",
                "unknown field",
            ),
        ] {
            let error = two_way(table).err().expect(table);
            assert!(error.contains(why), "{table}: {error}");
        }
    }
}
