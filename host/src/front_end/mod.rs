//! Front ends: the protocols through which an agent's client reaches the
//! tool, each serving a [`Host`] until its peer leaves or the process is
//! asked to stop (spin's `Trigger` is the model). MCP is the first.
//!
//! A new protocol is a module implementing [`FrontEnd`] and one entry of
//! [`front_ends!`] below: that makes it a subcommand of the `ask-user`
//! command ([`FrontEnds`]) and its table of the config file (checked by
//! its settings' type when the file is read, [`Tables`]).

pub mod mcp;

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use toml::de::{DeValue, ValueDeserializer};

use crate::answerers::ConfigProblem;
use crate::{CliError, Host};

/// A protocol that serves the tool.
pub trait FrontEnd: clap::Args + Send {
    /// Its table of the user's config file (`mcp`: `[mcp]`).
    const TABLE: &'static str;

    /// What its table holds; no table is the default.
    type Settings: DeserializeOwned + Default + Clone + Send + Sync + 'static;

    /// Takes its settings, before the config's answerers start.
    fn configure(&mut self, settings: Self::Settings);

    /// Puts its own answerer kinds in place of the built-in ones, before
    /// the config is read (`mcp` on stdio: an inbox that names the client
    /// it serves). None by default.
    fn kinds(&mut self, _kinds: &mut crate::answerers::Kinds) {}

    /// Serves `host` until its peer leaves or `stop` resolves, then
    /// returns (the caller closes the host). `say` tells the human one
    /// line (where it serves, what it waits for).
    fn serve(
        self,
        host: &Host,
        stop: impl Future<Output = ()> + Send + 'static,
        say: fn(&str),
    ) -> impl Future<Output = Result<(), CliError>> + Send;
}

/// A front end's subcommand: the front end's own arguments, and the config
/// file to read.
#[derive(clap::Args)]
pub struct Serve<F: FrontEnd> {
    /// The answerers behind the client's forms, from this TOML file.
    /// Default: the user's config file when it exists. The terminal is
    /// used only when the file names it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub front_end: F,
}

/// What runs the front end chosen on the command line (the `ask-user`
/// command does: it reads the config and starts the answerers).
pub trait Serving {
    type Output;

    fn serve<F: FrontEnd>(self, serve: Serve<F>) -> impl Future<Output = Self::Output>;
}

/// The front ends, each a subcommand and a config table: written once.
macro_rules! front_ends {
    ($($(#[doc = $doc:literal])* $name:ident($front_end:ty),)*) => {
        /// The front ends, one subcommand each.
        #[derive(clap::Subcommand)]
        pub enum FrontEnds {
            $($(#[doc = $doc])* $name(Serve<$front_end>),)*
        }

        impl FrontEnds {
            /// Runs the one chosen with `serving`.
            pub async fn run<S: Serving>(self, serving: S) -> S::Output {
                match self {
                    $(FrontEnds::$name(serve) => serving.serve(serve).await,)*
                }
            }
        }

        impl Tables {
            /// Every front end's table.
            pub fn builtin() -> Self {
                Tables(vec![$(Table::of::<$front_end>(),)*])
            }
        }
    };
}

front_ends! {
    /// Serve the tool to an MCP client over standard input and output: the
    /// client's user answers in the client's own form (elicitation).
    Mcp(mcp::Mcp),
}

/// The front ends' tables a config file may have.
pub struct Tables(Vec<Table>);

/// A front end's table: its name, and how it is read.
pub(crate) struct Table {
    name: &'static str,
    reader: fn(toml::Spanned<DeValue<'_>>) -> Result<Given, ConfigProblem>,
}

impl Table {
    fn of<F: FrontEnd>() -> Self {
        Table {
            name: F::TABLE,
            reader: |table| {
                let settings = F::Settings::deserialize(ValueDeserializer::from(table));
                let settings = settings.map_err(|e| ConfigProblem {
                    message: format!("[{}]: {}", F::TABLE, e.message().trim()),
                    span: e.span(),
                })?;
                Ok(Box::new(settings))
            },
        }
    }

    /// Reads `table` by the front end's settings' type, into `settings`.
    pub(crate) fn read(
        &self,
        table: toml::Spanned<DeValue<'_>>,
        settings: &mut Settings,
    ) -> Result<(), ConfigProblem> {
        settings.0.insert(self.name, (self.reader)(table)?);
        Ok(())
    }
}

impl Tables {
    /// The tables' names, as a config file writes them (`[mcp]`).
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(|t| format!("[{}]", t.name)).collect()
    }

    /// The front end whose table `key` of a config file is, if any.
    pub(crate) fn named(&self, key: &str) -> Option<&Table> {
        self.0.iter().find(|t| t.name == key)
    }
}

/// One front end's settings, as its table gave them.
type Given = Box<dyn Any + Send + Sync>;

/// The front ends' settings a config file gave, each read when the file
/// was.
#[derive(Default)]
pub struct Settings(HashMap<&'static str, Given>);

impl Settings {
    /// `F`'s settings: its table as the file gave it, or the default.
    pub fn of<F: FrontEnd>(&self) -> F::Settings {
        let given = self.0.get(F::TABLE);
        let given = given.and_then(|settings| settings.downcast_ref::<F::Settings>());
        given.cloned().unwrap_or_default()
    }
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}
