//! `ask-user`: run the ask_user_question tool component from the command line.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ask_user::answerers::script::{self, ScriptAnswerer};
use ask_user::answerers::terminal::TerminalAnswerer;
use ask_user::answerers::web::WebConfig;
use ask_user::answerers::{Kinds, race, ready};
use ask_user::inbox::{InboxClient, InboxConfig, InboxServer};
use ask_user::mcp::{Forms, McpHttp, McpServer};
use ask_user::text::clean;
use ask_user::{AnswererEntry, CodeCache, Config, ErrorCode, Host, HostBuilder, ToolResult};
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;

/// Run the `ask_user_question` tool: the tool an AI agent calls when it must
/// stop and ask its human a question, as a sandboxed WebAssembly component.
#[derive(Parser)]
#[command(
    version,
    after_help = "\
Examples:
  ask-user schema
      Print the tool definition to hand to a model.
  ask-user ask examples/deploy.json
      Ask the questions in deploy.json at this terminal; print the tool result.
  ask-user ask examples/deploy.json > result.json
      The same, with only the result in result.json (the terminal is still asked).
  ask-user ask examples/deploy.json --answers examples/deploy.answers.json
      Answered from a file first; what it does not answer goes to the terminal.
  ask-user ask examples/deploy.json --web
      Answer in a browser or at this terminal, whichever is first: open the address it
      prints (loopback, with a token).
  ask-user ask examples/deploy.json --config examples/config.toml
      Answerers from a config file (script rules, a bridge process, the terminal).
  echo '{\"questions\":[]}' | ask-user ask -
      Arguments from standard input (this one fails with EMPTY_QUESTIONS).
  ask-user mcp
      An MCP server on stdio: register it in Claude Code, Codex, Cursor, VS Code or goose.

Answerers: with --config FILE, or else $XDG_CONFIG_HOME/ask-user/config.toml
(~/.config/ask-user/config.toml) when it exists, the chain is that file's;
otherwise it is the terminal alone. --answers goes first in any chain. With no
terminal (a service, CI), the terminal answerer passes, and a call nobody
answers ends with NO_PROVIDER.

Exit status: 0 answered, 1 the tool returned an error result (still printed
as JSON on standard output), 2 bad usage or an unreadable file.

