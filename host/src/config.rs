//! The answerer chain from a configuration file (TOML).
//!
//! ```toml
//! timeout = "10m"              # the whole ask (ASK_TIMED_OUT); default: none
//! audit = "asks.jsonl"         # the audit trail; default: none
//!
//! [[answerer]]                 # answerers, in order
//! kind = "script"
//! answers = "answers.json"     # canned answers, tried first
//! rules = [
//!   { id = "target", select = ["Staging (Recommended)"] },
//!   { question = "(?i)deploy", recommended = true },
//!   { question = ".", pass = true },
//! ]
//!
//! [[answerer]]
//! kind = "bridge"
//! command = ["python3", "bridge.py"]   # or: socket = "/run/ask.sock"
//! timeout = "5m"               # how long this answerer may take to claim or pass
//!
//! [[answerer]]
//! kind = "web"                 # a page in a browser
//! port = 8765                  # default 0: any free port
//! grace = "5s"                 # wait this long for a page ("forever" waits)
//! # bind = "0.0.0.0"           # default 127.0.0.1; anything else is exposed
//!
//! [[answerer]]
//! kind = "terminal"
//! scope = "session-1"          # only requests from this scope (or inside it)
//!
//! [sandbox]                    # limits on the component, per call (RuntimeConfig)
//! cpu_deadline = "1s"
//! memory_cap = 33554432        # bytes
//! max_arguments_bytes = 1048576
//! max_asks_per_call = 1
//! max_request_bytes = 1048576
//! max_output_bytes = 1048576
//! max_concurrent_calls = 64
//! ```
//!
//! Relative paths are relative to the file, and a bridge command runs in the
//! file's folder. Durations are written like
//! `"30s"`, `"5m"`, `"1h 30m"`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::answerers::bridge::BridgeAnswerer;
use crate::answerers::script::{Rule, ScriptAnswerer};
use crate::answerers::terminal::TerminalAnswerer;
use crate::answerers::web::{WebAnswerer, WebConfig};
use crate::runtime::RuntimeConfig;
use crate::waterfall::{Answerer, Placement};

/// A configuration file that cannot be used; says where and why.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A host's configuration: its answerers and its limits.
#[derive(Debug, Default)]
pub struct Config {
    /// Limit on every ask.
    pub timeout: Option<Duration>,
    /// Where to write the audit trail.
    pub audit: Option<PathBuf>,
    /// The answerers, in order.
    pub answerers: Vec<AnswererConfig>,
    /// The sandbox's limits: the defaults, with what the file sets.
    pub sandbox: RuntimeConfig,
}

/// One answerer of the chain.
#[derive(Debug)]
pub struct AnswererConfig {
    pub kind: AnswererKind,
    pub scope: Option<String>,
    pub timeout: Option<Duration>,
}

/// Which answerer, with what it needs.
#[derive(Debug)]
pub enum AnswererKind {
    /// The human at the controlling terminal.
    Terminal,
    /// Rules and canned answers.
    Script(ScriptAnswerer),
    /// A process started with this command line, in this folder (the
    /// configuration file's).
    BridgeCommand { command: Vec<String>, dir: PathBuf },
    /// A peer listening on this Unix socket.
    BridgeSocket(PathBuf),
    /// A page in a browser.
    Web(WebConfig),
}

