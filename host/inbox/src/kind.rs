//! The answerer kind `inbox`: its config table (one user's inbox, or a
//! team's with its token and audience), and how a front end names what
//! asks (a hook's [`Asker`], `ask-user mcp`'s [`OneClient`]).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;

use crate::answerer::{InboxAnswerer, StopReason, WhenDown};
use crate::client::{ClientError, InboxClient};
use ask_user_answerers::{AnswererKind, ConfigProblem, KindTable, Setup, Started};

/// `kind = "inbox"`: optional `state_dir` (default: the user's state
/// directory) and `agent` (how the inbox names this process). A team's
/// inbox instead: `url`, the token from `token_env = "VAR"` or
/// `token_file = "PATH"` (never inline), and optional `audience`, the groups
/// whose people may answer (empty: anyone in the team).
#[derive(Debug, Default)]
pub struct InboxKind {
    asker: Option<Asker>,
    one_client: Option<OneClient>,
}

/// The one client a process serves (`ask-user mcp` on stdio: one run of
/// one client). Its `name`, set once the client says it (MCP's
/// `clientInfo`), names its questions where neither the config's `agent`
/// nor the host ([`Asker`]) says better than this program and its pid. Its
/// own calls ask in one `session`: a run's questions show together, and
/// a batch asked again while the first still waits (a client that gave up
/// on a call without a word, as Gemini CLI's Esc does) is the same
/// question, answered once for both. Its sub-agents keep their own.
#[derive(Debug, Clone)]
pub struct OneClient {
    pub name: Arc<std::sync::OnceLock<String>>,
    pub session: String,
}

impl OneClient {
    /// A client not named yet, in a fresh session (`mcp-run-<random>`).
    pub fn new() -> std::io::Result<OneClient> {
        Ok(OneClient {
            name: Arc::default(),
            session: ask_user_seam::secret::id("mcp-run-")?,
        })
    }
}

/// What the inbox shows as asking, when the host knows better than this
/// process's name and folder (a hook asking for another program).
#[derive(Debug, Clone)]
pub struct Asker {
    /// How the inbox names it, unless the config's `agent` says otherwise.
    pub agent: String,
    /// The folder it works in.
    pub cwd: Option<String>,
    /// Why it stopped waiting, once the host knows.
    pub stop_reason: StopReason,
    /// What its ask does when no inbox runs: a hook whose agent has a
    /// terminal passes, leaving the question to it.
    pub when_down: WhenDown,
}

impl InboxKind {
    /// The kind whose answerers ask as `asker`.
    pub fn asking_as(asker: Asker) -> Self {
        InboxKind {
            asker: Some(asker),
            one_client: None,
        }
    }

    /// The kind whose answerers ask for the one `client` this process
    /// serves ([`OneClient`]).
    pub fn serving(client: OneClient) -> Self {
        InboxKind {
            asker: None,
            one_client: Some(client),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InboxTable {
    state_dir: Option<PathBuf>,
    agent: Option<String>,
    url: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    #[serde(default)]
    audience: Vec<String>,
}

/// An inbox answerer, configured.
#[derive(Debug)]
pub struct InboxSetup {
    pub state_dir: Option<PathBuf>,
    pub agent: Option<String>,
    /// The host's word for what asks, under the config's `agent`.
    pub asker: Option<Asker>,
    /// The one client served, named once it speaks, under both.
    pub one_client: Option<OneClient>,
    /// A team's inbox instead of this user's.
    pub team: Option<Team>,
}

/// A team's inbox, as an agent reaches it.
#[derive(Debug, Clone)]
pub struct Team {
    pub url: String,
    pub token: TokenSource,
    /// The groups whose people may answer; empty: anyone.
    pub audience: Vec<String>,
}

/// Where an agent's token is read from when it starts.
#[derive(Debug, Clone)]
pub enum TokenSource {
    /// An environment variable's name.
    Env(String),
    /// A file only its owner may read.
    File(PathBuf),
}

impl TokenSource {
    /// The token, or why it cannot be had; `what` names it in the error
    /// ("the inbox token").
    pub fn read(&self, what: &str) -> std::io::Result<String> {
        let invalid = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, why);
        let token = match self {
            TokenSource::Env(name) => std::env::var(name)
                .map_err(|_| invalid(format!("{what}'s variable {name} is not set")))?,
            TokenSource::File(path) => {
                let metadata = std::fs::metadata(path).map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot read {what} {}: {e}", path.display()),
                    )
                })?;
                if std::os::unix::fs::PermissionsExt::mode(&metadata.permissions()) & 0o077 != 0 {
                    return Err(invalid(format!(
                        "{what} {} may be read by others: chmod 600 it",
                        path.display()
                    )));
                }
                ask_user_seam::files::read_bounded(path, 4096)?
            }
        };
        let token = token.trim().to_owned();
        if token.is_empty() {
            return Err(invalid(format!("{what} is empty")));
        }
        Ok(token)
    }
}

