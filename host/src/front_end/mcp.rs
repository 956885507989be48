//! `ask-user mcp`: the tool as an MCP server, on stdio or Streamable HTTP.

use std::future::Future;
use std::sync::Arc;

use crate::hook::CLIENTS;
use crate::inbox::OneClient;
use crate::mcp::{Forms, McpHttp, McpServer, McpSettings, SubAgent, SubAgents};
use crate::{CliError, Host};
use serde_json::{Map, Value};

use super::FrontEnd;

/// MCP, on standard input and output until the client leaves, or on
/// Streamable HTTP until stopped (open calls then end `ASK_ABORTED`).
#[derive(clap::Args)]
pub struct Mcp {
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8766)
    /// instead of stdio, with the bearer token in ASK_USER_MCP_TOKEN (a
    /// call waiting on the inbox, and a task, then survive a restart),
    /// else one printed at start.
    #[arg(long, value_name = "ADDRESS")]
    http: Option<std::net::SocketAddr>,
    /// Where the client's own form goes (`[mcp] forms`).
    #[arg(skip)]
    forms: Forms,
    /// On stdio, the one client served.
    #[arg(skip)]
    one_client: Option<OneClient>,
}

impl FrontEnd for Mcp {
    const TABLE: &'static str = "mcp";

    type Settings = McpSettings;

    fn configure(&mut self, settings: McpSettings) {
        self.forms = settings.forms;
    }

    /// On stdio, one client: the inbox names its questions as the client
    /// ("Gemini CLI"), not as this program and its pid, in one session.
    fn kinds(&mut self, kinds: &mut crate::answerers::Kinds) {
        if self.http.is_none() {
            // No session to keep it in: the inbox's kind stays as it is.
            let Ok(client) = OneClient::new() else {
                return;
            };
            kinds.register(crate::inbox::InboxKind::serving(client.clone()));
            self.one_client = Some(client);
        }
    }

    async fn serve(
        self,
        host: &Host,
        stop: impl Future<Output = ()> + Send + 'static,
        say: fn(&str),
    ) -> Result<(), CliError> {
        let mut server = McpServer::new(host.runtime().clone(), host.pages())?
            .forms(self.forms)
            .sub_agents(Arc::new(HookClients));
        if let Some(client) = self.one_client {
            server = server.names_its_client(client.name);
        }
        // A page's notice carries its address with the page's token, and
        // a client may log its progress: a chain with a page says nothing.
        if host.pages().is_empty() && !host.notices().is_empty() {
            server = server.waiting_says(&host.notices().join("; "));
        }
        let served = match self.http {
            None => {
                // Started by hand: say what it waits for.
                use std::io::IsTerminal;
                if std::io::stdin().is_terminal() {
                    say(
                        "waiting for an MCP client on standard input: an MCP client (Claude Code, \
                         Codex…) starts this itself (the docs: \"From an MCP client\"); Ctrl-C stops",
                    );
                }
                server.serve_stdio(stop).await
            }
            Some(address) => {
                let token = mcp_token()?;
                // A token given is a secret of long standing: never in a log.
                let shown = match &token {
                    Some(_) => format!("${MCP_TOKEN_ENV}"),
                    None => String::new(),
                };
                // A token given keys the server: its tasks are kept, to be
                // found again by their ids after a restart.
                let server = match (&token, crate::inbox::state_dir()) {
                    (Some(_), Some(state)) => server.keeps_tasks_in(state.join("mcp-tasks")),
                    _ => server,
                };
                let http = McpHttp::start(server, address, token).await?;
                if !address.ip().is_loopback() {
                    say(&format!(
                        "WARNING: MCP listens on {}, beyond this machine; anyone who can reach it \
                         and has the token can ask you questions",
                        http.address()
                    ));
                }
                say(&format!(
                    "MCP (Streamable HTTP) at {} with the header \"Authorization: Bearer {}\"; \
                     Ctrl-C stops",
                    http.url(),
                    match shown.as_str() {
                        "" => http.token(),
                        variable => variable,
                    }
                ));
                stop.await;
                http.stop().await;
                Ok(())
            }
        };
        Ok(served?)
    }
}

/// The clients whose hooks tell their sub-agents' calls apart.
struct HookClients;

impl SubAgents for HookClients {
    fn of(&self, meta: &Map<String, Value>) -> Option<SubAgent> {
        CLIENTS.iter().find_map(|client| client.sub_agent(meta))
    }
}

/// The variable that fixes `ask-user mcp --http`'s bearer token.
const MCP_TOKEN_ENV: &str = "ASK_USER_MCP_TOKEN";

/// The bearer token `ask-user mcp --http` wants, when the environment fixes
/// it (a per-run token otherwise).
fn mcp_token() -> Result<Option<String>, CliError> {
    let Some(token) = std::env::var_os(MCP_TOKEN_ENV) else {
        return Ok(None);
    };
    match token.into_string() {
        Ok(token) if token.len() >= 32 && token.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(Some(token))
        }
        _ => Err(CliError::new(format!(
            "{MCP_TOKEN_ENV} must be at least 32 visible ASCII characters, with no spaces \
             (e.g. the output of `openssl rand -hex 32`); unset it for a token per run"
        ))),
    }
}
