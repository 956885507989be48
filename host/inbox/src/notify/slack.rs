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

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as Frame;

use ask_user_seam::Answer;

use super::chat::{self, Posted, Said};
use super::two_way::{
    self, Desk, Failure, Given, Kept, Press, Secret, TwoWay, escape, short, words,
};
use super::{ChannelKind, Configured};
use crate::answerer::TokenSource;
use crate::store::{BoxFuture, Person, Record};

/// Slack's Web API.
const DEFAULT_API: &str = "https://slack.com/api";

/// How long a Web API call may take, how many times a 429 is waited out,
/// and the longest `Retry-After` obeyed.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
const RETRIES: usize = 5;
const MOST_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How long the socket may stay silent (Slack pings it) before it is taken
/// for dead and opened again.
const SILENCE: Duration = Duration::from_secs(120);

/// A section's text may have 3000 characters; the model's words are cut
/// within it.
const MAX_SECTION_CHARS: usize = 2900;

/// Block Kit's limits: buttons in one actions block, options in one
/// checkboxes element, characters of a button's text.
const BUTTONS_PER_BLOCK: usize = 25;
const OPTIONS_PER_CHECKBOXES: usize = 10;
const BUTTON_CHARS: usize = 75;

pub(super) struct Slack;

/// `[inbox.channels.slack]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    app_token_env: Option<String>,
    app_token_file: Option<PathBuf>,
    bot_token_env: Option<String>,
    bot_token_file: Option<PathBuf>,
    channel: Option<String>,
    allow: Option<Vec<String>>,
    people: Option<BTreeMap<String, String>>,
    groups: Option<Vec<String>>,
    api_url: Option<String>,
}

/// The Slack token `what` (`app token`) from `source`, shaped as Slack's
/// (`prefix`, then letters, digits and dashes).
fn token(what: &str, prefix: &str, source: &TokenSource) -> Result<Secret, String> {
    let token = source
        .read(&format!("the Slack {what}"))
        .map_err(|e| e.to_string())?;
    let shaped = token.strip_prefix(prefix).is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    match shaped {
        true => Ok(Secret(token)),
        false => Err(format!(
            "the Slack {what} does not look like one (it starts {prefix})"
        )),
    }
}

/// Where the Slack token `key` is; an error when it is not given.
fn token_source(
    key: &str,
    env: Option<String>,
    file: Option<PathBuf>,
) -> Result<TokenSource, String> {
    two_way::secret_from(key, env, file)?.ok_or_else(|| {
        format!(
            "needs the {} from {key}_env = \"VARIABLE\" or {key}_file = \"/path\" (one of them; \
             never inline)",
            key.replace('_', " ")
        )
    })
}

impl ChannelKind for Slack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn configure(&self, value: &toml::Value) -> Result<Configured, String> {
        let table: Table = value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_owned())?;
        let channel = table
            .channel
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_alphanumeric()))
            .ok_or(
                "needs channel = \"C…\", the id of the channel the questions are posted in (its \
                 details in Slack show it)",
            )?;
        let allow = table.allow.filter(|allow| !allow.is_empty()).ok_or(
            "needs allow = [\"U…\", …], the Slack user ids of the people who may answer: anyone \
             in the workspace can press a button, so nobody answers unless listed",
        )?;
        let app = token_source("app_token", table.app_token_env, table.app_token_file)?;
        let bot = token_source("bot_token", table.bot_token_env, table.bot_token_file)?;
        let api_url = table.api_url.unwrap_or_else(|| DEFAULT_API.to_owned());
        let secure = match api_url.split_once("://") {
            Some(("https", _)) => true,
            Some(("http", _)) => false,
            _ => {
                return Err(format!(
                    "api_url {api_url} is not an http:// or https:// URL"
                ));
            }
        };
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
    fn tokens(&self) -> Result<(Secret, Secret), String> {
        Ok((
            token("app token", "xapp-", &self.app)?,
            token("bot token", "xoxb-", &self.bot)?,
        ))
    }

    /// The Web API, with the tokens read now.
    fn api(&self) -> Result<Api, String> {
        let (app, bot) = self.tokens()?;
        Ok(Api {
            base: self.api_url.clone(),
            secure: self.secure,
            app,
            bot,
            http: crate::http_client(None).map_err(|e| e.to_string())?,
        })
    }
}

#[derive(Debug, Clone)]
struct Api {
    base: String,
    /// The Web API is `https://`: the socket must be `wss://`.
    secure: bool,
    app: Secret,
    bot: Secret,
    http: reqwest::Client,
}

