//! `ask-user schema` and `ask-user component`: the tool's definition and
//! the component itself, for a host to take.

use std::path::PathBuf;
use std::process::ExitCode;

use ask_user::HostBuilder;
use ask_user::plugs::{Face, Plug, compose};

use super::{CliError, Component, Context, Exit, emit, start};

#[derive(clap::Args)]
pub struct Args {
    /// Write it to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Compose the tool with this seam plug: one component whose only
    /// imports are WASI 0.2, for a runtime that brings no seam of its own
    /// (the wasmtime CLI, wassette). `inbox` asks a person in an inbox over
    /// wasi:http (ASK_USER_INBOX_URL, ASK_USER_AGENT_TOKEN); `answers`
    /// answers from ASK_USER_ANSWERS; `terminal` prompts on standard error.
    #[arg(long, value_name = "KIND")]
    plug: Option<Plug>,
    /// What the composed component exports: `tool`, the tool's own
    /// interface (definition, execute with JSON text); `wassette`, one
    /// typed function, ask-user-question, with the tool's description, that
    /// wassette lists as one tool with the questions' schema.
    #[arg(long, value_name = "FORM", requires = "plug", default_value = "tool")]
    world: Face,
}

/// Prints the tool definition of the component (the built-in one, or
/// `component`).
pub async fn schema(component: Component) -> Exit {
    let host = start(HostBuilder::new(), component).await?;
    emit(host.runtime().definition())?;
    Ok(ExitCode::SUCCESS)
}

/// `ask-user component`: writes the built-in component, or it composed
/// with `plug` in the form `world`, to `out`, or to standard output unless
/// that is a terminal.
pub async fn write(Args { out, plug, world }: Args) -> Exit {
    use std::io::{IsTerminal, Write};
    let composed;
    let component = match plug {
        Some(plug) => {
            let description = match world {
                Face::Tool => String::new(),
                // What the model is told, as the component itself says it.
                Face::Wassette => start(HostBuilder::new(), None)
                    .await?
                    .runtime()
                    .definition()
                    .description
                    .clone(),
            };
            composed = compose(ask_user::COMPONENT, plug, world, &description)
                .map_err(|e| CliError::new(e.to_string()))?;
            &composed[..]
        }
        None => ask_user::COMPONENT,
    };
    let written = match out.as_deref() {
        Some(path) => {
            std::fs::write(path, component).context(|| format!("cannot write {}", path.display()))
        }
        None if std::io::stdout().is_terminal() => Err(CliError::new(
            "the component is binary: give --out FILE, or redirect standard output",
        )),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(component)
                .and_then(|()| stdout.flush())
                .map_err(|e| {
                    CliError::new(format!(
                        "cannot write the component to standard output: {e}"
                    ))
                })
        }
    };
    written.map(|()| ExitCode::SUCCESS)
}
