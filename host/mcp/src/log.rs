//! MCP logging (`logging/setLevel`, `notifications/message`; protocol
//! 2025-11-25 and earlier, which SEP-2577 deprecates): a client that sets a
//! level is told how each call goes (asked, answered, ended without an
//! answer). A client that sets none is sent nothing.

// rmcp marks the logging types deprecated along with the protocol feature.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};

use ask_user_runtime::ToolResult;
use rmcp::Peer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RoleServer;
use serde_json::json;

/// The logger name the messages carry.
const LOGGER: &str = "ask-user";

/// The level one client set, shared by its calls.
#[derive(Clone, Default)]
pub(crate) struct CallLog {
    level: Arc<Mutex<Option<LoggingLevel>>>,
}

impl CallLog {
    /// Sends messages at `level` and above from now on.
    pub fn set(&self, level: LoggingLevel) {
        *self.level.lock().unwrap_or_else(|e| e.into_inner()) = Some(level);
    }

    /// A call of `questions` questions started.
    pub async fn asking(&self, peer: &Peer<RoleServer>, questions: usize) {
        let data = json!({"event": "asking", "questions": questions,
            "message": format!("asking the user {questions} question(s)")});
        self.send(peer, LoggingLevel::Info, data).await;
    }

    /// A call ended with `result`.
    pub async fn ended(&self, peer: &Peer<RoleServer>, result: &ToolResult) {
        let (level, data) = match result.code() {
            None => (
                LoggingLevel::Info,
                json!({"event": "answered", "message": "the user answered"}),
            ),
            Some(code) => (
                LoggingLevel::Warning,
                json!({"event": "ended", "code": code,
                    "message": format!("the call ended without an answer: {code}")}),
            ),
        };
        self.send(peer, level, data).await;
    }

    async fn send(&self, peer: &Peer<RoleServer>, level: LoggingLevel, data: serde_json::Value) {
        let wanted = *self.level.lock().unwrap_or_else(|e| e.into_inner());
        if wanted.is_some_and(|wanted| rank(level) >= rank(wanted)) {
            let message = LoggingMessageNotificationParam::new(level, data).with_logger(LOGGER);
            // A client gone is no reason to fail the call.
            let _ = peer.notify_logging_message(message).await;
        }
    }
}

/// Severity, lowest first (RFC 5424's order, as MCP's levels are).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
