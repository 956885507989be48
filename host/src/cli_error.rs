//! [`CliError`]: why a command failed, said on one line.

/// Why a command (or a part of it: a hook, a front end) failed: bad usage,
/// a file it cannot read or write, a service that refused. Said on one line to standard error; the command
/// exits with [`CliError::STATUS`]. Any error converts with `?`, its
/// message kept; [`CliError::new`] says it in the command's own words.
#[derive(Debug)]
pub struct CliError(String);

impl CliError {
    /// The exit status of a failed command (1 is a tool result that is an
    /// error, 0 an answer).
    pub const STATUS: u8 = 2;

    pub fn new(reason: impl Into<String>) -> CliError {
        CliError(reason.into())
    }

    /// Why, on one line, whatever the underlying error looks like.
    pub fn line(&self) -> String {
        self.0.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(error: E) -> CliError {
        CliError(error.to_string())
    }
}
