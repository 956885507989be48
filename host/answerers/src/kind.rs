//! The registry of answerer kinds: what `kind = "…"` in a config file names.

use std::fmt::Debug;
use std::future::Future;
use std::ops::Range;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use ask_user_seam::Answerer;
use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::{DeValue, ValueDeserializer};

/// One kind of answerer a config file can name.
pub trait AnswererKind: Send + Sync + 'static {
    /// The `kind = "…"` that names it.
    fn name(&self) -> &'static str;

    /// Reads this kind's own keys (the entry less `kind`, `scope` and
    /// `timeout`, see [`KindTable::read`]) and prepares the answerer, loading
    /// any file it names. `base` is the config file's folder: relative paths
    /// are relative to it. The error says what is wrong, in the words of the
    /// file; a plain string is placed at the entry's line.
    fn configure(&self, table: KindTable<'_>, base: &Path)
    -> Result<Box<dyn Setup>, ConfigProblem>;
}

/// An answerer configured and ready to start.
pub trait Setup: Send + Debug {
    /// Starts it: spawns a process, connects a socket, binds a server.
    fn start(self: Box<Self>) -> Pin<Box<dyn Future<Output = std::io::Result<Started>> + Send>>;
}

/// A started answerer.
pub struct Started {
    pub answerer: Arc<dyn Answerer>,
    /// What to tell the human, e.g. the web page's address.
    pub notice: Option<String>,
    /// A page where the human can answer, to send them to (the web
    /// answerer's).
    pub page: Option<Page>,
}

/// A page where the human can answer, which a front end may send them to
/// (an MCP client offers its address).
#[derive(Clone)]
pub struct Page {
    /// Its address, token included.
    pub url: String,
    offer: Arc<dyn Fn() -> Box<dyn Send + Sync> + Send + Sync>,
}

impl Page {
    /// The page at `url`; `offer` makes the guard of [`Page::offered`].
    pub fn new(
        url: String,
        offer: impl Fn() -> Box<dyn Send + Sync> + Send + Sync + 'static,
    ) -> Self {
        Page {
            url,
            offer: Arc::new(offer),
        }
    }

    /// A person has been sent to the page: while the guard lives, the page
    /// waits for them, whatever its grace period (which starts again when
    /// the guard goes).
    pub fn offered(&self) -> Box<dyn Send + Sync> {
        (self.offer)()
    }
}

impl Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page").finish_non_exhaustive()
    }
}

/// An answerer that needs no starting, as a [`Setup`].
pub fn ready(answerer: impl Answerer) -> Box<dyn Setup> {
    Box::new(Ready(Arc::new(answerer)))
}

struct Ready(Arc<dyn Answerer>);

impl Debug for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ready({})", self.0.name())
    }
}

impl Setup for Ready {
    fn start(self: Box<Self>) -> Pin<Box<dyn Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(std::future::ready(Ok(Started {
            answerer: self.0,
            notice: None,
            page: None,
        })))
    }
}

/// Answerers started together and raced as one link ([`ask_user_seam::Race`]):
/// the first to answer wins. Their notices are kept in order.
pub fn race(setups: Vec<Box<dyn Setup>>) -> Box<dyn Setup> {
    Box::new(RaceSetup(setups))
}

#[derive(Debug)]
struct RaceSetup(Vec<Box<dyn Setup>>);

impl Setup for RaceSetup {
    fn start(self: Box<Self>) -> Pin<Box<dyn Future<Output = std::io::Result<Started>> + Send>> {
        Box::pin(async move {
            let mut answerers: Vec<Arc<dyn Answerer>> = Vec::new();
            let (mut notices, mut page) = (Vec::new(), None);
            for setup in self.0 {
                match setup.start().await {
                    Ok(started) => {
                        notices.extend(started.notice);
                        page = page.or(started.page);
                        answerers.push(started.answerer);
                    }
                    Err(error) => {
                        for answerer in &answerers {
                            answerer.close().await;
                        }
                        return Err(error);
                    }
                }
            }
            Ok(Started {
                answerer: Arc::new(ask_user_seam::Race::new(answerers)),
                notice: (!notices.is_empty()).then(|| notices.join("; ")),
                page,
            })
        })
    }
}

/// One `[[answerer]]`'s own keys, with where each stands in the file.
pub struct KindTable<'a>(Spanned<DeValue<'a>>);

impl<'a> KindTable<'a> {
    /// The keys of `table`, which stands at `span` of the file.
    pub fn new(span: std::ops::Range<usize>, table: toml::de::DeTable<'a>) -> Self {
        KindTable(Spanned::new(span, DeValue::Table(table)))
    }

    /// Reads the keys into the kind's own config type. Give the type
    /// `#[serde(deny_unknown_fields)]`: a key it does not take is an error,
    /// at that key's line, that lists the keys it does.
    pub fn read<T: DeserializeOwned>(self, kind: &str) -> Result<T, ConfigProblem> {
        T::deserialize(ValueDeserializer::from(self.0)).map_err(|e| ConfigProblem {
            message: format!("a {kind} answerer: {}", e.message().trim()),
            span: e.span(),
        })
    }
}

/// What is wrong in a config file, and where when it is known (byte
/// offsets into the file).
#[derive(Debug)]
pub struct ConfigProblem {
    pub message: String,
    pub span: Option<Range<usize>>,
}

impl From<String> for ConfigProblem {
    fn from(message: String) -> Self {
        ConfigProblem {
            message,
            span: None,
        }
    }
}

impl From<&str> for ConfigProblem {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

/// The answerer kinds a config file may name.
pub struct Kinds {
    kinds: Vec<Box<dyn AnswererKind>>,
}

impl Kinds {
    /// The kinds of this crate: terminal and web (each with its feature),
    /// script, bridge. (The `ask-user` command's configuration adds the
    /// inbox's.)
    pub fn builtin() -> Self {
        let mut kinds = Kinds { kinds: Vec::new() };
        #[cfg(feature = "terminal")]
        kinds.register(crate::terminal::TerminalKind);
        kinds.register(crate::script::ScriptKind);
        kinds.register(crate::bridge::BridgeKind);
        #[cfg(feature = "web")]
        kinds.register(crate::web::WebKind);
        kinds
    }

    /// Adds `kind`, replacing a kind of the same name.
    pub fn register(&mut self, kind: impl AnswererKind) {
        self.kinds.retain(|k| k.name() != kind.name());
        self.kinds.push(Box::new(kind));
    }

    /// The kind named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn AnswererKind> {
        self.kinds.iter().find(|k| k.name() == name).map(|k| &**k)
    }

    /// The names of every kind, in registration order.
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds.iter().map(|k| k.name()).collect()
    }
}
