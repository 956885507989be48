//! Tool results in the MCP `CallToolResult` shape, as an agent host hands
//! them to its model.

use ask_user_seam::ErrorCode;
use serde::Serialize;
use serde_json::Value;

/// `{"content":[{"type":"text","text":…}],"structuredContent":…,"isError":…,"error":…}`
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    pub content: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    pub is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text { text: String },
}

/// What failed, for the host (the model reads the text content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
}

impl ToolResult {
    /// A completed call: `text` for the model, `structured` beside it.
    pub fn success(text: String, structured: Value) -> Self {
        ToolResult {
            content: vec![Content::Text { text }],
            structured_content: Some(structured),
            is_error: false,
            error: None,
        }
    }

    /// A failed call with a known code, under that code's error name.
    pub fn coded(code: ErrorCode, message: &str) -> Self {
        Self::failure(code.name().unwrap_or_default(), Some(code), message)
    }

    /// A failed call; the model reads `Error: <message>`.
    pub fn failure(name: impl Into<String>, code: Option<ErrorCode>, message: &str) -> Self {
        ToolResult {
            content: vec![Content::Text {
                text: format!("Error: {message}"),
            }],
            structured_content: None,
            is_error: true,
            error: Some(ToolError {
                name: name.into(),
                code,
            }),
        }
    }

    /// The text of the first content block ("" when there is none).
    pub fn text(&self) -> &str {
        match self.content.first() {
            Some(Content::Text { text }) => text,
            None => "",
        }
    }

    /// The error code, when the call failed with one.
    pub fn code(&self) -> Option<&str> {
        Some(self.error.as_ref()?.code.as_ref()?.as_str())
    }
}