impl Api {
    /// Calls `method` with `body` as the bot (or, with `app`, as the app),
    /// waiting out 429s (a few times).
    async fn call(&self, method: &str, body: &Value, app: bool) -> Result<Value, Failure> {
        let token = if app { &self.app } else { &self.bot };
        let mut retries = 0;
        loop {
            let response = self
                .http
                .post(format!("{}/{method}", self.base))
                .bearer_auth(&token.0)
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/json; charset=utf-8",
                )
                .body(body.to_string())
                .timeout(CALL_TIMEOUT)
                .send()
                .await
                .map_err(|e| Failure::Down(format!("{method}: {}", e.without_url())))?;
            let status = response.status();
            if status == reqwest::StatusCode::TOO_MANY_REQUESTS && retries < RETRIES {
                retries += 1;
                let wait = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok()?.trim().parse().ok())
                    .map_or(Duration::from_secs(1), Duration::from_secs)
                    .min(MOST_RETRY_AFTER);
                tracing::info!(method, ?wait, "Slack asks to wait (429)");
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                return Err(Failure::Down(format!("{method}: Slack replied {status}")));
            }
            let body = super::reply_body(response)
                .await
                .map_err(|why| Failure::Down(format!("{method}: Slack replied {status}: {why}")))?;
            let reply: Value = serde_json::from_slice(&body).map_err(|_| {
                Failure::Down(format!("{method}: Slack replied {status}, not JSON"))
            })?;
            return match (reply["ok"].as_bool(), reply["error"].as_str()) {
                (Some(true), _) => Ok(reply),
                (
                    _,
                    Some("ratelimited" | "internal_error" | "fatal_error" | "service_unavailable"),
                ) => Err(Failure::Down(format!("{method}: {}", reply["error"]))),
                (_, error) => Err(Failure::Refused(format!(
                    "{method}: {}",
                    error.unwrap_or("not ok")
                ))),
            };
        }
    }

    /// Opens a Socket Mode connection: its URL from `apps.connections.open`,
    /// then the WebSocket (over TLS, unless the Web API is plain HTTP, as a
    /// test's is).
    async fn connect(&self) -> Result<Ws, Failure> {
        let opened = self.call("apps.connections.open", &json!({}), true).await?;
        let url = opened["url"].as_str().unwrap_or_default().to_owned();
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| Failure::Down("apps.connections.open gave no URL".into()))?;
        if scheme != if self.secure { "wss" } else { "ws" } {
            return Err(Failure::Refused(format!(
                "apps.connections.open gave a {scheme}:// URL, not {}",
                if self.secure { "wss://" } else { "ws://" }
            )));
        }
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse()
                    .map_err(|_| Failure::Down("a bad port".into()))?,
            ),
            None => (authority, if self.secure { 443 } else { 80 }),
        };
        // The URL holds a ticket: no error says it.
        let down = |what: &str, e: &dyn std::fmt::Display| {
            Failure::Down(format!("Slack's socket: {what}: {e}"))
        };
        let tcp = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect((host, port)))
            .await
            .map_err(|e| down("connect", &e))?
            .map_err(|e| down("connect", &e))?;
        let stream = match self.secure {
            false => tokio_util::either::Either::Left(tcp),
            true => {
                use rustls_platform_verifier::ConfigVerifierExt;
                let config =
                    rustls::ClientConfig::with_platform_verifier().map_err(|e| down("TLS", &e))?;
                let name = rustls::pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| down("TLS", &e))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| down("TLS", &e))?;
                tokio_util::either::Either::Right(tls)
            }
        };
        // An event is read up to the same bound as a reply: a bigger one
        // ends the connection, and a new one is opened.
        let bounded = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(super::MAX_REPLY_BYTES))
            .max_frame_size(Some(super::MAX_REPLY_BYTES));
        let (ws, _) = tokio::time::timeout(
            CALL_TIMEOUT,
            tokio_tungstenite::client_async_with_config(url.as_str(), stream, Some(bounded)),
        )
        .await
        .map_err(|e| down("handshake", &e))?
        .map_err(|e| down("handshake", &e))?;
        Ok(ws)
    }
}

type Ws = WebSocketStream<
    tokio_util::either::Either<TcpStream, tokio_rustls::client::TlsStream<TcpStream>>,
>;

/// The Socket Mode connection, opened when first read.
struct Socket {
    api: Api,
    ws: Option<Ws>,
}

impl two_way::Source for Socket {
    type Item = Value;

