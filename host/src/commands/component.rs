//! `ask-user schema` and `ask-user component`: the tool's definition and
//! the component itself, for a host to take.

use std::path::PathBuf;
use std::process::ExitCode;

use ask_user::HostBuilder;

use super::{CliError, Component, Outcome, emit, start};

#[derive(clap::Args)]
pub struct Args {
    /// Write it to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Prints the tool definition of the component (the built-in one, or
/// `component`).
pub async fn schema(component: Component) -> Outcome {
    let host = start(HostBuilder::new(), component).await?;
    emit(host.runtime().definition())?;
    Ok(ExitCode::SUCCESS)
}

/// `ask-user component`: writes the built-in component to `out`, or to
/// standard output unless that is a terminal.
pub fn write(Args { out }: Args) -> Outcome {
    use std::io::{IsTerminal, Write};
    let written = match out.as_deref() {
        Some(path) => std::fs::write(path, ask_user::COMPONENT)
            .map_err(|e| CliError::new(format!("cannot write {}: {e}", path.display()))),
        None if std::io::stdout().is_terminal() => Err(CliError::new(
            "the component is binary: give --out FILE, or redirect standard output",
        )),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(ask_user::COMPONENT)
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
