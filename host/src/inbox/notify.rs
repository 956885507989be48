//! Telling the human that an agent is waiting: a desktop notification, an
//! ntfy-style HTTP POST to a topic, a JSON webhook. Each is opt-in
//! (`[inbox.notify]` in the config file), each carries the question and the
//! page's address, and each runs on its own task with a time limit: a
//! notifier that fails is logged, and never delays or fails an ask.
//!
//! The page's token goes only into the desktop notification, which stays on
//! this machine. ntfy and webhooks get the address without it (they pass
//! through other people's servers); open the page from the machine, or from
//! a device that has the address with its token.

use std::time::Duration;

use serde_json::json;

use super::store::Record;

/// How long one notification may take.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

/// Which notifications to send.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    /// A desktop notification (freedesktop, over the session's D-Bus).
    pub desktop: bool,
    /// POST the question as text to this ntfy topic URL
    /// (`https://ntfy.sh/my-secret-topic`), with `Title` and `Click` headers.
    pub ntfy: Option<String>,
    /// POST `{"text":…, …}` to this URL (Slack's incoming webhooks take it).
    pub webhook: Option<String>,
}

/// Sends the notifications of new questions.
pub(crate) struct Notifier {
    config: Notifications,
    /// The inbox's address, without its token.
    address: String,
    /// The page's address with its token, for the desktop.
    page: String,
    http: reqwest::Client,
}

impl Notifier {
    pub(crate) fn new(
        config: Notifications,
        address: String,
        token: &str,
    ) -> std::io::Result<Self> {
        Ok(Notifier {
            config,
            page: format!("{address}/?token={token}"),
            address,
            http: super::http_client()?,
        })
    }

    /// A question arrived: sends each notification on a task of its own.
    pub(crate) fn arrived(&self, record: &Record) {
        let questions: Vec<&str> = record
            .request
            .questions
            .iter()
            .map(|q| q.question.as_str())
            .collect();
        let first = questions.first().copied().unwrap_or_default();
        let more = match questions.len() {
            0 | 1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let from = format!("session {} · {}", record.session, record.agent);
        let text = format!("{first}{more}\n{from}");
        if self.config.desktop {
            let body = format!("{text}\n{}", self.page);
            spawn("desktop", async move {
                notify_rust::Notification::new()
                    .appname("ask-user")
                    .summary("An agent is waiting for your answer")
                    .body(&body)
                    .show_async()
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
        }
        if let Some(url) = &self.config.ntfy {
            let request = self
                .http
                .post(url)
                .header("Title", "ask-user: an agent is waiting")
                .header("Click", &self.address)
                .header("Tags", "question")
                .body(format!("{text}\n{}", self.address));
            spawn("ntfy", sent(request));
        }
        if let Some(url) = &self.config.webhook {
            let body = json!({
                "text": format!("An agent is waiting for your answer: {text}\n{}", self.address),
                "id": record.id,
                "session": record.session,
                "agent": record.agent,
                "cwd": record.cwd,
                "questions": questions,
                "url": self.address,
            });
            let request = self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string());
            spawn("webhook", sent(request));
        }
    }
}

/// Sends `request`; a reply that is not a success is a failure.
async fn sent(request: reqwest::RequestBuilder) -> Result<(), String> {
    let response = request.send().await.map_err(|e| e.to_string())?;
    match response.status() {
        status if status.is_success() => Ok(()),
        status => Err(format!("the server replied {status}")),
    }
}

/// Runs one notification on its own task, within [`NOTIFY_TIMEOUT`];
/// a failure is logged.
fn spawn(
    kind: &'static str,
    notification: impl std::future::Future<Output = Result<(), String>> + Send + 'static,
) {
    tokio::spawn(async move {
        match tokio::time::timeout(NOTIFY_TIMEOUT, notification).await {
            Ok(Ok(())) => tracing::debug!(kind, "notified"),
            Ok(Err(error)) => tracing::warn!(kind, %error, "a notification failed"),
            Err(_) => tracing::warn!(kind, "a notification took too long and was dropped"),
        }
    });
}