    /// The next envelope, acknowledged; the socket is opened (again) as
    /// needed.
    async fn next(mut self) -> (Self, Result<Vec<Value>, String>) {
        loop {
            let ws = match self.ws.as_mut() {
                Some(ws) => ws,
                None => match self.api.connect().await {
                    Ok(ws) => self.ws.insert(ws),
                    Err(failure) => return (self, Err(failure.to_string())),
                },
            };
            let frame = match tokio::time::timeout(SILENCE, ws.next()).await {
                Ok(Some(Ok(frame))) => frame,
                ended => {
                    let why = match ended {
                        Ok(Some(Err(error))) => format!("Slack's socket: {error}"),
                        Err(_) => "Slack's socket fell silent".to_owned(),
                        _ => "Slack's socket closed".to_owned(),
                    };
                    self.ws = None;
                    return (self, Err(why));
                }
            };
            let Frame::Text(text) = frame else {
                // Pings are answered by the socket itself.
                continue;
            };
            let Ok(envelope) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if envelope["type"] == "disconnect" {
                // Slack moves the connection: a new one is opened.
                tracing::debug!(reason = %envelope["reason"], "slack: the socket is opened again");
                self.ws = None;
                continue;
            }
            let Some(id) = envelope["envelope_id"].as_str() else {
                continue;
            };
            let ack = json!({"envelope_id": id}).to_string();
            if let Err(error) = ws.send(Frame::text(ack)).await {
                self.ws = None;
                return (self, Err(format!("Slack's socket: {error}")));
            }
            return (self, Ok(vec![envelope]));
        }
    }
}

/// What the channel keeps across restarts.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    next_key: u64,
    /// The questions posted and still waiting, by key: each question's
    /// message is its `ts`.
    posted: BTreeMap<u64, Posted<String>>,
}

impl TwoWay for SlackChannel {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn check(&self) -> Result<(), String> {
        self.tokens().map(drop)
    }

    fn run(self: Arc<Self>, desk: Arc<dyn Desk>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let api = match self.api() {
                Ok(api) => api,
                Err(why) => return tracing::error!(why, "slack: the channel cannot start"),
            };
            let mut events = desk.events();
            let kept = Kept::new("slack");
            let socket = Socket {
                api: api.clone(),
                ws: None,
            };
            let mut run = Run {
                channel: &self,
                api,
                desk: &*desk,
                state: kept.load_surely(&*desk).await,
                kept,
            };
            two_way::serve(&mut run, socket, &mut events).await;
        })
    }
}

struct Run<'a> {
    channel: &'a SlackChannel,
    api: Api,
    desk: &'a dyn Desk,
    state: State,
    kept: Kept,
}

/// Who did something in Slack.
#[derive(Debug, Deserialize)]
struct User {
    id: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    name: String,
}

impl User {
    fn name(&self) -> String {
        match (self.username.is_empty(), self.name.is_empty()) {
            (false, _) => format!("@{}", self.username),
            (true, false) => format!("@{}", self.name),
            (true, true) => format!("Slack user {}", self.id),
        }
    }
}

impl two_way::Work for Run<'_> {
    type Item = Value;

    fn name(&self) -> &'static str {
        "slack"
    }

    fn desk(&self) -> &dyn Desk {
        self.desk
    }

    fn shows(&self, record: &Record) -> bool {
        crate::store::answerable(&record.audience, &self.channel.groups)
    }

    fn shown(&self) -> Vec<String> {
        chat::shown(self)
    }

    async fn post(&mut self, record: &Record) -> Result<(), Failure> {
        chat::post(self, record).await
    }

    async fn left(&mut self, id: &str) -> Result<(), String> {
        chat::left(self, id).await
    }

    async fn take(&mut self, envelope: Value) -> Result<(), String> {
        self.handle(&envelope["payload"])
            .await
            .map_err(|f| f.to_string())
    }

    async fn taken(&mut self) {
        self.save().await;
    }
}

