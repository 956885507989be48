//! The command's log.

/// `tracing` to standard error: warnings, or what `ASK_USER_LOG` says.
pub fn init() {
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
