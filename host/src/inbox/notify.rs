//! Telling the human that an agent is waiting: a desktop notification, an
//! ntfy-style HTTP POST to a topic, a JSON webhook. Each is opt-in
//! (`[inbox.notify]` in the config file), each carries the question and the
//! page's address, and each runs on its own task with a time limit: a
//! notifier that fails is logged, and never delays or fails an ask.
//!
//! No notification carries the page's token. The desktop one carries a
//! one-time link (it works once, so the notification history keeps nothing
//! of worth); ntfy and webhooks get the address alone (they pass through
//! other people's servers): open the page with `ask-user inbox page`.
//!
//! The model's words are text in every channel ([`crate::text`]): escaped
//! for Slack's mrkdwn in a webhook's `text`, for markup in the desktop's
//! body, control characters dropped in ntfy's plain-text body.

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
    http: reqwest::Client,
}

impl Notifier {
    pub(crate) fn new(config: Notifications, address: String) -> std::io::Result<Self> {
        Ok(Notifier {
            config,
            address,
            http: super::http_client(None)?,
        })
    }

    /// A question arrived: sends each notification on a task of its own;
    /// `link` makes the desktop's one-time link to the page.
    pub(crate) fn arrived(&self, record: &Record, link: impl FnOnce() -> Option<String>) {
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
            let link = link().unwrap_or_else(|| self.address.clone());
            let body = format!("{}\n{}", crate::text::markup(&text), link);
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
                .body(format!(
                    "{}\n{}",
                    crate::text::clean(&text, true),
                    self.address
                ));
            spawn("ntfy", sent(request));
        }
        if let Some(url) = &self.config.webhook {
            let body = json!({
                "text": format!(
                    "An agent is waiting for your answer: {}\n{}",
                    crate::text::slack(&text),
                    self.address
                ),
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