/// A started answerer and where it goes.
pub struct Started {
    pub answerer: Arc<dyn Answerer>,
    pub placement: Placement,
    /// What to tell the human, e.g. the web page's address.
    pub notice: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    timeout: Option<toml::Spanned<String>>,
    audit: Option<PathBuf>,
    #[serde(default)]
    answerer: Vec<toml::Spanned<RawAnswerer>>,
    sandbox: Option<toml::Spanned<RawSandbox>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    cpu_deadline: Option<String>,
    memory_cap: Option<usize>,
    max_arguments_bytes: Option<usize>,
    max_asks_per_call: Option<u32>,
    max_request_bytes: Option<usize>,
    max_output_bytes: Option<usize>,
    max_concurrent_calls: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswerer {
    kind: toml::Spanned<String>,
    scope: Option<String>,
    timeout: Option<String>,
    answers: Option<PathBuf>,
    rules: Option<Vec<Rule>>,
    command: Option<Vec<String>>,
    socket: Option<PathBuf>,
    bind: Option<std::net::IpAddr>,
    port: Option<u16>,
    grace: Option<String>,
}

impl Config {
    /// Without a file: the terminal, alone.
    pub fn terminal_only() -> Self {
        Config {
            answerers: vec![AnswererConfig {
                kind: AnswererKind::Terminal,
                scope: None,
                timeout: None,
            }],
            ..Config::default()
        }
    }

    /// The default location: `$XDG_CONFIG_HOME/ask-user/config.toml`, else
    /// `~/.config/ask-user/config.toml`.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
        Some(base.join("ask-user").join("config.toml"))
    }

    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read the config {}: {e}", path.display())))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, base).map_err(|(span, problem)| {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            ConfigError(format!("{} line {line}: {problem}", path.display()))
        })
    }

    fn parse(text: &str, base: &Path) -> Result<Self, (Range<usize>, String)> {
        let raw: RawConfig =
            toml::from_str(text).map_err(|e| (e.span().unwrap_or(0..0), e.message().to_owned()))?;
        let timeout = raw
            .timeout
            .map(|t| duration(t.as_ref()).map_err(|e| (t.span(), e)))
            .transpose()?;
        let answerers = raw
            .answerer
            .into_iter()
            .map(|entry| {
                let span = entry.span();
                AnswererConfig::from_raw(entry.into_inner(), base)
                    .map_err(|problem| (span, problem))
            })
            .collect::<Result<_, _>>()?;
        let sandbox = match raw.sandbox {
            Some(sandbox) => {
                let span = sandbox.span();
                sandbox
                    .into_inner()
                    .apply()
                    .map_err(|problem| (span, problem))?
            }
            None => RuntimeConfig::default(),
        };
        Ok(Config {
            timeout,
            audit: raw.audit.map(|p| base.join(p)),
            answerers,
            sandbox,
        })
    }
}

impl RawSandbox {
    /// The default limits with these set; each must be above zero.
    fn apply(self) -> Result<RuntimeConfig, String> {
        fn set<T: Default + PartialEq>(
            name: &str,
            value: Option<T>,
            limit: &mut T,
        ) -> Result<(), String> {
            match value {
                Some(value) if value == T::default() => {
                    Err(format!("sandbox `{name}` must be above zero"))
                }
                Some(value) => {
                    *limit = value;
                    Ok(())
                }
                None => Ok(()),
            }
        }
        let mut config = RuntimeConfig::default();
        let deadline = self.cpu_deadline.as_deref().map(duration).transpose()?;
        set("cpu_deadline", deadline, &mut config.cpu_deadline)?;
        set("memory_cap", self.memory_cap, &mut config.memory_cap)?;
        set(
            "max_arguments_bytes",
            self.max_arguments_bytes,
            &mut config.max_arguments_bytes,
        )?;
        set(
            "max_asks_per_call",
            self.max_asks_per_call,
            &mut config.max_asks_per_call,
        )?;
        set(
            "max_request_bytes",
            self.max_request_bytes,
            &mut config.max_request_bytes,
        )?;
        set(
            "max_output_bytes",
            self.max_output_bytes,
            &mut config.max_output_bytes,
        )?;
        set(
            "max_concurrent_calls",
            self.max_concurrent_calls,
            &mut config.max_concurrent_calls,
        )?;
        Ok(config)
    }
}