impl chat::Chat for Run<'_> {
    type Message = String;

    fn posted(&self) -> &BTreeMap<u64, Posted<String>> {
        &self.state.posted
    }

    fn parts(&mut self) -> (&mut BTreeMap<u64, Posted<String>>, &dyn Desk) {
        (&mut self.state.posted, self.desk)
    }

    fn new_key(&mut self) -> u64 {
        self.state.next_key += 1;
        self.state.next_key - 1
    }

    async fn send(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        chosen: &BTreeSet<usize>,
    ) -> Result<String, Failure> {
        let body = json!({
            "channel": self.channel.channel,
            "text": fallback(record, question),
            "blocks": blocks(record, key, question, chosen, None),
            "parse": "none",
            "link_names": false,
            "unfurl_links": false,
            "unfurl_media": false,
        });
        let sent = self.api.call("chat.postMessage", &body, false).await?;
        Ok(sent["ts"].as_str().unwrap_or_default().to_owned())
    }

    async fn show(
        &self,
        record: &Record,
        key: u64,
        question: usize,
        ts: &String,
        chosen: &BTreeSet<usize>,
        said: Said<'_>,
    ) -> Result<(), Failure> {
        let blocks = match said {
            Said::Given { answer, told } => {
                let said = format!(
                    "*Your answer:* {} · {}",
                    escape(&words(answer, 500)),
                    escape(told)
                );
                blocks(record, key, question, chosen, Some(&said))
            }
            Said::Left { outcome, answer } => {
                let answer = answer.map(|a| format!(": {}", escape(&words(a, 500))));
                let said = format!(
                    "*{}*{}",
                    escape(&words(outcome, 300)),
                    answer.unwrap_or_default()
                );
                settled_blocks(record, question, &said)
            }
        };
        let body = json!({
            "channel": self.channel.channel,
            "ts": ts,
            "text": fallback(record, question),
            "blocks": blocks,
            "parse": "none",
            "link_names": false,
        });
        self.api.call("chat.update", &body, false).await.map(drop)
    }

    async fn keep(&self) {
        self.save().await;
    }
}

