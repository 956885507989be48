//! `ask-user inbox …`: serve the inbox, list and answer its questions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ask_user::ErrorCode;
use ask_user::answerers::script;
use ask_user::answerers::terminal::TerminalAnswerer;
use ask_user::inbox::{InboxClient, InboxConfig, InboxServer};
use ask_user::text::clean;
use clap::Subcommand;
use tokio_util::sync::CancellationToken;

use super::service;
use super::token::{self, DATABASE_ENV};
use super::{CliError, Exit, emit, listing, load_config, say, stop_requested};

#[derive(Subcommand)]
pub enum Command {
    /// Serve the inbox until stopped: its page, and the questions of every
    /// agent whose config has an answerer of kind "inbox".
    Serve {
        /// The page's port (default: any free one).
        #[arg(long, value_name = "PORT")]
        port: Option<u16>,
        /// Retention and notifications from this file's [inbox] table
        /// (default: the user's config file when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Where the questions are kept, as a URL (also `[inbox] database`):
        /// a team's PostgreSQL database (postgres://…), which any number of
        /// servers share; or sqlite:PATH, one user's inbox in that file.
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: Option<String>,
        /// Where a team's inbox serves its API (default 127.0.0.1, any
        /// free port).
        #[arg(long, value_name = "ADDRESS")]
        listen: Option<std::net::SocketAddr>,
        /// A team's inbox: the address its notifications give (the reverse
        /// proxy's, one a phone can open), also `[inbox] public_url`.
        #[arg(long, value_name = "URL")]
        public_url: Option<String>,
    },
    /// List the questions waiting in the inbox.
    List {
        /// Also the recent questions that left (answered, cancelled,
        /// withdrawn, expired).
        #[arg(long)]
        all: bool,
        /// As JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        team: TeamArgs,
    },
    /// Print a link that opens the inbox's page in a browser. It works
    /// once: run this again for another browser.
    Page,
    /// Keep this user's inbox running: write a systemd user unit (Linux)
    /// or a launchd agent (macOS) that starts `inbox serve` at login and
    /// again after a crash, and say the line that starts it now.
    InstallService,
    /// Take out exactly the service `install-service` wrote.
    UninstallService,
    /// Answer from your phone, through ntfy (a fresh topic, and a QR code
    /// to subscribe the app) or a Telegram bot of yours: the channel
    /// written into your config, and a test to press on the phone.
    Phone(super::phone::Args),
    /// Answer a waiting question: at this terminal, or from a file.
    Answer {
        /// The question's id, as `inbox list` shows it.
        id: String,
        /// The answers, shaped {"answers":[{"id":…,"selected":[…],"custom":…}]};
        /// without it, the question is asked at this terminal.
        #[arg(long, value_name = "FILE")]
        answers: Option<PathBuf>,
        #[command(flatten)]
        team: TeamArgs,
    },
    /// Dismiss a question without answering it: its agent is told you will
    /// not answer (ASK_CANCELLED), as Dismiss on the page does.
    Dismiss {
        /// The question's id, as `inbox list` shows it.
        id: String,
        #[command(flatten)]
        team: TeamArgs,
    },
    /// A team's identities: tokens for agents and people.
    Token {
        #[command(subcommand)]
        command: token::Command,
    },
}

/// The variable that holds a person's token for a team's inbox.
const TOKEN_ENV: &str = "ASK_USER_INBOX_TOKEN";

