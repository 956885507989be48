//! `[inbox.channels.matrix]`: every question in a Matrix room, answered
//! there, through a bot account of the user's on any homeserver, over the
//! client-server API's `/sync` long poll (the inbox opens the connection;
//! no port, no public address).
//!
//! ```toml
//! [inbox.channels.matrix]
//! homeserver = "https://matrix.example.org"
//! room = "!abcdef:example.org"                 # where questions are posted (its id)
//! access_token_env = "ASK_USER_MATRIX_TOKEN"   # or access_token_file = "/abs/path" (mode 0600)
//! allow = ["@ana:example.org"]                 # who may answer: required
//! ```
//!
//! One message per question of a batch: its header, question, detail and
//! numbered options (HTML, everything the model wrote escaped; the plain
//! body beside it). Matrix has no buttons every client shows, so a person
//! answers as every client can: a reaction with an option's number
//! (1️⃣–🔟) to a single-choice question, or a reply to its message with a
//! number, several numbers for a multi-select question ("1, 3"), `skip`,
//! or their own words. Each reply is answered with a notice saying what
//! became of it; a batch is answered once each of its questions is, by the
//! page's rules, and every message is then edited to say what became of it.
//!
//! Only the people in `allow` (Matrix user ids) answer; anyone in the room
//! could write, so a channel without the list is refused at start-up. The
//! bot joins the room when it starts (invite it first). An end-to-end
//! encrypted room is refused: the bot holds no keys, and would read
//! nothing (a limit: use an unencrypted room for the questions). The token
//! reaches no log, no error and no process argument.
//!
//! What was read (`/sync`'s `next_batch`), the questions posted and the
//! answers given so far are kept in the inbox's store before the next
//! events are asked for: a restart neither loses an answer nor takes one
//! twice. A post is sent under a transaction id made of the question's id,
//! so one sent again after a crash is not posted twice.

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
mod message;
mod run;

use api::{Api, Syncer};
use run::{Run, State};

pub struct Matrix;

/// `[inbox.channels.matrix]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    homeserver: Option<HttpUrl>,
    room: Option<String>,
    access_token_env: Option<String>,
    access_token_file: Option<PathBuf>,
    allow: Option<Vec<String>>,
    people: Option<BTreeMap<String, String>>,
    groups: Option<Vec<String>>,
}

impl ChannelKind for Matrix {
    const NAME: &'static str = "matrix";
    const TITLE: &'static str = "Matrix";
    type Config = Table;

    fn configure(&self, table: Table) -> Result<Configured, ChannelError> {
        let HttpUrl(homeserver) = table.homeserver.ok_or_else(|| {
            ChannelError::config(
                "needs homeserver = \"https://…\", the address of the bot's homeserver (its \
                 client-server API)",
            )
        })?;
        let room = table.room.filter(|room| room_id(room)).ok_or_else(|| {
            ChannelError::config(
                "needs room = \"!…\", the id of the room the questions are posted in (its \
                 settings show it, under Advanced; not its #alias)",
            )
        })?;
        let allow = table
            .allow
            .filter(|allow| !allow.is_empty())
            .ok_or_else(|| {
                ChannelError::config(
                    "needs allow = [\"@…:server\", …], the Matrix user ids of the people who may \
                     answer: anyone in the room can write, so nobody answers unless listed",
                )
            })?;
        if let Some(user) = allow.iter().find(|user| !user_id(user)) {
            return Err(ChannelError::config(format!(
                "allow: {user:?} is not a Matrix user id (@name:server)"
            )));
        }
        let token = secret::secret_from(
            "access_token",
            table.access_token_env,
            table.access_token_file,
        )?
        .ok_or_else(|| {
            ChannelError::config(
                "needs the bot's access token from access_token_env = \"VARIABLE\" or \
                 access_token_file = \"/path\" (one of them; never inline)",
            )
        })?;
        Ok(Configured::TwoWay(Arc::new(MatrixChannel {
            homeserver: homeserver.trim_end_matches('/').to_owned(),
            room,
            token,
            allow,
            people: table.people.unwrap_or_default(),
            groups: table.groups.unwrap_or_default(),
        })))
    }
}

/// Whether `room` has a room id's shape: `!opaque:server`, or `!opaque`
/// from room version 12 on (printable, at most 255 bytes; it is
/// percent-encoded wherever it goes into a path).
fn room_id(room: &str) -> bool {
    room.strip_prefix('!').is_some_and(|rest| {
        !rest.is_empty() && !rest.starts_with(':') && rest.bytes().all(|b| b.is_ascii_graphic())
    }) && room.len() <= 255
}

/// Whether `user` has a user id's shape (`@name:server`).
fn user_id(user: &str) -> bool {
    user.strip_prefix('@')
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(name, server)| !name.is_empty() && !server.is_empty())
}

#[derive(Debug)]
struct MatrixChannel {
    /// The homeserver's address.
    homeserver: String,
    room: String,
    /// The bot's access token, read when the inbox starts.
    token: TokenSource,
    allow: Vec<String>,
    /// In a team's inbox, who each Matrix user is: a person's name (their
    /// token's).
    people: BTreeMap<String, String>,
    /// In a team's inbox, the audiences whose questions the room shows (no
    /// audience: those for anyone).
    groups: Vec<String>,
}

impl MatrixChannel {
    /// The bot's access token, read now.
    fn token(&self) -> Result<Secret, ChannelError> {
        secret::read(&self.token, "the Matrix access token")
    }

    /// The client-server API, with the token read now.
    fn api(&self) -> Result<Api, ChannelError> {
        Ok(Api::new(
            &self.homeserver,
            self.room.clone(),
            self.token()?,
            http::client()?,
        ))
    }
}

impl TwoWay for MatrixChannel {
    fn name(&self) -> &'static str {
        Matrix::NAME
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
                        "matrix: the channel cannot start"
                    );
                }
            };
            let mut events = host.events();
            let kept = Kept::new(Matrix::NAME);
            let mut state: State = kept.load_surely(&*host).await;
            // Who the bot is (its own events are passed over), in the room,
            // which is not encrypted, and where it reads from: tried until
            // the homeserver answers.
            let ready = match api.ready(state.since.clone()).await {
                Ok(ready) => ready,
                Err(error) => {
                    return tracing::error!(
                        error = error.report(),
                        "matrix: the channel cannot start"
                    );
                }
            };
            if state.since.is_none() {
                state.since = Some(ready.since.clone());
                kept.save_surely(&*host, &state).await;
            }
            let syncer = Syncer::new(api.clone(), ready.since);
            let mut run = Run::new(&self, api, ready.bot, &*host, state, kept);
            driver::serve(&mut run, syncer, &mut events).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_for_their_shape() {
        assert!(room_id("!abc:example.org"));
        assert!(room_id("!IlXHEJ1BFgzbNon242_u9Wr5ckmUA55Q7Yn_jGJyBLM"));
        for bad in ["", "abc:example.org", "!", "!:x", "! a", "#alias:x"] {
            assert!(!room_id(bad), "{bad}");
        }
        assert!(user_id("@ana:example.org"));
        for bad in ["", "ana", "@ana", "@:x", "ana:x"] {
            assert!(!user_id(bad), "{bad}");
        }
    }
}