impl Run<'_> {
    async fn save(&self) {
        if let Err(error) = self.kept.save(self.desk, &self.state).await {
            tracing::warn!(%error, "slack: its state could not be kept");
        }
    }

    /// An interaction: a button, checkboxes, or the own-words modal sent.
    async fn handle(&mut self, payload: &Value) -> Result<(), Failure> {
        let Ok(user) = serde_json::from_value::<User>(payload["user"].clone()) else {
            return Ok(());
        };
        match payload["type"].as_str() {
            Some("block_actions") => self.acted(payload, &user).await,
            Some("view_submission") => self.submitted(payload, &user).await,
            _ => Ok(()),
        }
    }

    /// Tells `user` `text`, in the channel, to them alone.
    async fn tell(&self, user: &User, text: &str) -> Result<(), Failure> {
        let body = json!({"channel": self.channel.channel, "user": user.id, "text": escape(text)});
        self.api
            .call("chat.postEphemeral", &body, false)
            .await
            .map(drop)
            .or_else(two_way::refused_is_done)
    }

    /// A button or checkboxes of a question message.
    async fn acted(&mut self, payload: &Value, user: &User) -> Result<(), Failure> {
        if !self.channel.allow.contains(&user.id) {
            tracing::info!(
                user = user.id,
                "slack: someone not in allow pressed a button; refused"
            );
            return self
                .tell(
                    user,
                    "You may not answer these questions: you are not in this inbox's allow list.",
                )
                .await;
        }
        let action = &payload["actions"][0];
        let ts = payload["container"]["message_ts"]
            .as_str()
            .unwrap_or_default();
        let in_channel = payload["container"]["channel_id"] == self.channel.channel.as_str();
        // Checkboxes give every option ticked in their element.
        let ticked: Vec<Press> = action["selected_options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| Press::parse(o["value"].as_str()?))
            .collect();
        let press = match action["type"].as_str() {
            Some("checkboxes") => action["action_id"].as_str().and_then(Press::parse),
            _ => action["value"].as_str().and_then(Press::parse),
        };
        let found = press.filter(|press| {
            in_channel
                && self.state.posted.get(&press.key()).is_some_and(|p| {
                    p.messages.get(press.question()).map(String::as_str) == Some(ts)
                })
        });
        let Some(press) = found else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let (key, question) = (press.key(), press.question());
        let Some(record) = chat::waiting(self, key).await? else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let asked = &record.request.questions[question];
        let options = asked.options.as_deref().unwrap_or_default();
        let answer = match press {
            Press::Choose { option, .. } => match options.get(option) {
                Some(o) => Answer {
                    id: asked.id.clone(),
                    selected: vec![o.label.clone()],
                    custom: None,
                },
                None => return self.tell(user, "No such option.").await,
            },
            // The element: action id `t<key>.<question>.<first option>`.
            Press::Toggle { option: first, .. } => {
                let range = first..(first + OPTIONS_PER_CHECKBOXES).min(options.len());
                let chosen: BTreeSet<usize> = ticked
                    .iter()
                    .filter(|t| t.key() == key && t.question() == question)
                    .filter_map(|t| match *t {
                        Press::Toggle { option, .. } if range.contains(&option) => Some(option),
                        _ => None,
                    })
                    .collect();
                let posted = self.state.posted.get_mut(&key).expect("found above");
                posted.batch.tick(question, range, &chosen);
                return Ok(());
            }
            Press::Send { .. } => Answer {
                id: asked.id.clone(),
                selected: self.state.posted[&key].batch.ticked(&record, question),
                custom: None,
            },
            Press::Skip { .. } => Answer::skipped(asked.id.clone()),
            Press::OwnWords { .. } => {
                let trigger = payload["trigger_id"].as_str().unwrap_or_default();
                let view = json!({"trigger_id": trigger, "view": own_words(&record, &press)});
                return match self.api.call("views.open", &view, false).await {
                    Ok(_) => Ok(()),
                    Err(Failure::Refused(why)) => {
                        tracing::debug!(why, "slack: the own-words modal could not be opened");
                        self.tell(
                            user,
                            "The form could not be opened; press the button again.",
                        )
                        .await
                    }
                    Err(down) => Err(down),
                };
            }
        };
        self.answered(&record, key, question, answer, user).await
    }

    /// The own-words modal was sent.
    async fn submitted(&mut self, payload: &Value, user: &User) -> Result<(), Failure> {
        let view = &payload["view"];
        if view["callback_id"] != OWN_WORDS {
            return Ok(());
        }
        if !self.channel.allow.contains(&user.id) {
            tracing::info!(
                user = user.id,
                "slack: own words from someone not in allow; refused"
            );
            return Ok(());
        }
        let Some(Press::OwnWords { key, question }) =
            view["private_metadata"].as_str().and_then(Press::parse)
        else {
            return Ok(());
        };
        let text = view["state"]["values"]["answer"]["text"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let Some(record) = chat::waiting(self, key).await? else {
            return self.tell(user, "This question is no longer waiting.").await;
        };
        let Some(asked) = record.request.questions.get(question) else {
            return Ok(());
        };
        // Own words add to a multi-select question's ticks, and replace a
        // single choice.
        let selected = match asked.multi_select.unwrap_or(false) {
            true => self.state.posted[&key].batch.ticked(&record, question),
            false => Vec::new(),
        };
        let answer = Answer {
            id: asked.id.clone(),
            selected,
            custom: Some(text),
        };
        self.answered(&record, key, question, answer, user).await
    }

    /// `answer` to question `question` of `record` (under `key`) from
    /// `user` ([`chat::give`], once they are known to be someone who may
    /// answer); `user` is told what became of it.
    async fn answered(
        &mut self,
        record: &Record,
        key: u64,
        question: usize,
        answer: Answer,
        user: &User,
    ) -> Result<(), Failure> {
        let person = two_way::person(
            self.desk,
            "slack",
            self.channel.people.get(&user.id),
            &format!("your Slack user, {},", user.id),
            || Person {
                name: user.name(),
                groups: Vec::new(),
            },
        )
        .await;
        let given = match person {
            Ok(person) => chat::give(self, record, key, question, answer, person).await,
            Err(why) => Given::Refused(why),
        };
        // Answered: its messages are updated when the inbox says it left.
        match given {
            Given::Answered => Ok(()),
            told => self.tell(user, &told.told()).await,
        }
    }
}

/// The own-words modal's `callback_id`.
const OWN_WORDS: &str = "ask-user-own-words";

/// The modal that takes own words for `press`'s question.
fn own_words(record: &Record, press: &Press) -> Value {
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
            {"type": "input", "block_id": "answer", "label": {"type": "plain_text", "text": "Your answer"},
             "element": {"type": "plain_text_input", "action_id": "text", "multiline": true,
                         "max_length": 3000}},
        ],
    })
}

/// A message's plain text, for notifications and screen readers. Slack
/// reads it as mrkdwn too (a `<!channel>` in it would ping everyone, a
/// `<https://…|label>` make a disguised link): escaped like the blocks.
fn fallback(record: &Record, question: usize) -> String {
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
        escape(&words(&record.agent, 100)),
        escape(&words(&record.session, 100))
    )}]})
}

/// The blocks of question `question` of `record`, posted under `key`, with
/// `chosen` ticked and `said` under it.
fn blocks(
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
fn settled_blocks(record: &Record, question: usize, said: &str) -> Value {
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
        let record = crate::store::tests::record_of(AskRequest {
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
