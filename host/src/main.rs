//! `ask-user`: run the ask_user_question tool component from the command line.

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use ask_user::front_end;
use clap::{Parser, Subcommand};
use commands::serve::Runner;
use commands::{ask, component, form, hook, inbox, say};

/// Run the `ask_user_question` tool: the tool an AI agent calls when it must
/// stop and ask its human a question, as a sandboxed WebAssembly component.
#[derive(Parser)]
#[command(
    version,
    after_help = commands::help::AFTER_HELP
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
    #[command(flatten)]
    FrontEnd(front_end::FrontEnds),
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
    commands::logging::init();
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

async fn run(cli: Cli) -> commands::Exit {
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
        Command::FrontEnd(front_end) => front_end.run(Runner { component }).await,
        Command::Inbox { command } => inbox::run(command).await,
        Command::Hook { command } => hook::run(command, component).await,
        Command::Form { command } => form::run(command),
    }
}
