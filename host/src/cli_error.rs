//! [`CliError`]: why a command failed, with what caused it, said on one
//! line.

use std::error::Error;

/// Why a command (or a part of it: a hook, a front end) failed: bad usage,
/// a file it cannot read or write, a service that refused. It keeps what
/// caused it ([`CliError::because`], or any error converted with `?`) as
/// its source, and is said as the chain, on one line to standard error
/// ("cannot write /x/settings.json: Permission denied (os error 13)"),
/// with a hint of what to do when there is one; the command exits with
/// [`CliError::STATUS`].
#[derive(Debug)]
pub struct CliError {
    /// What failed, in the command's words; `None` when the source says it
    /// all (an error converted with `?`).
    what: Option<String>,
    source: Option<Box<dyn Error + Send + Sync>>,
    hint: Option<String>,
}

impl CliError {
    /// The exit status of a failed command (1 is a tool result that is an
    /// error, 0 an answer).
    pub const STATUS: u8 = 2;

    /// What failed, in the command's own words.
    pub fn new(what: impl Into<String>) -> CliError {
        CliError {
            what: Some(what.into()),
            source: None,
            hint: None,
        }
    }

    /// The same, caused by `source`.
    pub fn because(mut self, source: impl Error + Send + Sync + 'static) -> CliError {
        self.source = Some(Box::new(source));
        self
    }

    /// The same, with what to do about it.
    pub fn hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    /// What failed and each cause, on one line, whatever the errors look
    /// like; a cause whose words the line already holds is not said again.
    pub fn line(&self) -> String {
        let mut parts: Vec<String> = self.what.iter().cloned().collect();
        let mut cause = self.source.as_deref().map(|e| e as &(dyn Error + 'static));
        while let Some(error) = cause {
            let said = error.to_string();
            if !parts.iter().any(|part| part.contains(&said)) {
                parts.push(said);
            }
            cause = error.source();
        }
        let mut line = parts.join(": ");
        if let Some(hint) = &self.hint {
            line.push_str(&format!(" ({hint})"));
        }
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line())
    }
}

/// Any error, kept as the source: its words are what failed.
impl<E: Error + Send + Sync + 'static> From<E> for CliError {
    fn from(error: E) -> CliError {
        CliError {
            what: None,
            source: Some(Box::new(error)),
            hint: None,
        }
    }
}

/// What failed, said of a `Result`'s error (as anyhow's `context`).
pub trait Context<T> {
    /// The error, as the source of a [`CliError`] saying `what` failed.
    fn context(self, what: impl FnOnce() -> String) -> Result<T, CliError>;
}

impl<T, E: Error + Send + Sync + 'static> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, CliError> {
        self.map_err(|error| CliError::new(what()).because(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_failed_then_each_cause_once_then_the_hint() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let error: Result<(), _> = Err(denied);
        let error = error
            .context(|| "cannot write /x/settings.json".to_owned())
            .unwrap_err();
        assert_eq!(
            error.line(),
            "cannot write /x/settings.json: permission denied"
        );
        let error = error.hint("run it as the file's owner");
        assert!(
            error
                .line()
                .ends_with("denied (run it as the file's owner)")
        );
        // An error converted with `?` says itself, once.
        let converted = CliError::from(std::io::Error::other("no\nroom"));
        assert_eq!(converted.line(), "no room");
        let said_twice =
            CliError::new("cannot read x: gone").because(std::io::Error::other("gone"));
        assert_eq!(said_twice.line(), "cannot read x: gone");
    }
}
