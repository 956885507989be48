//! The `[inbox]` table of the config file: how `ask-user inbox serve`
//! serves. Read here, by the inbox, so that the host's config knows only
//! that the table is the inbox's.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;

use crate::notify::{Channels, Notifications};
use crate::server::InboxConfig;

/// The table as written (the config file's reader checks its keys).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInbox {
    retention: Option<toml::Spanned<String>>,
    bind: Option<std::net::IpAddr>,
    port: Option<u16>,
    database: Option<String>,
    /// Read by the channels' registry ([`Channels`]).
    notify: Option<toml::Spanned<toml::Table>>,
}

/// What the `[inbox]` table sets; what it leaves out keeps the default.
#[derive(Debug, Clone, Default)]
pub struct InboxSettings {
    /// How long a question whose agent is gone stays answerable.
    pub retention: Option<Duration>,
    pub bind: Option<std::net::IpAddr>,
    pub port: Option<u16>,
    /// A team's inbox: its PostgreSQL database.
    pub database: Option<String>,
    /// `[inbox.notify]`: the channels to notify.
    pub notify: Notifications,
}

impl InboxSettings {
    /// Reads the table; a mistake comes with where it is in the file.
    pub fn read(raw: RawInbox) -> Result<Self, (Range<usize>, String)> {
        Ok(InboxSettings {
            retention: raw
                .retention
                .map(|t| ask_user_answerers::duration(t.as_ref()).map_err(|e| (t.span(), e)))
                .transpose()?,
            bind: raw.bind,
            port: raw.port,
            database: raw.database,
            notify: match raw.notify {
                Some(table) => Channels::builtin()
                    .configure(table.get_ref())
                    .map_err(|problem| (table.span(), problem))?,
                None => Notifications::default(),
            },
        })
    }

    /// `config` with what these settings set.
    pub fn apply(self, mut config: InboxConfig) -> InboxConfig {
        config.port = self.port.or(config.port);
        config.bind = self.bind.unwrap_or(config.bind);
        config.retention = self.retention.unwrap_or(config.retention);
        config.database = self.database.or(config.database);
        config.notify = self.notify;
        config
    }
}