impl AnswererConfig {
    fn from_raw(raw: RawAnswerer, base: &Path) -> Result<Self, String> {
        let kind = raw.kind.as_ref().as_str();
        let allowed: &[&str] = match kind {
            "terminal" => &[],
            "script" => &["answers", "rules"],
            "bridge" => &["command", "socket"],
            "web" => &["bind", "port", "grace"],
            other => {
                return Err(format!(
                    "unknown answerer kind {other:?}; use terminal, script, bridge or web"
                ));
            }
        };
        let given = [
            ("answers", raw.answers.is_some()),
            ("rules", raw.rules.is_some()),
            ("command", raw.command.is_some()),
            ("socket", raw.socket.is_some()),
            ("bind", raw.bind.is_some()),
            ("port", raw.port.is_some()),
            ("grace", raw.grace.is_some()),
        ];
        if let Some((key, _)) = given
            .iter()
            .find(|(key, set)| *set && !allowed.contains(key))
        {
            return Err(format!("a {kind} answerer takes no `{key}`"));
        }
        let kind = match kind {
            "terminal" => AnswererKind::Terminal,
            "script" => {
                let canned = match &raw.answers {
                    Some(path) => {
                        ScriptAnswerer::from_file(&base.join(path)).map_err(|e| e.to_string())?
                    }
                    None => ScriptAnswerer::default(),
                };
                AnswererKind::Script(
                    canned.then(ScriptAnswerer::new(raw.rules.unwrap_or_default())),
                )
            }
            "web" => {
                let defaults = WebConfig::default();
                AnswererKind::Web(WebConfig {
                    bind: raw.bind.unwrap_or(defaults.bind),
                    port: raw.port.unwrap_or(defaults.port),
                    grace: match raw.grace.as_deref() {
                        None => defaults.grace,
                        Some("forever") => None,
                        Some(grace) => Some(duration(grace)?),
                    },
                })
            }
            _ => match (raw.command, raw.socket) {
                (Some(command), None) if !command.is_empty() => AnswererKind::BridgeCommand {
                    command,
                    dir: base.to_owned(),
                },
                (None, Some(socket)) => AnswererKind::BridgeSocket(base.join(socket)),
                _ => {
                    return Err(
                        "a bridge answerer takes either a non-empty `command` or a `socket`".into(),
                    );
                }
            },
        };
        Ok(AnswererConfig {
            kind,
            scope: raw.scope,
            timeout: raw.timeout.as_deref().map(duration).transpose()?,
        })
    }

    /// Starts the answerer (a bridge process is spawned, a socket
    /// connected, a web server bound).
    pub async fn start(self) -> std::io::Result<Started> {
        let mut notice = None;
        let answerer: Arc<dyn Answerer> = match self.kind {
            AnswererKind::Terminal => Arc::new(TerminalAnswerer::new()),
            AnswererKind::Script(script) => Arc::new(script),
            AnswererKind::BridgeCommand { command, dir } => {
                let mut process = std::process::Command::new(&command[0]);
                process.args(&command[1..]).current_dir(dir);
                Arc::new(BridgeAnswerer::spawn(process).await?)
            }
            AnswererKind::BridgeSocket(path) => Arc::new(BridgeAnswerer::connect(&path).await?),
            AnswererKind::Web(config) => {
                let exposed = !config.bind.is_loopback();
                let web = WebAnswerer::start(config).await?;
                let mut text = format!("answer in your browser: {}", web.url());
                if exposed {
                    text = format!(
                        "WARNING: the web answerer listens on {}, beyond this machine; anyone who \
                         can reach it and has the address below can answer for you. {text}",
                        web.address()
                    );
                }
                notice = Some(text);
                Arc::new(web)
            }
        };
        let placement = Placement {
            scope: self.scope,
            timeout: self.timeout,
            prepend: false,
        };
        Ok(Started {
            answerer,
            placement,
            notice,
        })
    }
}

fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("{text:?} is not a duration such as \"30s\" or \"5m\" ({e})"))
}