#[derive(clap::Args)]
pub struct TeamArgs {
    /// A team's inbox at this URL, with the person's token from
    /// ASK_USER_INBOX_TOKEN (default: this user's inbox).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

/// `ask-user inbox …`.
pub async fn run(command: Command) -> Exit {
    let state_dir = ask_user::inbox::state_dir().ok_or_else(|| {
        CliError::new("no state directory for the inbox: set ASK_USER_STATE_DIR or HOME")
    })?;
    let client = |team: TeamArgs| -> Result<InboxClient, CliError> {
        match team.url {
            Some(url) => {
                let token = std::env::var(TOKEN_ENV).map_err(|_| {
                    CliError::new(format!("a team's inbox needs your token in {TOKEN_ENV}"))
                })?;
                Ok(InboxClient::remote(&url, token)?)
            }
            None => Ok(InboxClient::new(&state_dir)?),
        }
    };
    match command {
        Command::Serve {
            port,
            config,
            database,
            listen,
            public_url,
        } => {
            // Every waiting agent holds a connection.
            raise_open_files();
            let settings = load_config(config.as_deref())?.inbox;
            let mut config = settings.apply(InboxConfig::new(&state_dir));
            config.port = port.or(config.port);
            config.database = database.or(config.database);
            config.public_url = public_url.or(config.public_url);
            if let Some(listen) = listen {
                config.bind = listen.ip();
                config.port = Some(listen.port());
            }
            let exposed = !config.bind.is_loopback();
            let server = InboxServer::start(config).await?;
            match server.is_team() {
                true => say_team(&server, exposed),
                false => say_local(&server, exposed, &state_dir)?,
            }
            stop_requested().await;
            server.stop().await;
            Ok(ExitCode::SUCCESS)
        }
        Command::List { all, json, team } => {
            let list = client(team)?.list(all).await?;
            if json {
                emit(&list)?;
            } else {
                listing::print_questions(&list.questions)?;
            }
            for row in &list.unreadable {
                say(&format!(
                    "question {} cannot be read by this version and was left out: {}",
                    clean(&row.id, false),
                    clean(&row.why, false)
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::InstallService => service::install(),
        Command::UninstallService => service::uninstall(),
        Command::Phone(args) => super::phone::run(args).await,
        Command::Page => {
            let link = client(TeamArgs { url: None })?.page_link().await?;
            println!("{link}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Answer { id, answers, team } => {
            let client = client(team)?;
            let answers = match answers {
                Some(file) => {
                    script::read_answers_file(&file).and_then(|text| script::read_answers(&text))?
                }
                None => answer_here(&client, &id).await?,
            };
            client.answer(&id, &answers).await?;
            say(&format!("answered {id}"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Dismiss { id, team } => {
            client(team)?.dismiss(&id).await?;
            say(&format!("dismissed {id}"));
            Ok(ExitCode::SUCCESS)
        }
        Command::Token { command } => token::run(command, &state_dir).await,
    }
}

/// `inbox answer ID` without `--answers`: the question, asked at this
/// terminal with the same prompt as `ask-user ask`; the answers given.
async fn answer_here(client: &InboxClient, id: &str) -> Result<Vec<ask_user::Answer>, CliError> {
    use ask_user::inbox::store::State;
    let question = client
        .question(id, std::time::Duration::ZERO)
        .await?
        .ok_or_else(|| {
            CliError::new(format!(
                "the inbox has no question {id:?}; `ask-user inbox list` shows them"
            ))
        })?;
    if question.state != State::Waiting {
        return Err(CliError::new(format!(
            "question {id} is no longer waiting ({})",
            question.state.as_str()
        )));
    }
    let seam = ask_user::UserQuestions::new(std::sync::Arc::default());
    seam.waterfall()
        .register(TerminalAnswerer::new(), ask_user::Placement::default());
    let request = ask_user::AskRequest {
        questions: question.questions,
    };
    seam.ask(request, None, &CancellationToken::new())
        .await
        .map_err(|error| match error.code() {
            Some(ErrorCode::NoProvider) => {
                CliError::new("no terminal to ask at: give the answers with --answers FILE")
            }
            Some(ErrorCode::AskCancelled) => {
                CliError::new(format!("dismissed: nothing was sent, and {id} still waits"))
            }
            _ => CliError::new(format!("nothing was sent: {}", error.message())),
        })
}

/// Raises this process's soft limit of open files to its hard limit: a
/// server holds a descriptor per waiting agent.
fn raise_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// What one of a team's inbox servers tells the person who started it.
fn say_team(server: &InboxServer, exposed: bool) {
    if exposed {
        say(&format!(
            "WARNING: the team's inbox listens beyond this machine at {} without TLS: tokens \
             travel in every request, so put a reverse proxy with TLS in front and listen on \
             127.0.0.1",
            server.address()
        ));
    }
    say(&format!(
        "the team's inbox serves at {} to agents' tokens, and to people who open it in a \
         browser and sign in (Ctrl-C stops; questions are kept in the database)",
        server.address()
    ));
}

/// What one user's inbox tells its user: where it serves from, and a link
/// that opens its page, to a person at a terminal only (never into a log).
fn say_local(server: &InboxServer, exposed: bool, state_dir: &Path) -> Result<(), CliError> {
    if exposed {
        say(&format!(
            "WARNING: the inbox's page listens beyond this machine at {}; anyone who \
             can reach it and has a link can answer for you",
            server.address()
        ));
    }
    if let Some(agents) = server.agents_address() {
        say(&format!(
            "agents with a token of this inbox's (ask-user inbox token create NAME --role \
             agent) reach it at http://{agents}"
        ));
    }
    say(&format!(
        "the inbox serves {} (Ctrl-C stops; questions are kept)",
        state_dir.display()
    ));
    use std::io::IsTerminal;
    let link = match std::io::stderr().is_terminal() {
        true => server.page_link()?,
        false => format!(
            "{} (`ask-user inbox page` prints a link that opens it)",
            server.address()
        ),
    };
    say(&format!("answer at {link}"));
    Ok(())
}
