//! `[inbox.channels.slack]`: every question in a Slack channel, answered
//! there, through a Slack app of the user's in Socket Mode (the inbox
//! opens a WebSocket to Slack; no request URL, no port, no public address).
//!
//! ```toml
//! [inbox.channels.slack]
//! app_token_env = "ASK_USER_SLACK_APP_TOKEN"  # xapp-…, with connections:write
//! bot_token_env = "ASK_USER_SLACK_BOT_TOKEN"  # xoxb-…, with chat:write
//! channel = "C0123456789"                     # where questions are posted
//! allow = ["U0123456789"]                     # who may answer: required
//! # people = { U0123456789 = "alice" }        # a team's inbox: who each is
//! # groups = ["ops"]                          # a team's inbox: the audiences shown
//! # api_url = "https://slack.com/api"         # the default
//! ```
//!
//! One message per question of a batch, in Block Kit: the question (mrkdwn,
//! everything the model wrote escaped and every text `verbatim`, so it
//! mentions nobody and links nowhere; the message's plain `text`, which
//! notifications show, escaped the same), a button per option, or checkboxes and a Send for a
//! multi-select question, "Type your own answer" (a modal) and Skip. A
//! batch is answered once each of its questions is, by the page's rules;
//! every message then says what became of it, wherever that was, and loses
//! its buttons. What someone is told (not allowed, noted, refused) reaches
//! them alone (an ephemeral message).
//!
//! Every envelope of the socket is acknowledged as it comes, before it is
//! handled (Slack wants it within 3 s). Only the people in `allow` (Slack
//! user ids) answer; anyone in the workspace may press a button, so a
//! channel without the list is refused at start-up. In a team's inbox a
//! Slack user answers as the person `people` names, with their token's
//! groups: a question outside their audience is refused to them, saying
//! only that. The tokens reach no log and no process argument.

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
mod blocks;
mod events;
mod run;

use api::{Api, Socket};
use run::Run;

/// Slack's Web API.
const DEFAULT_API: &str = "https://slack.com/api";

pub struct Slack;

/// `[inbox.channels.slack]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    app_token_env: Option<String>,
    app_token_file: Option<PathBuf>,
    bot_token_env: Option<String>,
    bot_token_file: Option<PathBuf>,
    channel: Option<String>,
    allow: Option<Vec<String>>,
    people: Option<BTreeMap<String, String>>,
    groups: Option<Vec<String>>,
    api_url: Option<HttpUrl>,
}

/// The Slack token `what` (`app token`) from `source`, shaped as Slack's
/// (`prefix`, then letters, digits and dashes).
fn token(what: &str, prefix: &str, source: &TokenSource) -> Result<Secret, ChannelError> {
    let token = secret::read(source, &format!("the Slack {what}"))?.0;
    let shaped = token.strip_prefix(prefix).is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    match shaped {
        true => Ok(Secret(token)),
        false => Err(ChannelError::config(format!(
            "the Slack {what} does not look like one (it starts {prefix})"
        ))),
    }
}

/// Where the Slack token `key` is; an error when it is not given.
fn token_source(
    key: &str,
    env: Option<String>,
    file: Option<PathBuf>,
) -> Result<TokenSource, ChannelError> {
    secret::secret_from(key, env, file)?.ok_or_else(|| {
        ChannelError::config(format!(
            "needs the {} from {key}_env = \"VARIABLE\" or {key}_file = \"/path\" (one of them; \
             never inline)",
            key.replace('_', " ")
        ))
    })
}

impl ChannelKind for Slack {
    const NAME: &'static str = "slack";
    const TITLE: &'static str = "Slack";
    type Config = Table;

    fn configure(&self, table: Table) -> Result<Configured, ChannelError> {
        let channel = table
            .channel
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric()))
            .ok_or_else(|| {
                ChannelError::config(
                    "needs channel = \"C…\", the id of the channel the questions are posted in \
                     (its details in Slack show it)",
                )
            })?;
        let allow = table
            .allow
            .filter(|allow| !allow.is_empty())
            .ok_or_else(|| {
                ChannelError::config(
                    "needs allow = [\"U…\", …], the Slack user ids of the people who may answer: \
                 anyone in the workspace can press a button, so nobody answers unless listed",
                )
            })?;
        let app = token_source("app_token", table.app_token_env, table.app_token_file)?;
        let bot = token_source("bot_token", table.bot_token_env, table.bot_token_file)?;
        let HttpUrl(api_url) = table
            .api_url
            .unwrap_or_else(|| HttpUrl(DEFAULT_API.to_owned()));
        let secure = api_url.starts_with("https://");
        Ok(Configured::TwoWay(Arc::new(SlackChannel {
            api_url: api_url.trim_end_matches('/').to_owned(),
            secure,
            app,
            bot,
            channel,
            allow,
            people: table.people.unwrap_or_default(),
            groups: table.groups.unwrap_or_default(),
        })))
    }
}

#[derive(Debug)]
struct SlackChannel {
    /// The Web API's address, and whether it is `https://`.
    api_url: String,
    secure: bool,
    /// The app's token and the bot's, read when the inbox starts.
    app: TokenSource,
    bot: TokenSource,
    channel: String,
    allow: Vec<String>,
    people: BTreeMap<String, String>,
    groups: Vec<String>,
}

impl SlackChannel {
    /// The app's token and the bot's, read now and checked for their shape.
    fn tokens(&self) -> Result<(Secret, Secret), ChannelError> {
        Ok((
            token("app token", "xapp-", &self.app)?,
            token("bot token", "xoxb-", &self.bot)?,
        ))
    }

    /// The Web API, with the tokens read now.
    fn api(&self) -> Result<Api, ChannelError> {
        let (app, bot) = self.tokens()?;
        Ok(Api::new(
            self.api_url.clone(),
            self.secure,
            app,
            bot,
            http::client()?,
        ))
    }
}

impl TwoWay for SlackChannel {
    fn name(&self) -> &'static str {
        Slack::NAME
    }

    fn check(&self) -> Result<(), ChannelError> {
        self.tokens().map(drop)
    }

    fn run(self: Arc<Self>, host: Arc<dyn ChannelHost>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let api = match self.api() {
                Ok(api) => api,
                Err(error) => {
                    return tracing::error!(
                        error = error.report(),
                        "slack: the channel cannot start"
                    );
                }
            };
            let mut events = host.events();
            let kept = Kept::new(Slack::NAME);
            let socket = Socket::new(api.clone());
            let state = kept.load_surely(&*host).await;
            let mut run = Run::new(&self, api, &*host, state, kept);
            driver::serve(&mut run, socket, &mut events).await;
        })
    }
}
