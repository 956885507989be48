//! `[inbox.channels.telegram]`: every question in a Telegram chat, answered
//! there, through a bot of the user's, over the Bot API's long polling
//! (`getUpdates`: the inbox opens the connection; no webhook, no port, no
//! public address).
//!
//! ```toml
//! [inbox.channels.telegram]
//! token_env = "ASK_USER_TELEGRAM_TOKEN"  # or token_file = "/abs/path" (mode 0600)
//! chat = 123456789                       # where questions are posted
//! allow = [123456789]                    # who may answer: required
//! api_url = "https://api.telegram.org"   # the default
//! ```
//!
//! One message per question of a batch: its header, question, detail and
//! options (HTML, everything the model wrote escaped), with a keyboard: a
//! button per option; for a multi-select question, buttons that toggle a ✓
//! and a Send; "Type your own answer" (the reply to the bot's prompt is the
//! own words); Skip. A batch is answered once each of its questions is, by
//! the page's rules; every message then says what became of it, wherever it
//! was answered, dismissed, withdrawn or expired, and loses its keyboard.
//!
//! A button carries an opaque key the inbox maps (`c12.0.3`: choose option
//! 3 of question 0 of the batch posted under key 12), never an answer: a
//! client can send any data for a button, so every press is checked (the
//! person allowed, the chat, the message, the option). Only the people in
//! `allow` (Telegram user ids) answer; anyone can message a bot, so a
//! channel without the list is refused at start-up. The token reaches no
//! log, no error and no process argument (the Bot API wants it in the
//! address it is called at; that address is never shown).
//!
//! The update offset, the questions posted and the answers given so far
//! are kept in `telegram.json` in the state directory and written before
//! the next updates are asked for: a restart neither loses an answer nor
//! takes one twice (an update taken again settles nothing twice: the first
//! answer wins).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use ask_user_inbox::kind::TokenSource;
use ask_user_inbox::notify::{ChannelError, ChannelHost, ChannelKind, Configured, TwoWay};
use ask_user_inbox::store::BoxFuture;

use crate::driver;
use crate::http::{self, HttpUrl};
use crate::kept::Kept;
use crate::secret::{self, Secret};

mod api;
pub mod phone;
mod run;

use api::{Api, Poller};
use run::{Run, State};

/// The Bot API's own address.
const DEFAULT_API: &str = "https://api.telegram.org";

pub struct Telegram;

/// `[inbox.channels.telegram]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    chat: Option<i64>,
    allow: Option<Vec<i64>>,
    api_url: Option<HttpUrl>,
    people: Option<BTreeMap<String, String>>,
    groups: Option<Vec<String>>,
}

impl ChannelKind for Telegram {
    const NAME: &'static str = "telegram";
    const TITLE: &'static str = "Telegram";
    type Config = Table;

    fn configure(&self, table: Table) -> Result<Configured, ChannelError> {
        let chat = table.chat.ok_or_else(|| {
            ChannelError::config(
                "needs chat = <the chat's id>, where the questions are posted (message the bot, \
                 then open getUpdates as the docs say to read it)",
            )
        })?;
        let allow = table
            .allow
            .filter(|allow| !allow.is_empty())
            .ok_or_else(|| {
                ChannelError::config(
                    "needs allow = [<Telegram user id>, …], the people who may answer: anyone can \
                 message a bot, so nobody answers unless listed",
                )
            })?;
        let token =
            secret::secret_from("token", table.token_env, table.token_file)?.ok_or_else(|| {
                ChannelError::config(
                    "needs the bot's token from token_env = \"VARIABLE\" or token_file = \
                     \"/path\" (one of them; never inline)",
                )
            })?;
        let HttpUrl(api_url) = table
            .api_url
            .unwrap_or_else(|| HttpUrl(DEFAULT_API.to_owned()));
        let people = table
            .people
            .unwrap_or_default()
            .into_iter()
            .map(|(id, name)| match id.parse::<i64>() {
                Ok(id) => Ok((id, name)),
                Err(_) => Err(ChannelError::config(format!(
                    "people: {id:?} is not a Telegram user id (a number, quoted: \"123456789\" = \"ana\")"
                ))),
            })
            .collect::<Result<_, _>>()?;
        Ok(Configured::TwoWay(Arc::new(TelegramChannel {
            people,
            groups: table.groups.unwrap_or_default(),
            token,
            api_url: api_url.trim_end_matches('/').to_owned(),
            chat,
            allow,
        })))
    }
}

/// Whether `token` has a bot token's shape: nothing in it can change the
/// address it is put in.
fn bot_token(token: &str) -> bool {
    token.split_once(':').is_some_and(|(bot, secret)| {
        !bot.is_empty()
            && bot.bytes().all(|b| b.is_ascii_digit())
            && !secret.is_empty()
            && secret
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

#[derive(Debug)]
struct TelegramChannel {
    /// The bot's token, read when the inbox starts.
    token: TokenSource,
    /// The Bot API's address.
    api_url: String,
    chat: i64,
    allow: Vec<i64>,
    /// In a team's inbox, who each Telegram user is: a person's name (their
    /// token's).
    people: BTreeMap<i64, String>,
    /// In a team's inbox, the audiences whose questions the chat shows (no
    /// audience: those for anyone).
    groups: Vec<String>,
}

impl TelegramChannel {
    /// The bot's token, read now and checked for its shape.
    fn token(&self) -> Result<Secret, ChannelError> {
        let token = secret::read(&self.token, "the Telegram bot token")?;
        match bot_token(&token.0) {
            true => Ok(token),
            false => Err(ChannelError::config(
                "the Telegram bot token does not look like one (digits, a colon, then letters, \
                 digits, - and _), as @BotFather gives it",
            )),
        }
    }

    /// The Bot API, with the bot's token read now.
    fn api(&self) -> Result<Api, ChannelError> {
        let token = self.token()?;
        let base = Secret(format!("{}/bot{}", self.api_url, token.0));
        Ok(Api::new(base, http::client()?))
    }
}

impl TwoWay for TelegramChannel {
    fn name(&self) -> &'static str {
        Telegram::NAME
    }

    fn check(&self) -> Result<(), ChannelError> {
        self.token().map(drop)
    }

    fn run(self: Arc<Self>, host: Arc<dyn ChannelHost>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let api = match self.api() {
                Ok(api) => api,
                Err(error) => {
                    return tracing::error!(
                        error = error.report(),
                        "telegram: the channel cannot start"
                    );
                }
            };
            let mut events = host.events();
            let kept = Kept::new(Telegram::NAME);
            let state: State = kept.load_surely(&*host).await;
            let poller = Poller {
                api: api.clone(),
                offset: state.offset,
            };
            let mut run = Run::new(&self, api, &*host, state, kept);
            driver::serve(&mut run, poller, &mut events).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_a_bot_tokens_shape_or_refused() {
        assert!(bot_token("123456:ABC-def_789"));
        for bad in [
            "", "123456", ":abc", "12a:abc", "1:a/b", "1:a?b", "1:a b", "1:",
        ] {
            assert!(!bot_token(bad), "{bad}");
        }
    }
}
