//! `ask-user ask`: one tool call as a root agent, answered by the chain.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ask_user::answerers::script::ScriptAnswerer;
use ask_user::answerers::terminal::TerminalAnswerer;
use ask_user::answerers::web::WebConfig;
use ask_user::answerers::{race, ready};
use ask_user::{AnswererEntry, ErrorCode, HostBuilder, ToolResult};
use ask_user_seam::AskRequest;

use super::{CliError, Component, Context, Exit, emit, load_config, start, stop_signal};

#[derive(clap::Args)]
pub struct Args {
    /// The tool arguments, a JSON object such as
    /// {"questions":[{"id":"pkg","question":"Which package manager?"}]}; `-` reads standard input.
    #[arg(value_name = "ARGUMENTS")]
    file: PathBuf,
    /// Answer from this file first, shaped {"answers":[{"id":…,"selected":[…],"custom":…}]}.
    /// A request it does not answer in full goes on to the next answerer.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// The answerer chain from this TOML file (docs/src/reference/config.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Answer in a browser: serves a page on 127.0.0.1 and prints its
    /// address. The question is offered on the page and at this terminal
    /// at once; the first answer wins. The config's answerers (an inbox…)
    /// are not asked: the page waits for as long as it takes.
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
    /// ARGUMENTS is a request of the seam, not the tool's arguments:
    /// {"questions":[…]} in the seam's spelling (`multiSelect`; `detail` and
    /// `intent`, which a model cannot send), asked through the answerers
    /// without the tool. For a host in another language whose own seam asks
    /// your answerers (the DeepSeek Harness's provider). The result has the
    /// same shape, its answers checked as the tool's are.
    #[arg(long)]
    request: bool,
}

/// Runs the call and prints its result.
pub async fn run(args: Args, component: Component) -> Exit {
    let Args {
        file,
        answers,
        config,
        web,
        web_port,
        audit,
        timeout,
        session,
        request,
    } = args;
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
            .map_err(|problem| CliError::new(format!("--timeout: {problem}")))?;
        config.timeout = Some(limit);
    }
    let limit = config.sandbox.max_arguments_bytes;
    let arguments = match arguments_text(read_arguments(&file, limit)?, limit) {
        Ok(text) => text,
        Err(problem) => {
            return finish(&ToolResult::coded(ErrorCode::InvalidArgs, &problem));
        }
    };
    // The host's own request: one it cannot read is its mistake, not a
    // model's.
    let request = match request {
        true => Some(serde_json::from_str::<AskRequest>(&arguments).map_err(|e| {
            CliError::new(format!(
                "the request cannot be read: {e}. Give {{\"questions\":[{{\"id\":…,\"question\":…}}]}} \
                 in the seam's spelling (docs/src/spec.md, section 2)"
            ))
        })?),
        false => None,
    };
    // The page waits for as long as it takes: nothing after it would ever
    // be asked, so the config's answerers are not started (and none says
    // that questions go elsewhere).
    if web {
        config.answerers.clear();
    }
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        with_the_terminal(&mut config.answerers);
    }
    let mut builder = HostBuilder::from_config(config);
    if let Some(path) = answers {
        let script = ScriptAnswerer::from_file(&path)?;
        builder = builder.answerer(AnswererEntry::new("script", ready(script)));
    }
    if web {
        // The human asked for the browser. The terminal is offered at the
        // same time (it drops out where there is none); the first answer
        // wins.
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
        None => ask_user::new_id("ask-")?,
    };
    let host = start(builder, component).await?;
    let call = host.seam().scoped_call(session);
    let result = match request {
        Some(request) => {
            match host
                .seam()
                .ask(request, Some(call.agent()), &stop_signal())
                .await
            {
                Ok(answers) => {
                    let answers = serde_json::json!({ "answers": answers });
                    ToolResult::success(answers.to_string(), answers)
                }
                Err(error) => {
                    ToolResult::failure(error.name(), error.code().cloned(), error.message())
                }
            }
        }
        None => {
            host.runtime()
                .call(call.agent(), &stop_signal(), &arguments)
                .await
        }
    };
    drop(call);
    host.close().await;
    finish(&result)
}

/// The kinds that ask a person somewhere else than this terminal.
const ASK_ELSEWHERE: [&str; 2] = ["inbox", "web"];

/// A person at this terminal (the command's standard input is one) is
/// asked here too: where the chain names no terminal, it races the first
/// answerer that asks a person elsewhere (an inbox, a page), as an agent's
/// own terminal races the hooks' inbox; the first answer wins. A chain that
/// names the terminal places it itself.
fn with_the_terminal(chain: &mut [AnswererEntry]) {
    if chain.iter().any(|entry| entry.kind == "terminal") {
        return;
    }
    if let Some(entry) = chain
        .iter_mut()
        .find(|entry| ASK_ELSEWHERE.contains(&entry.kind.as_str()))
    {
        let alone = std::mem::replace(&mut entry.setup, race(Vec::new()));
        entry.setup = race(vec![alone, ready(TerminalAnswerer::new())]);
    }
}

/// Reads the arguments, at most one byte past `limit`: more is refused by
/// the runtime as too large, and a file without end is not read forever.
pub fn read_arguments(file: &Path, limit: usize) -> Result<Vec<u8>, CliError> {
    let (source, name): (Box<dyn Read>, _) = if file.as_os_str() == "-" {
        (Box::new(std::io::stdin()), "standard input".to_owned())
    } else {
        let opened = std::fs::File::open(file).map_err(|e| {
            CliError::new(format!("cannot read the arguments {}: {e}", file.display()))
        })?;
        (Box::new(opened), file.display().to_string())
    };
    let mut bytes = Vec::new();
    source
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .context(|| format!("cannot read the arguments from {name}"))?;
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

/// Prints the tool result; the exit code says whether it is an error.
fn finish(result: &ToolResult) -> Exit {
    emit(result)?;
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
