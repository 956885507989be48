//! [`ChannelError`]: why a channel failed, typed by what the inbox does
//! next — try again later, pass the one call over, or refuse to start.

use std::error::Error;
use std::fmt;

use crate::store::StoreError;

/// What the inbox does about a [`ChannelError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The service could not be reached, or failed (a timeout, a 5xx, a
    /// 429 past its retries, a reply too large to read): the same call may
    /// work later, after a backoff.
    Down,
    /// The service refused this call (a message deleted, a text it takes
    /// for malformed, a 4xx): the same call would be refused again, so it
    /// is passed over and everything else goes on.
    Refused,
    /// The channel is configured wrong, or a secret it reads cannot be
    /// had: nothing it does works until a person mends it.
    Config,
}

/// Why a channel failed: its [`ErrorKind`], what failed in words a person
/// reads, and the error that caused it, when there is one. Nothing in it
/// holds a secret: a channel strips what may (an address with a bot's
/// token, an ntfy topic) before it makes one.
#[derive(Debug)]
pub struct ChannelError {
    kind: ErrorKind,
    what: String,
    source: Option<Box<dyn Error + Send + Sync>>,
}

impl ChannelError {
    /// The service is down: [`ErrorKind::Down`].
    pub fn down(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Down, what)
    }

    /// The service refused: [`ErrorKind::Refused`].
    pub fn refused(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Refused, what)
    }

    /// The channel is configured wrong: [`ErrorKind::Config`].
    pub fn config(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config, what)
    }

    fn new(kind: ErrorKind, what: impl Into<String>) -> Self {
        ChannelError {
            kind,
            what: what.into(),
            source: None,
        }
    }

    /// The same, caused by `source`.
    pub fn because(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// The same, saying first what it came of (`getUpdates`).
    pub fn context(mut self, what: &str) -> Self {
        self.what = format!("{what}: {}", self.what);
        self
    }

    /// What the inbox does about it.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What failed and every cause, in one line ("getUpdates: error
    /// sending request: connection refused"), for the log.
    pub fn report(&self) -> String {
        let mut line = self.what.clone();
        let mut cause = self.source();
        while let Some(error) = cause {
            line.push_str(": ");
            line.push_str(&error.to_string());
            cause = error.source();
        }
        line
    }
}

/// The inbox's store failed: down, until it answers again.
impl From<StoreError> for ChannelError {
    fn from(error: StoreError) -> Self {
        ChannelError::down("the inbox's store").because(error)
    }
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Error for ChannelError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_says_what_failed_and_each_cause_once() {
        let io = std::io::Error::other("connection refused");
        let error = ChannelError::down("getUpdates").because(io);
        assert_eq!(error.kind(), ErrorKind::Down);
        assert_eq!(error.to_string(), "getUpdates");
        assert_eq!(error.report(), "getUpdates: connection refused");
        assert_eq!(ChannelError::refused("no").report(), "no");
    }
}
