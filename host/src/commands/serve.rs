//! `ask-user mcp` and every other front end: the user's answerers started
//! behind a protocol, served until its peer leaves or the process stops.

use std::process::ExitCode;

use ask_user::HostBuilder;
use ask_user::front_end::{FrontEnd, Serve, Serving};

use super::{Component, Exit, say, start, stop_requested, user_config};

/// Runs the front end chosen on the command line, with the tool
/// `component` (the built-in one when `None`).
pub struct Runner {
    pub component: Component,
}

impl Serving for Runner {
    type Output = Exit;

    async fn serve<F: FrontEnd>(self, serve: Serve<F>) -> Exit {
        let Serve {
            config,
            mut front_end,
        } = serve;
        let mut registries = ask_user::config::Registries::builtin();
        front_end.kinds(&mut registries.kinds);
        let config = user_config(config.as_deref(), &registries)?.unwrap_or_default();
        front_end.configure(config.front_ends.of::<F>());
        // An answerer that cannot start (a web port taken) is reported and
        // left out: the tool stays in the client's session.
        let builder = HostBuilder::from_config(config).without_failed_answerers();
        let host = start(builder, self.component).await?;
        let served = front_end.serve(&host, stop_requested(), say).await;
        host.close().await;
        served.map(|()| ExitCode::SUCCESS)
    }
}