impl AnswererKind for InboxKind {
    fn name(&self) -> &'static str {
        "inbox"
    }

    fn configure(
        &self,
        table: KindTable<'_>,
        base: &Path,
    ) -> Result<Box<dyn Setup>, ConfigProblem> {
        let table: InboxTable = table.read(self.name())?;
        let token = match (table.token_env, table.token_file) {
            (Some(name), None) => Some(TokenSource::Env(name)),
            (None, Some(path)) => Some(TokenSource::File(base.join(path))),
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err("an inbox answerer takes token_env or token_file, not both"
                    .to_owned()
                    .into());
            }
        };
        let team = match (table.url, token) {
            (Some(_), _) if table.state_dir.is_some() => {
                return Err(
                    "an inbox answerer has a url (a team's inbox) or a state_dir \
                            (this user's), not both"
                        .to_owned()
                        .into(),
                );
            }
            (Some(url), Some(token)) => Some(Team {
                url,
                token,
                audience: table.audience,
            }),
            (Some(_), None) => {
                return Err("a team's inbox needs a token: token_env = \"VARIABLE\" or \
                            token_file = \"PATH\" (never the token itself)"
                    .to_owned()
                    .into());
            }
            (None, Some(_)) => {
                return Err("token_env and token_file go with a url (a team's inbox)"
                    .to_owned()
                    .into());
            }
            (None, None) if !table.audience.is_empty() => {
                return Err("audience goes with a url (a team's inbox)"
                    .to_owned()
                    .into());
            }
            (None, None) => None,
        };
        Ok(Box::new(InboxSetup {
            state_dir: table.state_dir.map(|dir| base.join(dir)),
            agent: table.agent,
            asker: self.asker.clone(),
            one_client: self.one_client.clone(),
            team,
        }))
    }
}

impl Setup for InboxSetup {
    fn start(
        self: Box<Self>,
    ) -> Pin<Box<dyn std::future::Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(async move {
            let (asker, cwd, stop_reason, when_down) = match self.asker {
                Some(asker) => (
                    Some(asker.agent),
                    asker.cwd,
                    asker.stop_reason,
                    asker.when_down,
                ),
                None => (
                    None,
                    std::env::current_dir()
                        .ok()
                        .map(|dir| dir.display().to_string()),
                    StopReason::default(),
                    WhenDown::Wait,
                ),
            };
            // The config's name, or the host's, over the client's; with
            // the config's, the client's own calls still ask in its run's
            // session (a name of its own, never set, leaves the config's).
            let one_client = match (&self.agent, &asker, self.one_client) {
                (_, Some(_), _) | (_, _, None) => None,
                (None, None, client) => client,
                (Some(_), None, Some(client)) => Some(OneClient {
                    name: Arc::default(),
                    ..client
                }),
            };
            let agent = self
                .agent
                .or(asker)
                .unwrap_or_else(|| format!("{} (pid {})", program(), std::process::id()));
            if let Some(team) = self.team {
                let client = InboxClient::remote(&team.url, team.token.read("the inbox token")?)?;
                let answerer = InboxAnswerer::new(client, agent, cwd)
                    .stopping_for(stop_reason)
                    .when_down(when_down)
                    .serving(one_client)
                    .audience(team.audience);
                return Ok(Started {
                    answerer: Arc::new(answerer),
                    notice: Some(format!("questions go to the team's inbox at {}", team.url)),
                    page: None,
                });
            }
            let state_dir = match self.state_dir.or_else(crate::state_dir) {
                Some(dir) => dir,
                None => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "no state directory for the inbox: set ASK_USER_STATE_DIR or HOME",
                    ));
                }
            };
            let client = InboxClient::new(&state_dir)?;
            let reached = client.check();
            let mut answerer = InboxAnswerer::new(client, agent, cwd)
                .stopping_for(stop_reason)
                .when_down(when_down)
                .serving(one_client);
            // No address and no token here: this goes to standard error,
            // which MCP clients keep in their logs.
            let notice = match reached {
                Ok(()) => format!(
                    "questions go to the inbox of {} (`ask-user inbox page` prints a link to it)",
                    state_dir.display()
                ),
                Err(ClientError::Untrusted(why)) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        format!("the inbox answerer cannot start: {why}"),
                    ));
                }
                Err(_) if when_down == WhenDown::Pass => format!(
                    "no inbox is running for {}; questions are left to the agent's own \
                     terminal until `ask-user inbox serve` starts",
                    state_dir.display()
                ),
                Err(_) => {
                    answerer = answerer.down_said();
                    format!(
                        "no inbox is running for {}; questions wait until `ask-user inbox serve` \
                         starts",
                        state_dir.display()
                    )
                }
            };
            Ok(Started {
                answerer: Arc::new(answerer),
                notice: Some(notice),
                page: None,
            })
        })
    }
}

/// This program's name, as the inbox shows what asked.
fn program() -> String {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|path| {
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "agent".to_owned())
}
