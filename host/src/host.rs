//! Assembling a host: configuration → seam → answerers → runtime, in one
//! place that the `ask-user` command and every other front end use.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use ask_user::{Config, HostBuilder};
//! use tokio_util::sync::CancellationToken;
//!
//! let host = HostBuilder::from_config(Config::load("ask-user.toml".as_ref())?)
//!     .build()
//!     .await?;
//! for notice in host.notices() {
//!     eprintln!("{notice}"); // e.g. the web page's address
//! }
//! let session = host.agents().register_root("session-1", None);
//! let turn = CancellationToken::new();
//! let arguments = r#"{"questions":[{"id":"pkg","question":"Which package manager?"}]}"#;
//! let result = host.runtime().call(&session, &turn, arguments).await;
//! host.close().await; // clears any prompt, stops children, writes the audit trail
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use ask_user_seam::{AgentRegistry, Answerer, Delegated, UserQuestions};

use crate::answerers::Page;
use crate::audit::AuditLog;
use crate::cache::CodeCache;
use crate::config::{AnswererEntry, Config};
use crate::engine::Engine;
use crate::runtime::ToolRuntime;

/// Builds a [`Host`].
#[derive(Debug, Default)]
pub struct HostBuilder {
    config: Config,
    first: Vec<AnswererEntry>,
    component: Option<Vec<u8>>,
    engine: Option<Engine>,
    agents: Option<Arc<AgentRegistry>>,
    cache: Option<CodeCache>,
    tolerant: bool,
}

impl HostBuilder {
    /// A host of the built-in component, no answerers and the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A host as `config` says: its answerers, limits, timeout and audit trail.
    pub fn from_config(config: Config) -> Self {
        HostBuilder {
            config,
            ..Self::default()
        }
    }

    /// Puts `entry` ahead of the configuration's answerers (after any added
    /// before it).
    pub fn answerer(mut self, entry: AnswererEntry) -> Self {
        self.first.push(entry);
        self
    }

    /// Runs this component (the bytes of a `.wasm` file) instead of the
    /// built-in one.
    pub fn component(mut self, component: Vec<u8>) -> Self {
        self.component = Some(component);
        self
    }

    /// Uses `engine` instead of the process's shared one.
    pub fn engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Keeps the compiled component in `cache`, so that the next process
    /// loads it in under a millisecond instead of compiling it again.
    pub fn code_cache(mut self, cache: CodeCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Uses `agents` (shared with the rest of the embedding host) instead of
    /// a registry of its own.
    pub fn agents(mut self, agents: Arc<AgentRegistry>) -> Self {
        self.agents = Some(agents);
        self
    }

    /// What a delegated sub-agent's ask gets, instead of what the
    /// configuration says (default: refused, `DELEGATED_CALLER`).
    pub fn delegated(mut self, delegated: Delegated) -> Self {
        self.config.delegated = delegated;
        self
    }

    /// Leaves out an answerer that cannot start, saying so in
    /// [`Host::notices`], instead of failing the build: for a server that
    /// should serve with the answerers it has rather than not at all.
    pub fn without_failed_answerers(mut self) -> Self {
        self.tolerant = true;
        self
    }

    /// Loads the component, then starts the answerers in order. Nothing is
    /// started when the component cannot be loaded.
    pub async fn build(self) -> Result<Host, HostError> {
        let agents = self.agents.unwrap_or_default();
        let mut seam = UserQuestions::new(agents.clone())
            .with_timeout(self.config.timeout)
            .with_delegated(self.config.delegated);
        if let Some(path) = self.config.audit {
            let log = AuditLog::open(&path).map_err(|error| HostError::Audit { path, error })?;
            seam = seam.with_audit(log);
        }
        let engine = match self.engine {
            Some(engine) => engine,
            None => Engine::shared().map_err(HostError::Component)?.clone(),
        };
        let component = self.component.as_deref().unwrap_or(crate::COMPONENT);
        let seam = Arc::new(seam);
        let runtime = match &self.cache {
            Some(cache) => {
                ToolRuntime::with_cache(&engine, component, cache, seam, self.config.sandbox).await
            }
            None => ToolRuntime::with_engine(&engine, component, seam, self.config.sandbox).await,
        }
        .map_err(HostError::Component)?;
        let mut host = Host {
            runtime: Arc::new(runtime),
            agents,
            answerers: Vec::new(),
            notices: Vec::new(),
            pages: Vec::new(),
        };
        let entries = self.first.into_iter().chain(self.config.answerers);
        for (n, entry) in entries.enumerate() {
            let started = match entry.setup.start().await {
                Ok(started) => started,
                Err(error) if self.tolerant => {
                    let failed = HostError::Answerer {
                        position: n + 1,
                        kind: entry.kind,
                        error,
                    };
                    host.notices.push(format!("{failed}; going on without it"));
                    continue;
                }
                Err(error) => {
                    host.close().await;
                    return Err(HostError::Answerer {
                        position: n + 1,
                        kind: entry.kind,
                        error,
                    });
                }
            };
            host.notices.extend(started.notice);
            host.pages.extend(started.page);
            host.runtime
                .seam()
                .waterfall()
                .register_arc(started.answerer.clone(), entry.placement);
            host.answerers.push(started.answerer);
        }
        Ok(host)
    }
}

/// A loaded component with its seam, agents and started answerers.
pub struct Host {
    runtime: Arc<ToolRuntime>,
    agents: Arc<AgentRegistry>,
    answerers: Vec<Arc<dyn Answerer>>,
    notices: Vec<String>,
    pages: Vec<Page>,
}

impl Host {
    /// Runs tool calls (shared: an MCP server holds it too).
    pub fn runtime(&self) -> &Arc<ToolRuntime> {
        &self.runtime
    }

    /// The seam: more answerers can be registered on its waterfall, and the
    /// host can ask through it itself.
    pub fn seam(&self) -> &Arc<UserQuestions> {
        self.runtime.seam()
    }

    /// The live agents: register a root per session or turn.
    pub fn agents(&self) -> &Arc<AgentRegistry> {
        &self.agents
    }

    /// What the answerers asked to tell the human (e.g. a page's address).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// Pages where the human can answer, in chain order (the web answerer's).
    pub fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// Closes the answerers it started (a prompt is cleared and the terminal
    /// restored, a bridge process stopped) and writes out the audit trail.
    /// Call it before the process exits.
    pub async fn close(&self) {
        for answerer in &self.answerers {
            answerer.close().await;
        }
        self.seam().flush_audit().await;
    }
}

/// Why a host could not be built.
#[derive(Debug)]
pub enum HostError {
    /// The audit trail could not be opened.
    Audit {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The component could not be loaded.
    Component(ask_user_runtime::wasmtime::Error),
    /// An answerer could not be started (1 is the first of the chain).
    Answerer {
        position: usize,
        kind: String,
        error: std::io::Error,
    },
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Audit { path, error } => {
                write!(f, "cannot open the audit trail {}: {error}", path.display())
            }
            HostError::Component(error) => write!(f, "cannot load the component: {error:#}"),
            HostError::Answerer {
                position,
                kind,
                error,
            } => write!(f, "cannot start answerer {position} ({kind}): {error}"),
        }
    }
}

impl std::error::Error for HostError {}
