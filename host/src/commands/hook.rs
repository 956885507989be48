//! `ask-user hook …`: an agent's own question tool, answered through the
//! user's answerers from the agent's hooks, a headless run, or beside its
//! own UI. The agents are [`ask_user::hook::CLIENTS`]; each is offered
//! where its [`Way`]s say: a subcommand (`hook claude-code`, what its hooks
//! run) and a value of `install` and `uninstall`, of `headless`, of `run`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ask_user::hook::{self, Answerers, Attached, Headless, HookClient, Reply, Way};
use ask_user::inbox::Asker;
use ask_user::{AskRequest, HostBuilder};
use clap::Subcommand;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::ask::read_arguments;
use super::{CliError, Component, Exit, say, start, stop_signal, user_config};

#[derive(Subcommand)]
pub enum Command {
    #[command(flatten)]
    Hook(RunHook),
    /// Run an agent headless (Claude Code: `claude -p`) on PROMPT, its
    /// questions asked through your answerers (the inbox, a script…) and
    /// answered back; prints its last message. Other tools' permission
    /// requests are denied: allow tools with the agent's own flags after `--`.
    Headless {
        #[arg(value_parser = client_parser(Way::Headless))]
        client: &'static dyn HookClient,
        /// What the agent is asked to do.
        prompt: String,
        /// The answerers, from this TOML file. Default: the user's config
        /// file when it exists.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The agent's program (default: `claude` for Claude Code).
        #[arg(long, value_name = "PROGRAM")]
        program: Option<PathBuf>,
        /// Print every line of the run's JSON stream, not only its last
        /// message.
        #[arg(long)]
        json: bool,
        /// More of the agent's own flags (`--allowedTools …`, `--model …`).
        #[arg(last = true, value_name = "AGENT FLAGS")]
        flags: Vec<std::ffi::OsString>,
    },
    /// Run an agent's own UI (Codex, OpenCode) with its questions asked
    /// through your answerers too (the inbox, a script…): whichever answers
    /// first wins. For an agent whose questions reach no hook.
    Run {
        #[arg(value_parser = client_parser(Way::Attached))]
        client: &'static dyn HookClient,
        /// The answerers, from this TOML file. Default: the user's config
        /// file when it exists.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The agent's program (default: `codex` for Codex, `opencode` for
        /// OpenCode).
        #[arg(long, value_name = "PROGRAM")]
        program: Option<PathBuf>,
        /// More of the agent's own flags (`--model …`, a prompt).
        #[arg(last = true, value_name = "AGENT FLAGS")]
        flags: Vec<std::ffi::OsString>,
    },
    /// Add the hooks to the agent's settings, merged with what is there.
    Install {
        #[arg(value_parser = client_parser(Way::Hooks))]
        client: &'static dyn HookClient,
        /// The settings file. Default: the agent's (~/.claude/settings.json
        /// for Claude Code).
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
    /// Take out exactly what `install` added.
    Uninstall {
        #[arg(value_parser = client_parser(Way::Hooks))]
        client: &'static dyn HookClient,
        /// The settings file. Default: the agent's (~/.claude/settings.json
        /// for Claude Code).
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
}

/// `ask-user hook <client>`, what a client's hooks run: one subcommand per
/// client of [`hook::CLIENTS`].
pub struct RunHook {
    client: &'static dyn HookClient,
    config: Option<PathBuf>,
}

impl clap::FromArgMatches for RunHook {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<RunHook, clap::Error> {
        let Some((name, matches)) = matches.subcommand() else {
            return Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand));
        };
        let client = hook::client(name)
            .filter(|client| client.ways().contains(&Way::Hooks))
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))?;
        Ok(RunHook {
            client,
            config: matches.get_one::<PathBuf>("config").cloned(),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = RunHook::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Subcommand for RunHook {
    fn augment_subcommands(command: clap::Command) -> clap::Command {
        let hooked = hook::CLIENTS
            .iter()
            .filter(|client| client.ways().contains(&Way::Hooks));
        hooked.fold(command, |command, client| {
            command.subcommand(
                clap::Command::new(client.name()).about(client.about()).arg(
                    clap::Arg::new("config")
                        .long("config")
                        .value_name("FILE")
                        .value_parser(clap::value_parser!(PathBuf))
                        .help(
                            "The answerers, from this TOML file. Default: the user's \
                                 config file when it exists.",
                        ),
                ),
            )
        })
    }

    fn augment_subcommands_for_update(command: clap::Command) -> clap::Command {
        RunHook::augment_subcommands(command)
    }

    fn has_subcommand(name: &str) -> bool {
        hook::client(name).is_some_and(|client| client.ways().contains(&Way::Hooks))
    }
}

/// The clients reached in `way`, by name, as a value on the command line.
fn client_parser(
    way: Way,
) -> impl clap::builder::TypedValueParser<Value = &'static dyn HookClient> {
    use clap::builder::TypedValueParser;
    let values = hook::CLIENTS
        .iter()
        .filter(move |client| client.ways().contains(&way))
        .map(move |client| {
            let value = clap::builder::PossibleValue::new(client.name());
            // A client run beside its UI says what `hook run` does with it;
            // a hooked client says it on its own subcommand.
            match way {
                Way::Attached => value.help(client.about()),
                _ => value,
            }
        });
    clap::builder::PossibleValuesParser::new(values)
        .map(|name| hook::client(&name).expect("one of the names"))
}

pub async fn run(command: Command, component: Component) -> Exit {
    let settings_path = |client: &dyn HookClient, path: Option<PathBuf>| {
        path.or_else(|| client.settings_path())
            .ok_or_else(|| CliError::new("no home folder: give --settings FILE"))
    };
    let state = ask_user::inbox::state_dir();
    match command {
        Command::Install { client, settings } => {
            let path = settings_path(client, settings)?;
            let program = super::program::lasting()?;
            let added = client.install(&path, &program, state.as_deref())?;
            say(&match added {
                true => format!("added ask-user's hooks to {}", path.display()),
                false => format!("ask-user's hooks are in {} already", path.display()),
            });
            // The hooks ask what the user's config names, never the
            // terminal (the agent has it): with nothing else, they ask
            // nobody, which is said now rather than found out later.
            let config = super::user_config(None, &ask_user::config::Registries::builtin())?;
            let asks = config.is_some_and(|c| c.answerers.iter().any(|a| a.kind != "terminal"));
            if !asks {
                let file = ask_user::config::Config::default_path()
                    .map_or("your config file".to_owned(), |p| p.display().to_string());
                say(&format!(
                    "{file} names no answerer the hooks can ask (the terminal is the agent's \
                     own), so every question stays at the agent's terminal: add one, e.g. \
                     [[answerer]] kind = \"inbox\" with `ask-user inbox serve` running"
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Uninstall { client, settings } => {
            let path = settings_path(client, settings)?;
            let removed = client.uninstall(&path, state.as_deref())?;
            say(&match removed {
                true => format!("took ask-user's hooks out of {}", path.display()),
                false => format!("no hook of ask-user's in {}", path.display()),
            });
            Ok(ExitCode::SUCCESS)
        }
        Command::Hook(RunHook { client, config }) => {
            let input = read_arguments(Path::new("-"), hook::MAX_INPUT_BYTES)?;
            let answerers = Chain { config, component };
            if let Some(output) = client.hook(&input, &answerers, stop_signal()).await? {
                println!("{output}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            client,
            config,
            program,
            flags,
        } => {
            let run = Attached {
                program: program.unwrap_or_else(|| client.program().into()),
                flags,
            };
            let answerers = Chain { config, component };
            Ok(
                match client.attached(run, &answerers, stop_signal()).await? {
                    true => ExitCode::SUCCESS,
                    false => ExitCode::FAILURE,
                },
            )
        }
        Command::Headless {
            client,
            prompt,
            config,
            program,
            json,
            flags,
        } => {
            let run = Headless {
                prompt,
                program: program.unwrap_or_else(|| client.program().into()),
                json,
                flags,
            };
            let answerers = Chain { config, component };
            Ok(
                match client.headless(run, &answerers, stop_signal()).await? {
                    true => ExitCode::SUCCESS,
                    false => ExitCode::FAILURE,
                },
            )
        }
    }
}

/// The answerers of the user's config (`config`, else the user's file),
/// started for each ask.
struct Chain {
    config: Option<PathBuf>,
    component: Component,
}

impl Answerers for Chain {
    fn ask<'a>(
        &'a self,
        client: &'a dyn HookClient,
        session: Option<&'a str>,
        asker: Asker,
        request: AskRequest,
        stop: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Reply, CliError>> {
        self.ask_elsewhere(client, session, asker, request, stop)
            .boxed()
    }

    fn say(&self, line: &str) {
        say(line);
    }
}

impl Chain {
    /// Asks `request` through the answerers but the terminal, which the
    /// agent has, until `stop`; the inbox shows `asker` as asking.
    /// `Ok(None)`: no such answerer.
    async fn ask_elsewhere(
        &self,
        client: &dyn HookClient,
        session: Option<&str>,
        asker: Asker,
        request: AskRequest,
        stop: &CancellationToken,
    ) -> Result<Reply, CliError> {
        let mut registries = ask_user::config::Registries::builtin();
        registries
            .kinds
            .register(ask_user::inbox::InboxKind::asking_as(asker));
        let Some(mut config) = user_config(self.config.as_deref(), &registries)? else {
            return Ok(None);
        };
        config.answerers.retain(|entry| entry.kind != "terminal");
        if config.answerers.is_empty() {
            return Ok(None);
        }
        let builder = HostBuilder::from_config(config).without_failed_answerers();
        let host = start(builder, self.component.clone()).await?;
        let id = hook::session_key(client, session)?;
        let call = host.seam().scoped_call(id);
        let answered = host.seam().ask(request, Some(call.agent()), stop).await;
        drop(call);
        host.close().await;
        Ok(Some(answered))
    }
}
