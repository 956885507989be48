//! The `[inbox]` table of the config file: how `ask-user inbox serve`
//! serves. Read here, by the inbox, so that the host's config knows only
//! that the table is the inbox's.

use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;

use crate::notify::{Channels, Escalation, Notifications};
use crate::server::InboxConfig;

/// The table as written (the config file's reader checks its keys).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInbox {
    retention: Option<toml::Spanned<String>>,
    notify_after: Option<toml::Spanned<String>>,
    bind: Option<std::net::IpAddr>,
    port: Option<u16>,
    database: Option<String>,
    public_url: Option<String>,
    agents: Option<std::net::SocketAddr>,
    /// Read by the channels' registry ([`Channels`]).
    notify: Option<toml::Spanned<toml::Table>>,
    /// The same registry's, under another name: where a channel with a
    /// table of its own reads best (`[inbox.channels.telegram]`).
    channels: Option<toml::Spanned<toml::Table>>,
    /// `after`, and channels as in `notify`.
    escalate: Option<toml::Spanned<toml::Table>>,
}

/// What the `[inbox]` table sets; what it leaves out keeps the default.
#[derive(Debug, Clone, Default)]
pub struct InboxSettings {
    /// How long a question whose agent is gone stays answerable.
    pub retention: Option<Duration>,
    /// How long a question waits before any channel tells of it.
    pub notify_after: Option<Duration>,
    pub bind: Option<std::net::IpAddr>,
    pub port: Option<u16>,
    /// Where the questions are kept, as a store URL: a team's PostgreSQL
    /// database (`postgres://…`), or one user's SQLite file (`sqlite:PATH`).
    pub database: Option<String>,
    /// The address notifications link to, when the server's own is not
    /// one a phone can open (behind a reverse proxy).
    pub public_url: Option<String>,
    /// `[inbox.escalate]`.
    pub escalate: Option<Escalation>,
    /// One user's inbox: where agents with a token reach it over
    /// loopback.
    pub agents: Option<std::net::SocketAddr>,
    /// `[inbox.notify]` and `[inbox.channels]`: the channels.
    pub notify: Notifications,
}

impl InboxSettings {
    /// Reads the table, its channels by the kinds in `registry`; a mistake
    /// comes with where it is in the file.
    pub fn read(raw: RawInbox, registry: &Channels) -> Result<Self, (Range<usize>, String)> {
        Ok(InboxSettings {
            retention: raw
                .retention
                .map(|t| ask_user_seam::config::duration(t.as_ref()).map_err(|e| (t.span(), e)))
                .transpose()?,
            notify_after: raw
                .notify_after
                .map(|t| ask_user_seam::config::duration(t.as_ref()).map_err(|e| (t.span(), e)))
                .transpose()?,
            bind: raw.bind,
            port: raw.port,
            database: raw.database,
            public_url: raw.public_url,
            agents: raw.agents,
            escalate: raw
                .escalate
                .map(|table| escalation(table, registry))
                .transpose()?,
            notify: channels(raw.notify, raw.channels, registry)?,
        })
    }

    /// `config` with what these settings set.
    pub fn apply(self, mut config: InboxConfig) -> InboxConfig {
        config.port = self.port.or(config.port);
        config.bind = self.bind.unwrap_or(config.bind);
        config.retention = self.retention.unwrap_or(config.retention);
        config.notify_after = self.notify_after.unwrap_or(config.notify_after);
        config.database = self.database.or(config.database);
        config.public_url = self.public_url.or(config.public_url);
        config.escalate = self.escalate;
        config.agents = self.agents.or(config.agents);
        config.notify = self.notify;
        config
    }
}

/// `[inbox.notify]` and `[inbox.channels]`, read by one registry.
fn channels(
    notify: Option<toml::Spanned<toml::Table>>,
    channels: Option<toml::Spanned<toml::Table>>,
    registry: &Channels,
) -> Result<Notifications, (Range<usize>, String)> {
    let mut notifications = Notifications::default();
    for (name, table) in [("[inbox.notify]", notify), ("[inbox.channels]", channels)] {
        if let Some(table) = table {
            registry
                .add(table.get_ref(), name, &mut notifications)
                .map_err(|problem| (table.span(), problem))?;
        }
    }
    Ok(notifications)
}

/// `[inbox.escalate]`: `after = "30m"` and the channels, as in
/// `[inbox.notify]`.
fn escalation(
    table: toml::Spanned<toml::Table>,
    registry: &Channels,
) -> Result<Escalation, (Range<usize>, String)> {
    let span = table.span();
    let mut channels = table.into_inner();
    let after = match channels.remove("after") {
        Some(toml::Value::String(after)) => {
            ask_user_seam::config::duration(&after).map_err(|e| (span.clone(), e))?
        }
        _ => {
            return Err((
                span,
                "[inbox.escalate] needs after = \"30m\" (how long a question waits first)"
                    .to_owned(),
            ));
        }
    };
    let mut configured = Notifications::default();
    registry
        .add(&channels, "[inbox.escalate]", &mut configured)
        .map_err(|problem| (span.clone(), problem))?;
    let channels = configured;
    if channels.is_empty() {
        return Err((
            span,
            "[inbox.escalate] names no channel (ntfy, webhook)".to_owned(),
        ));
    }
    if let Some(channel) = channels.two_way().first() {
        return Err((
            span,
            format!(
                "[inbox.escalate] {}: a two-way channel shows every question as it is asked; \
                 escalate by ntfy or webhook",
                channel.name()
            ),
        ));
    }
    Ok(Escalation { after, channels })
}
