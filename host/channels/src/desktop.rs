//! `desktop = true`: a freedesktop notification over the session's D-Bus,
//! with a one-time link to the page (it stays on this machine). Its body's
//! text is escaped for the markup some notification servers read.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use ask_user_inbox::notify::{Channel, ChannelError, ChannelKind, Configured, Note};

pub struct Desktop;

/// `desktop = true` or `false`.
#[derive(serde::Deserialize)]
#[serde(try_from = "toml::Value")]
pub struct Switch(bool);

impl TryFrom<toml::Value> for Switch {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, String> {
        value
            .as_bool()
            .map(Switch)
            .ok_or_else(|| format!("{value} is not true or false"))
    }
}

impl ChannelKind for Desktop {
    const NAME: &'static str = "desktop";
    const TITLE: &'static str = "the desktop";
    type Config = Switch;

    fn configure(&self, Switch(on): Switch) -> Result<Configured, ChannelError> {
        Ok(match on {
            true => Configured::Notifies(Arc::new(DesktopChannel)),
            false => Configured::Off,
        })
    }
}

#[derive(Debug)]
struct DesktopChannel;

impl Channel for DesktopChannel {
    fn name(&self) -> &'static str {
        Desktop::NAME
    }

    fn local(&self) -> bool {
        true
    }

    fn send(
        &self,
        note: Arc<Note>,
        _http: reqwest::Client,
    ) -> Pin<Box<dyn Future<Output = Result<(), ChannelError>> + Send>> {
        Box::pin(async move {
            let link = note.link.clone().unwrap_or_else(|| note.address.clone());
            let body = format!("{}\n{link}", ask_user_seam::text::markup(&note.text));
            notify_rust::Notification::new()
                .appname("ask-user")
                .summary("An agent is waiting for your answer")
                .body(&body)
                .show_async()
                .await
                .map(drop)
                .map_err(|e| ChannelError::down("the desktop's notifications").because(e))
        })
    }
}
