//! A channel's secrets: where the config says they are ([`secret_from`]),
//! and text that never reaches a log ([`Secret`]).

use std::fmt::Debug;

use ask_user_inbox::kind::TokenSource;
use ask_user_inbox::notify::ChannelError;

/// Where a channel's secret is: `{key}_env = "VARIABLE"` or `{key}_file =
/// "/absolute/path"` (mode 0600), one of them, never the secret itself;
/// `None` when neither is given. It is read when the inbox starts.
pub fn secret_from(
    key: &str,
    env: Option<String>,
    file: Option<std::path::PathBuf>,
) -> Result<Option<TokenSource>, ChannelError> {
    match (env, file) {
        (None, None) => Ok(None),
        (Some(name), None) => Ok(Some(TokenSource::Env(name))),
        (None, Some(path)) if path.is_absolute() => Ok(Some(TokenSource::File(path))),
        (None, Some(path)) => Err(ChannelError::config(format!(
            "{key}_file {} must be an absolute path",
            path.display()
        ))),
        (Some(_), Some(_)) => Err(ChannelError::config(format!(
            "give {key}_env or {key}_file, not both"
        ))),
    }
}

/// The secret `what` (`the Telegram bot token`), read from `source` now.
pub fn read(source: &TokenSource, what: &str) -> Result<Secret, ChannelError> {
    source.read(what).map(Secret).map_err(|error| {
        // The error says which variable or file, and what is wrong with it.
        ChannelError::config(error.to_string())
    })
}

/// Text that must never be shown: its `Debug` says so and no more.
#[derive(Clone)]
pub struct Secret(pub String);

impl Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(secret)")
    }
}
