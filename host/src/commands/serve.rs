//! `ask-user mcp` and every other front end: the user's answerers started
//! behind a protocol, served until its peer leaves or the process stops.

use std::path::PathBuf;
use std::process::ExitCode;

use ask_user::HostBuilder;
use ask_user::front_end::FrontEnd;

use super::{Component, Exit, say, start, stop_requested, user_config};

#[derive(clap::Args)]
pub struct Serve<F: FrontEnd + clap::Args> {
    /// The answerers behind the client's forms, from this TOML file.
    /// Default: the user's config file when it exists. The terminal is
    /// used only when the file names it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(flatten)]
    front_end: F,
}

impl<F: FrontEnd + clap::Args> Serve<F> {
    pub async fn run(mut self, component: Component) -> Exit {
        let config = user_config(
            self.config.as_deref(),
            &ask_user::config::Registries::builtin(),
        )?
        .unwrap_or_default();
        // An answerer that cannot start (a web port taken) is reported and
        // left out: the tool stays in the client's session.
        self.front_end.configure(&config);
        let builder = HostBuilder::from_config(config).without_failed_answerers();
        let host = start(builder, component).await?;
        let served = self.front_end.serve(&host, stop_requested(), say).await;
        host.close().await;
        served.map(|()| ExitCode::SUCCESS)
    }
}
