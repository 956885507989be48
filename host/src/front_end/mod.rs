//! Front ends: the protocols through which an agent's client reaches the
//! tool, each serving a [`Host`] until its peer leaves or the process is
//! asked to stop (spin's `Trigger` is the model). MCP is the first; a new
//! protocol is a module implementing [`FrontEnd`] and a subcommand of the
//! `ask-user` command that serves it.

pub mod mcp;

use std::future::Future;

use crate::{CliError, Config, Host};

/// A protocol that serves the tool.
pub trait FrontEnd: Send {
    /// Reads its own table of the user's config (`[mcp]`), before the
    /// config's answerers start.
    fn configure(&mut self, config: &Config);

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