Logs: warnings go to standard error; ASK_USER_LOG sets the level
(e.g. ASK_USER_LOG=debug, or ask_user_seam=debug for each ask)."
)]
struct Cli {
    /// A tool component to run instead of the built-in one (a .wasm
    /// component of the ask-user-tool world of dsh:ask-user@0.1.0).
    #[arg(long, global = true, value_name = "FILE")]
    component: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the tool definition as JSON: name, description, inputSchema, outputSchema.
    Schema,
    /// Write the built-in tool component (a .wasm component of the
    /// ask-user-tool world of dsh:ask-user@0.1.0), for a host in another
    /// language: no Rust toolchain needed to get it.
    Component {
        /// Write it to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Run one tool call as a root agent and print the tool result (MCP CallToolResult JSON).
    Ask {
        /// The tool arguments, a JSON object such as
        /// {"questions":[{"id":"pkg","question":"Which package manager?"}]}; `-` reads standard input.
        #[arg(value_name = "ARGUMENTS")]
        file: PathBuf,
        /// Answer from this file first, shaped {"answers":[{"id":…,"selected":[…],"custom":…}]}.
        /// A request it does not answer in full goes on to the next answerer.
        #[arg(long, value_name = "FILE")]
        answers: Option<PathBuf>,
        /// The answerer chain from this TOML file (see the README).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Also answer in a browser: serves a page on 127.0.0.1 and prints its
        /// address. The question is offered on the page and at this terminal
        /// at once; the first answer wins.
        #[arg(long)]
        web: bool,
        /// The port for --web (default: any free port).
        #[arg(long, value_name = "PORT", requires = "web")]
        web_port: Option<u16>,
        /// Append a JSON line per ask to this file: time, caller, questions,
        /// which answerer claimed, outcome, duration.
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Give up waiting for an answer after this long (ASK_TIMED_OUT): "15m",
        /// "90s", "1h 30m" or plain seconds, as in the config file. Default: wait
        /// as long as it takes.
        #[arg(long, value_name = "DURATION")]
        timeout: Option<String>,
        /// The root agent's session key: an inbox groups questions by it, and
        /// a session that asks the identical questions again gets the stored
        /// question (and any answer given meanwhile). Default: a fresh,
        /// random one. Give the same key only to runs that are the same agent
        /// (a run resumed after a crash): they share its questions and answers.
        #[arg(long, value_name = "KEY")]
        session: Option<String>,
    },
    /// Serve the tool to an MCP client over standard input and output: the
    /// client's user answers in the client's own form (elicitation).
    Mcp {
        /// The answerers behind the client's forms, from this TOML file.
        /// Default: the user's config file when it exists. The terminal is
        /// used only when the file names it.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8766)
        /// instead of stdio, with the bearer token in ASK_USER_MCP_TOKEN (a
        /// call waiting on the inbox then survives a restart), else one
        /// printed at start.
        #[arg(long, value_name = "ADDRESS")]
        http: Option<std::net::SocketAddr>,
    },
    /// The inbox: every agent's questions in one place, kept on disk,
    /// answered from one page or the command line.
    Inbox {
        #[command(subcommand)]
        command: InboxCommand,
    },
    /// Answer an agent's own question tool through your answerers (the
    /// inbox, a script…), from the agent's hooks.
    Hook {
        #[command(subcommand)]
        command: HookCommand,
    },
}

#[derive(Subcommand)]
enum HookCommand {
    /// What Claude Code's hooks run: reads the hook's JSON on standard
    /// input and, for an AskUserQuestion or an MCP server's form, asks your
    /// answerers (never the terminal: Claude Code has it) and prints the
    /// answers as the hook's output. Nothing answered, nothing printed:
    /// Claude Code asks at its terminal.
    ClaudeCode {
        /// The answerers, from this TOML file. Default: the user's config
        /// file when it exists.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Run Claude Code headless (`claude -p`) on PROMPT, its questions
    /// asked through your answerers (the inbox, a script…) and answered
    /// back; prints its last message. Other tools' permission requests are
    /// denied: allow tools with Claude Code's own flags after `--`.
    Headless {
        client: HookClient,
        /// What Claude Code is asked to do.
        prompt: String,
        /// The answerers, from this TOML file. Default: the user's config
        /// file when it exists.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Claude Code's program.
        #[arg(long, value_name = "PROGRAM", default_value = "claude")]
        program: PathBuf,
        /// Print every line of the run's JSON stream, not only its last
        /// message.
        #[arg(long)]
        json: bool,
        /// More of Claude Code's flags (`--allowedTools …`, `--model …`).
        #[arg(last = true, value_name = "CLAUDE FLAGS")]
        flags: Vec<std::ffi::OsString>,
    },
    /// Add the hook to Claude Code's settings, merged with what is there.
    Install {
        client: HookClient,
        /// The settings file. Default: ~/.claude/settings.json.
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
    /// Take out exactly what `install` added.
    Uninstall {
        client: HookClient,
        /// The settings file. Default: ~/.claude/settings.json.
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
}

/// The agents whose hooks can be installed.
#[derive(Clone, Copy, clap::ValueEnum)]
enum HookClient {
    ClaudeCode,
}

#[derive(Subcommand)]
enum InboxCommand {
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
        /// A team's inbox: its PostgreSQL database, which any number of
        /// servers share (also `[inbox] database`).
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
    /// A team's identities: tokens for agents and people.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

/// The variable that may hold a team's database URL.
const DATABASE_ENV: &str = "ASK_USER_INBOX_DATABASE";

/// The variable that holds a person's token for a team's inbox.
const TOKEN_ENV: &str = "ASK_USER_INBOX_TOKEN";

#[derive(clap::Args)]
struct TeamArgs {
    /// A team's inbox at this URL, with the person's token from
    /// ASK_USER_INBOX_TOKEN (default: this user's inbox).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a token; it is printed once, and stored only as a digest.
    Create {
        /// Its name: who the inbox says asked or answered.
        name: String,
        /// An agent asks and waits; a person lists and answers.
        #[arg(long, value_enum)]
        role: TokenRole,
        /// A person's groups, comma-separated: they answer the questions
        /// whose audience names one of them (or has none).
        #[arg(long, value_delimiter = ',', value_name = "GROUPS")]
        groups: Vec<String>,
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: String,
    },
    /// List the tokens (their names, roles and groups; never a token).
    List {
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: String,
    },
    /// Revoke a token, on every server at once.
    Revoke {
        name: String,
        #[arg(long, value_name = "URL", env = DATABASE_ENV, hide_env_values = true)]
        database: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum TokenRole {
    Agent,
    Person,
}

/// A reason to exit with status 2.
struct Usage(String);

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            say(&format!("cannot start: {error}"));
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(Usage(reason)) => {
            // One line, whatever the underlying error looks like.
            let reason: Vec<&str> = reason.split_whitespace().collect();
            say(&reason.join(" "));
            ExitCode::from(2)
        }
    };
    // Everything that must finish has (results written, answerers closed);
    // a read of standard input may still hold a thread until input comes,
    // which must not keep the process alive (`ask-user mcp` on a signal).
    runtime.shutdown_background();
    code
}

/// `tracing` to standard error: warnings, or what `ASK_USER_LOG` says.
fn init_logging() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::prelude::*;
    let filter = std::env::var("ASK_USER_LOG")
        .ok()
        .and_then(|spec| spec.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::WARN));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A host may close our standard error: a log line that cannot be
        // written is dropped, never reported with a panicking eprintln.
        .log_internal_errors(false)
        .without_time()
        .finish()
        .with(filter)
        .init();
}

async fn run(cli: Cli) -> Result<ExitCode, Usage> {
    let component = match &cli.component {
        Some(path) => Some(
            std::fs::read(path)
                .map_err(|e| Usage(format!("cannot read the component {}: {e}", path.display())))?,
        ),
        None => None,
    };
    let (builder, arguments) = match cli.command {
        Command::Schema => (HostBuilder::new(), None),
        Command::Component { out } => return write_component(out.as_deref()),
        Command::Inbox { command } => return inbox(command).await,
        Command::Hook { command } => return hook(command, component).await,
        Command::Mcp { config, http } => {
            let config =
                user_config(config.as_deref(), &ask_user::config::kinds())?.unwrap_or_default();
            let forms = config.mcp.forms;
            // An answerer that cannot start (a web port taken) is reported
            // and left out: the tool stays in the client's session.
            let builder = HostBuilder::from_config(config).without_failed_answerers();
            return serve_mcp(start(builder, component).await?, forms, http).await;
        }
        Command::Ask {
            file,
            answers,
            config,
            web,
            web_port,
            audit,
            timeout,
            session,
        } => {
            let mut config = load_config(config.as_deref())?;
            if let Some(path) = audit {
                config.audit = Some(path);
            }
            if let Some(timeout) = timeout {
                let limit = ask_user::config::duration(&timeout)
                    .and_then(|limit| match limit.is_zero() {
                        true => Err(format!("{timeout:?} is no time at all; give more")),
                        false => Ok(limit),
                    })
                    .map_err(|problem| Usage(format!("--timeout: {problem}")))?;
                config.timeout = Some(limit);
            }
            let limit = config.sandbox.max_arguments_bytes;
            let arguments = match arguments_text(read_arguments(&file, limit)?, limit) {
                Ok(text) => text,
                Err(problem) => {
                    return finish(&ToolResult::coded(ErrorCode::InvalidArgs, &problem));
                }
            };
            let mut builder = HostBuilder::from_config(config);
            if let Some(path) = answers {
                let script = ScriptAnswerer::from_file(&path).map_err(|e| Usage(e.to_string()))?;
                builder = builder.answerer(AnswererEntry::new("script", ready(script)));
            }
            if web {
                // Ahead of the configured chain: the human asked for the
                // browser. The terminal is offered at the same time (it
                // drops out where there is none); the first answer wins.
                let page = WebConfig {
                    port: web_port.unwrap_or(0),
                    grace: None,
                    // Not the session's random key: where it asks from.
                    asker: std::env::current_dir()
                        .ok()
                        .map(|dir| format!("ask-user in {}", ask_user::text::folder(&dir))),
                    ..WebConfig::default()
                };
                let both = race(vec![Box::new(page), ready(TerminalAnswerer::new())]);
                builder = builder.answerer(AnswererEntry::new("web", both));
            }
            // A fresh session: random, so that no other process (here or
            // on another machine) is ever taken for this one.
            let session = match session {
                Some(session) => session,
                None => ask_user::new_id("ask-").map_err(|e| Usage(e.to_string()))?,
            };
            (builder, Some((session, arguments)))
        }
    };
    let host = start(builder, component).await?;
    let Some((session, arguments)) = arguments else {
        emit(host.runtime().definition())?;
        return Ok(ExitCode::SUCCESS);
    };

    let call = host.seam().scoped_call(session);
    let result = host
        .runtime()
        .call(call.agent(), &stop_signal(), &arguments)
        .await;
    drop(call);
    host.close().await;
    finish(&result)
}

/// `ask-user hook …`.
async fn hook(command: HookCommand, component: Option<Vec<u8>>) -> Result<ExitCode, Usage> {
    use ask_user::hook::{claude_code, headless, settings, waiting};
    let settings_path = |path: Option<PathBuf>| {
        path.or_else(settings::default_path)
            .ok_or_else(|| Usage("no home folder: give --settings FILE".to_owned()))
    };
    match command {
        HookCommand::Install {
            client: HookClient::ClaudeCode,
            settings: path,
        } => {
            let path = settings_path(path)?;
            let program = std::env::current_exe()
                .map_err(|e| Usage(format!("cannot tell where ask-user is: {e}")))?;
            let state = ask_user::inbox::state_dir();
            let added = settings::install(&path, &settings::command(&program), state.as_deref())
                .map_err(|e| Usage(e.to_string()))?;
            say(&match added {
                true => format!("added the AskUserQuestion hook to {}", path.display()),
                false => format!("the hook is in {} already", path.display()),
            });
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::Uninstall {
            client: HookClient::ClaudeCode,
            settings: path,
        } => {
            let path = settings_path(path)?;
            let state = ask_user::inbox::state_dir();
            let removed =
                settings::uninstall(&path, state.as_deref()).map_err(|e| Usage(e.to_string()))?;
            say(&match removed {
                true => format!("took the ask-user hook out of {}", path.display()),
                false => format!("no ask-user hook in {}", path.display()),
            });
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::ClaudeCode { config } => {
            let input = read_arguments(Path::new("-"), claude_code::MAX_INPUT_BYTES)?;
            let input: claude_code::HookInput = serde_json::from_slice(&input).map_err(|e| {
                Usage(format!(
                    "the hook's input is not what Claude Code sends: {e}"
                ))
            })?;
            let state_dir = ask_user::inbox::state_dir();
            if let Some((session, batch)) = input.answered() {
                // Answered at the terminal first: the hooks still asking
                // it elsewhere stop, withdrawing their questions.
                if let Some(state_dir) = &state_dir {
                    waiting::answered_elsewhere(state_dir, claude_code::CLIENT, session, &batch)
                        .map_err(|e| Usage(e.to_string()))?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let asked = match claude_code::Ask::from_hook(&input) {
                // A headless run this command serves answers its own.
                Ok(Some(claude_code::Ask::Questions(_)))
                    if std::env::var_os(headless::SERVED_ENV).is_some() =>
                {
                    return Ok(ExitCode::SUCCESS);
                }
                Ok(Some(asked)) => asked,
                // Another event, another tool, a form we cannot show: not ours.
                Ok(None) => return Ok(ExitCode::SUCCESS),
                Err(problem) => return Err(Usage(problem)),
            };
            let asker = input.asker();
            let stop = stop_signal();
            // Told by the session's next hook if the terminal answers first
            // (Claude Code leaves this one running): listening before it
            // registers, and registered before the answerers start, so
            // that it can be stopped as soon as anything of it shows.
            let _waiting = match (&state_dir, &input.session_id, &asked) {
                (Some(state_dir), Some(session), claude_code::Ask::Questions(questions)) => {
                    let mut told = tokio::signal::unix::signal(
                        tokio::signal::unix::SignalKind::from_raw(waiting::ANSWERED_ELSEWHERE),
                    )
                    .map_err(|e| Usage(e.to_string()))?;
                    let (reason, stop) = (asker.stop_reason.clone(), stop.clone());
                    tokio::spawn(async move {
                        told.recv().await;
                        reason.set("answered in Claude Code");
                        stop.cancel();
                    });
                    Some(
                        waiting::Waiting::register(
                            state_dir,
                            claude_code::CLIENT,
                            session,
                            &questions.fingerprint(),
                        )
                        .map_err(|e| Usage(e.to_string()))?,
                    )
                }
                _ => None,
            };
            let request = asked.request().clone();
            match ask_elsewhere(config.as_deref(), asker, request, &stop, component).await? {
                Some(Ok(answers)) => println!("{}", asked.output(&answers)),
                // Not answered here: the terminal still asks.
                Some(Err(error)) => say(&format!("not answered through ask-user: {error}")),
                None => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        HookCommand::Headless {
            client: HookClient::ClaudeCode,
            prompt,
            config,
            program,
            json,
            flags,
        } => {
            headless(
                &prompt,
                config.as_deref(),
                &program,
                json,
                &flags,
                component,
            )
            .await
        }
    }
}

/// Asks `request` through the answerers of the user's config (`config`,
/// else the user's file) but the terminal, which the agent has, until
/// `stop`; the inbox shows `asker` as asking. `Ok(None)`: no such answerer.
async fn ask_elsewhere(
    config: Option<&Path>,
    asker: ask_user::inbox::Asker,
    request: ask_user::AskRequest,
    stop: &CancellationToken,
    component: Option<Vec<u8>>,
) -> Result<Option<Result<Vec<ask_user::Answer>, ask_user::AskError>>, Usage> {
    let mut kinds = ask_user::config::kinds();
    kinds.register(ask_user::inbox::InboxKind::asking_as(asker));
    let Some(mut config) = user_config(config, &kinds)? else {
        return Ok(None);
    };
    config.answerers.retain(|entry| entry.kind != "terminal");
    if config.answerers.is_empty() {
        return Ok(None);
    }
    let builder = HostBuilder::from_config(config).without_failed_answerers();
    let host = start(builder, component).await?;
    let id = ask_user::new_id("claude-code-").map_err(|e| Usage(e.to_string()))?;
    let call = host.seam().scoped_call(id);
    let answered = host.seam().ask(request, Some(call.agent()), stop).await;
    drop(call);
    host.close().await;
    Ok(Some(answered))
}

/// `ask-user hook headless claude-code`: runs Claude Code on `prompt` with
/// its standard input and output ours, and answers its questions.
async fn headless(
    prompt: &str,
    config: Option<&Path>,
    program: &Path,
    json: bool,
    flags: &[std::ffi::OsString],
    component: Option<Vec<u8>>,
) -> Result<ExitCode, Usage> {
    use ask_user::hook::{claude_code, headless};
    use headless::Line;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(program)
        .args(headless::flags())
        .args(flags)
        .env(headless::SERVED_ENV, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Usage(format!("cannot run {}: {e}", program.display())))?;
    let mut input = child.stdin.take().expect("piped");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let cwd = std::env::current_dir()
        .ok()
        .map(|dir| dir.display().to_string());
    let asker = claude_code::asker(cwd.as_deref(), None);
    let send = async |input: &mut tokio::process::ChildStdin, line: String| {
        input.write_all(format!("{line}\n").as_bytes()).await
    };
    let lost = |e: std::io::Error| Usage(format!("lost Claude Code's run: {e}"));
    send(&mut input, headless::prompt(prompt))
        .await
        .map_err(lost)?;
    let stop = stop_requested();
    tokio::pin!(stop);
    let (text, is_error) = loop {
        let line = tokio::select! {
            line = lines.next_line() => line.map_err(lost)?,
            () = &mut stop => return Err(Usage("stopped".to_owned())),
        };
        let Some(line) = line else {
            break (String::new(), true);
        };
        if json {
            println!("{line}");
        }
        let reply = match Line::parse(&line) {
            Line::Result { text, is_error } => break (text, is_error),
            Line::Other => continue,
            Line::Permission {
                request_id, tool, ..
            } if tool != claude_code::TOOL => headless::deny(
                &request_id,
                &format!(
                    "{tool} was not allowed for this headless run: nobody is asked for \
                     permission here (allow it with --allowedTools)"
                ),
            ),
            Line::Permission {
                request_id, input, ..
            } => 'reply: {
                // One request we cannot read is refused alone; the run goes on.
                let asked = match claude_code::Asked::from_tool_input(&input) {
                    Ok(asked) => asked,
                    Err(problem) => {
                        say(&format!("refused a question of the run: {problem}"));
                        break 'reply headless::deny(
                            &request_id,
                            &format!(
                                "the questions could not be read ({problem}): nobody was asked. \
                                 Ask again with questions of the tool's schema"
                            ),
                        );
                    }
                };
                let request = asked.request.clone();
                let stop = stop_signal();
                match ask_elsewhere(config, asker.clone(), request, &stop, component.clone())
                    .await?
                {
                    Some(Ok(answers)) => headless::allow(&request_id, asked.allow(&answers)),
                    Some(Err(error)) => {
                        headless::deny(&request_id, &format!("the user did not answer: {error}"))
                    }
                    None => headless::deny(
                        &request_id,
                        "nobody can be asked: the ask-user config names no answerer but the \
                         terminal, and a headless run has none",
                    ),
                }
            }
        };
        send(&mut input, reply).await.map_err(lost)?;
    };
    // Its input ends with the run, and so does it.
    drop(input);
    let status = child.wait().await.map_err(lost)?;
    if !json {
        println!("{text}");
    }
    Ok(if is_error || !status.success() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `ask-user inbox …`.
async fn inbox(command: InboxCommand) -> Result<ExitCode, Usage> {
    let state_dir = ask_user::inbox::state_dir().ok_or_else(|| {
        Usage("no state directory for the inbox: set ASK_USER_STATE_DIR or HOME".to_owned())
    })?;
    let client = |team: TeamArgs| match team.url {
        Some(url) => {
            let token = std::env::var(TOKEN_ENV)
                .map_err(|_| Usage(format!("a team's inbox needs your token in {TOKEN_ENV}")))?;
            InboxClient::remote(&url, token).map_err(|e| Usage(e.to_string()))
        }
        None => InboxClient::new(&state_dir).map_err(|e| Usage(e.to_string())),
    };
    match command {
        InboxCommand::Serve {
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
            if config.database.is_some() {
                return serve_team(config).await;
            }
            let exposed = !config.bind.is_loopback();
            let server = InboxServer::start(config)
                .await
                .map_err(|e| Usage(e.to_string()))?;
            if exposed {
                say(&format!(
                    "WARNING: the inbox's page listens beyond this machine at {}; anyone who \
                     can reach it and has a link can answer for you",
                    server.address()
                ));
            }
            say(&format!(
                "the inbox serves {} (Ctrl-C stops; questions are kept)",
                state_dir.display()
            ));
            // A link that lets a browser in goes only to a person at a
            // terminal, never into a log.
            use std::io::IsTerminal;
            let link = match std::io::stderr().is_terminal() {
                true => server.page_link().map_err(|e| Usage(e.to_string()))?,
                false => format!(
                    "{} (`ask-user inbox page` prints a link that opens it)",
                    server.address()
                ),
            };
            say(&format!("answer at {link}"));
            stop_requested().await;
            server.stop().await;
            Ok(ExitCode::SUCCESS)
        }
        InboxCommand::List { all, json, team } => {
            let list = client(team)?
                .list(all)
                .await
                .map_err(|e| Usage(e.to_string()))?;
            if json {
                emit(&list)?;
            } else {
                print_questions(&list.questions)?;
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
        InboxCommand::Page => {
            let link = client(TeamArgs { url: None })?
                .page_link()
                .await
                .map_err(|e| Usage(e.to_string()))?;
            println!("{link}");
            Ok(ExitCode::SUCCESS)
        }
        InboxCommand::Answer { id, answers, team } => {
            let client = client(team)?;
            let answers = match answers {
                Some(file) => script::read_answers_file(&file)
                    .and_then(|text| script::read_answers(&text))
                    .map_err(|e| Usage(e.to_string()))?,
                None => answer_here(&client, &id).await?,
            };
            client
                .answer(&id, &answers)
                .await
                .map_err(|e| Usage(e.to_string()))?;
            say(&format!("answered {id}"));
            Ok(ExitCode::SUCCESS)
        }
        InboxCommand::Token { command } => token(command).await,
    }
}

/// `inbox answer ID` without `--answers`: the question, asked at this
/// terminal with the same prompt as `ask-user ask`; the answers given.
async fn answer_here(client: &InboxClient, id: &str) -> Result<Vec<ask_user::Answer>, Usage> {
    use ask_user::inbox::store::State;
    let question = client
        .question(id, std::time::Duration::ZERO)
        .await
        .map_err(|e| Usage(e.to_string()))?
        .ok_or_else(|| {
            Usage(format!(
                "the inbox has no question {id:?}; `ask-user inbox list` shows them"
            ))
        })?;
    if question.state != State::Waiting {
        return Err(Usage(format!(
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
                Usage("no terminal to ask at: give the answers with --answers FILE".to_owned())
            }
            Some(ErrorCode::AskCancelled) => {
                Usage(format!("dismissed: nothing was sent, and {id} still waits"))
            }
            _ => Usage(format!("nothing was sent: {}", error.message())),
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

/// `ask-user inbox serve --database …`: one of a team's inbox servers.
async fn serve_team(config: InboxConfig) -> Result<ExitCode, Usage> {
    let exposed = !config.bind.is_loopback();
    let server = InboxServer::start(config)
        .await
        .map_err(|e| Usage(e.to_string()))?;
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
    stop_requested().await;
    server.stop().await;
    Ok(ExitCode::SUCCESS)
}

/// `ask-user inbox token …`.
async fn token(command: TokenCommand) -> Result<ExitCode, Usage> {
    use ask_user::inbox::store::PgStore;
    use ask_user::inbox::store::postgres::Role;
    let connect = async |url: &str| {
        PgStore::connect(url)
            .await
            .map_err(|e| Usage(e.to_string()))
    };
    let now = ask_user::inbox::now();
    match command {
        TokenCommand::Create {
            name,
            role,
            groups,
            database,
        } => {
            let role = match role {
                TokenRole::Agent => Role::Agent,
                TokenRole::Person => Role::Person,
            };
            if role == Role::Agent && !groups.is_empty() {
                return Err(Usage(
                    "groups are a person's; an agent names its audience in its config".to_owned(),
                ));
            }
            let token = connect(&database)
                .await?
                .create_token(&name, role, &groups, now)
                .await
                .map_err(|e| Usage(e.to_string()))?;
            println!("{token}");
            say(&format!(
                "made {} token {name:?}: it is shown this once, keep it secret",
                role.as_str()
            ));
            Ok(ExitCode::SUCCESS)
        }
        TokenCommand::List { database } => {
            let tokens = connect(&database)
                .await?
                .tokens()
                .await
                .map_err(|e| Usage(e.to_string()))?;
            for row in tokens {
                let identity = row.identity;
                let revoked = match row.revoked_at {
                    Some(_) => "  (revoked)",
                    None => "",
                };
                println!(
                    "{}  {}  {}{revoked}",
                    clean(&identity.name, false),
                    identity.role.as_str(),
                    clean(&identity.groups.join(","), false)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenCommand::Revoke { name, database } => {
            let revoked = connect(&database)
                .await?
                .revoke(&name, now)
                .await
                .map_err(|e| Usage(e.to_string()))?;
            if !revoked {
                return Err(Usage(format!(
                    "no token named {name:?} that is not revoked already"
                )));
            }
            say(&format!("revoked {name:?} on every server"));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// How long before `now` a thing happened at `at`, as a person says it.
fn ago(at: std::time::SystemTime, now: std::time::SystemTime) -> String {
    let seconds = now.duration_since(at).unwrap_or_default().as_secs();
    match seconds {
        0..10 => "just now".to_owned(),
        10..60 => format!("{seconds} s ago"),
        60..3600 => format!("{} min ago", seconds / 60),
        3600..172_800 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

/// The questions, for a human: one block each.
fn print_questions(questions: &[ask_user::inbox::QuestionView]) -> Result<(), Usage> {
    use std::io::Write;
    let text = listing(questions, output_width(), std::time::SystemTime::now());
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Usage(format!("cannot write to standard output: {e}")))
}

/// The columns standard output has: the terminal's, else 100.
fn output_width() -> usize {
    // SAFETY: TIOCGWINSZ fills the winsize we own, or fails.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    match (got, size.ws_col) {
        (0, columns) if columns >= 20 => usize::from(columns),
        _ => 100,
    }
}

/// `inbox list` for a person: each question with what asked it and when
/// (as long ago, from `now`), its questions wrapped to `width` columns.
fn listing(
    questions: &[ask_user::inbox::QuestionView],
    width: usize,
    now: std::time::SystemTime,
) -> String {
    let mut text = String::new();
    if questions.is_empty() {
        text.push_str("no questions are waiting\n");
    }
    for view in questions {
        use ask_user::inbox::store::State;
        let waiting = match (view.state, view.agent_waiting) {
            (State::Waiting, true) => "waiting".to_owned(),
            (State::Waiting, false) => {
                "waiting (its agent is gone; answer it for when it asks again)".to_owned()
            }
            (state, _) => match &view.answered_by {
                Some(person) => format!("{} by {}", state.as_str(), clean(person, false)),
                None => state.as_str().to_owned(),
            },
        };
        // Every text here came from a model, an agent or a file: cleaned
        // before it reaches the terminal.
        let asked = humantime::parse_rfc3339(&view.asked_at)
            .map(|at| ago(at, now))
            .unwrap_or_else(|_| clean(&view.asked_at, false).into_owned());
        text.push_str(&format!(
            "{}  {waiting}\n    session {} · {} · asked {asked}\n",
            clean(&view.id, false),
            clean(&view.session, false),
            clean(&view.agent, false),
        ));
        if let Some(cwd) = &view.cwd {
            text.push_str(&format!("    in {}\n", clean(cwd, false)));
        }
        for question in &view.questions {
            let header = question
                .header
                .as_deref()
                .map(|h| format!("[{}] ", clean(h, false)))
                .unwrap_or_default();
            let lead = format!("    {} {header}", clean(&question.id, false));
            let options = textwrap::Options::new(width)
                .initial_indent(&lead)
                .subsequent_indent("      ");
            for line in textwrap::wrap(&clean(&question.question, true), options) {
                text.push_str(&line);
                text.push('\n');
            }
        }
    }
    text
}

/// Writes the built-in component to `out`, or to standard output unless
/// that is a terminal.
fn write_component(out: Option<&Path>) -> Result<ExitCode, Usage> {
    use std::io::{IsTerminal, Write};
    let written = match out {
        Some(path) => std::fs::write(path, ask_user::COMPONENT)
            .map_err(|e| Usage(format!("cannot write {}: {e}", path.display()))),
        None if std::io::stdout().is_terminal() => Err(Usage(
            "the component is binary: give --out FILE, or redirect standard output".to_owned(),
        )),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(ask_user::COMPONENT)
                .and_then(|()| stdout.flush())
                .map_err(|e| {
                    Usage(format!(
                        "cannot write the component to standard output: {e}"
                    ))
                })
        }
    };
    written.map(|()| ExitCode::SUCCESS)
}

/// Prints the tool result; the exit code says whether it is an error.
fn finish(result: &ToolResult) -> Result<ExitCode, Usage> {
    emit(result)?;
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The variable that fixes `ask-user mcp --http`'s bearer token.
const MCP_TOKEN_ENV: &str = "ASK_USER_MCP_TOKEN";

/// The bearer token `ask-user mcp --http` wants, when the environment fixes
/// it (a per-run token otherwise).
fn mcp_token() -> Result<Option<String>, Usage> {
    let Some(token) = std::env::var_os(MCP_TOKEN_ENV) else {
        return Ok(None);
    };
    match token.into_string() {
        Ok(token) if token.len() >= 32 && token.bytes().all(|b| b.is_ascii_graphic()) => {
            Ok(Some(token))
        }
        _ => Err(Usage(format!(
            "{MCP_TOKEN_ENV} must be at least 32 visible ASCII characters, with no spaces \
             (e.g. the output of `openssl rand -hex 32`); unset it for a token per run"
        ))),
    }
}

/// Serves MCP on standard input and output until the client leaves, or on
/// HTTP at `http`, until interrupted (open calls then end `ASK_ABORTED`).
async fn serve_mcp(
    host: Host,
    forms: Forms,
    http: Option<std::net::SocketAddr>,
) -> Result<ExitCode, Usage> {
    let server = McpServer::new(host.runtime().clone(), host.pages())
        .map_err(|e| Usage(e.to_string()))?
        .forms(forms);
    let stop = stop_requested();
    let served = match http {
        None => {
            // Started by hand: say what it waits for.
            use std::io::IsTerminal;
            if std::io::stdin().is_terminal() {
                say(
                    "waiting for an MCP client on standard input: an MCP client (Claude Code, \
                     Codex…) starts this itself, see the README; Ctrl-C stops",
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
            let http = McpHttp::start(server, address, token)
                .await
                .map_err(|e| Usage(e.to_string()))?;
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
    host.close().await;
    served.map_err(|e| Usage(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// Builds the host (`component` instead of the built-in one when given)
/// and says what its answerers asked to tell the human. The compiled
/// component comes from the user's cache (docs/performance.md): the
/// command starts in milliseconds instead of compiling it each time.
async fn start(builder: HostBuilder, component: Option<Vec<u8>>) -> Result<Host, Usage> {
    let builder = match component {
        Some(component) => builder.component(component),
        None => builder,
    };
    let builder = match CodeCache::user_default() {
        Some(cache) => builder.code_cache(cache),
        None => builder,
    };
    let host = builder.build().await.map_err(|e| Usage(e.to_string()))?;
    for notice in host.notices() {
        say(notice);
    }
    Ok(host)
}

/// The turn's signal of a command that asks: cancelled when the process is
/// asked to stop ([`stop_requested`]).
fn stop_signal() -> CancellationToken {
    let signal = CancellationToken::new();
    let interrupt = signal.clone();
    let stop = stop_requested();
    tokio::spawn(async move {
        stop.await;
        interrupt.cancel();
    });
    signal
}

/// Resolves when the process is asked to stop: Ctrl-C (SIGINT), SIGTERM (a
/// service manager, `kill`) or SIGHUP (its terminal went away). Each is
/// taken from the moment this is called, so the command then ends as it
/// does on Ctrl-C: open questions withdrawn, answerers and their children
/// stopped, the result printed.
fn stop_requested() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut signals: Vec<_> = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ]
    .into_iter()
    .filter_map(|kind| signal(kind).ok())
    .collect();
    async move {
        if signals.is_empty() {
            return std::future::pending().await;
        }
        let received = signals.iter_mut().map(|s| Box::pin(s.recv()));
        futures_util::future::select_all(received).await;
    }
}

/// The `--config` file; else the user's config file when it exists; else
/// the terminal alone.
fn load_config(path: Option<&Path>) -> Result<Config, Usage> {
    let mut config = user_config(path, &ask_user::config::kinds())?.unwrap_or_default();
    // A file that names no answerer (only `[inbox.notify]`, say) leaves
    // the terminal where it was.
    if config.answerers.is_empty() {
        config.answerers.push(AnswererEntry::new(
            "terminal",
            ready(TerminalAnswerer::new()),
        ));
    }
    Ok(config)
}

/// The `--config` file; else the user's config file when it exists; else
/// none.
fn user_config(path: Option<&Path>, kinds: &Kinds) -> Result<Option<Config>, Usage> {
    let path = match path {
        Some(path) => Some(path.to_owned()),
        None => Config::default_path().filter(|p| p.exists()),
    };
    path.map(|path| Config::load_with(&path, kinds).map_err(|e| Usage(e.to_string())))
        .transpose()
}

/// Reads the arguments, at most one byte past `limit`: more is refused by
/// the runtime as too large, and a file without end is not read forever.
fn read_arguments(file: &Path, limit: usize) -> Result<Vec<u8>, Usage> {
    let (source, name): (Box<dyn Read>, _) = if file.as_os_str() == "-" {
        (Box::new(std::io::stdin()), "standard input".to_owned())
    } else {
        let opened = std::fs::File::open(file)
            .map_err(|e| Usage(format!("cannot read the arguments {}: {e}", file.display())))?;
        (Box::new(opened), file.display().to_string())
    };
    let mut bytes = Vec::new();
    source
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Usage(format!("cannot read the arguments from {name}: {e}")))?;
    Ok(bytes)
}

/// The arguments as text. They are the model's: bytes that are not UTF-8
/// are its bad input (`INVALID_ARGS`, naming where), not a usage error.
/// Past `limit` (cut anywhere, even inside a character) they stay over it,
/// so the runtime refuses them by their size.
fn arguments_text(bytes: Vec<u8>, limit: usize) -> Result<String, String> {
    String::from_utf8(bytes).or_else(|e| {
        if e.as_bytes().len() > limit {
            return Ok(String::from_utf8_lossy(e.as_bytes()).into_owned());
        }
        Err(format!(
            "invalid arguments: they are not UTF-8 text (from byte offset {} on); send the \
             arguments as UTF-8 JSON and call again",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Writes `value` as JSON to standard output. A closed or full output is a
/// one-line error (exit 2), never a panic.
fn emit(value: &impl serde::Serialize) -> Result<(), Usage> {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value).expect("results are plain JSON");
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Usage(format!("cannot write the result to standard output: {e}")))
}

/// One line to standard error, for the human; dropped when nobody reads it.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "ask-user: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_long_question_is_wrapped_to_the_width() {
        let now = SystemTime::now();
        let words: Vec<String> = (0..250).map(|n| format!("word{n}")).collect();
        let view: ask_user::inbox::QuestionView = serde_json::from_value(serde_json::json!({
            "id": "q1", "session": "s", "agent": "a", "askedAt": humantime::format_rfc3339(now).to_string(),
            "state": "waiting", "agentWaiting": true,
            "questions": [{"id": "q", "header": "Plan", "question": words.join(" ")}],
        }))
        .unwrap();
        let text = listing(&[view], 60, now);
        assert!(
            text.lines().all(|line| line.chars().count() <= 60),
            "{text}"
        );
        assert!(text.contains("    q [Plan] word0 word1"), "{text}");
        assert!(text.contains("word249"), "nothing is cut: {text}");
        assert!(text.contains("asked just now"), "{text}");
    }

    #[test]
    fn a_time_is_said_as_how_long_ago() {
        let now = SystemTime::now();
        let said = |seconds| ago(now - Duration::from_secs(seconds), now);
        assert_eq!(said(3), "just now");
        assert_eq!(said(42), "42 s ago");
        assert_eq!(said(3 * 60 + 5), "3 min ago");
        assert_eq!(said(5 * 3600), "5 h ago");
        assert_eq!(said(3 * 86_400), "3 days ago");
        // A clock behind the server's: not "in the future".
        assert_eq!(ago(now + Duration::from_secs(30), now), "just now");
    }
}
