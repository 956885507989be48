//! `ask-user`: run the ask_user_question tool component from the command line.

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use ask_user::front_end;
use clap::{Parser, Subcommand};
use commands::serve::Serve;
use commands::{ask, component, form, hook, inbox, say};

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
    Component(component::Args),
    /// Run one tool call as a root agent and print the tool result (MCP CallToolResult JSON).
    Ask(ask::Args),
    /// Serve the tool to an MCP client over standard input and output: the
    /// client's user answers in the client's own form (elicitation).
    Mcp(Serve<front_end::mcp::Mcp>),
    /// The inbox: every agent's questions in one place, kept on disk,
    /// answered from one page or the command line.
    Inbox {
        #[command(subcommand)]
        command: inbox::Command,
    },
    /// Answer an agent's own question tool through your answerers (the
    /// inbox, a script…), from the agent's hooks.
    Hook {
        #[command(subcommand)]
        command: hook::Command,
    },
    /// The form a batch becomes in a client's own UI, and a form's content
    /// back as answers (JSON on standard input and output): for a host in
    /// another language that sends an editor's form itself (ACP).
    Form {
        #[command(subcommand)]
        command: form::Command,
    },
}

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
    let code = runtime.block_on(run(cli)).unwrap_or_else(commands::report);
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

async fn run(cli: Cli) -> commands::Outcome {
    let component = match &cli.component {
        Some(path) => Some(std::fs::read(path).map_err(|e| {
            commands::CliError::new(format!("cannot read the component {}: {e}", path.display()))
        })?),
        None => None,
    };
    match cli.command {
        Command::Schema => component::schema(component).await,
        Command::Component(args) => component::write(args).await,
        Command::Ask(args) => ask::run(args, component).await,
        Command::Mcp(serve) => serve.run(component).await,
        Command::Inbox { command } => inbox::run(command).await,
        Command::Hook { command } => hook::run(command, component).await,
        Command::Form { command } => form::run(command),
    }
}
