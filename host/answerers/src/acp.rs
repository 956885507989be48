//! The `acp` answerer (feature `acp`): for an agent that speaks the Agent
//! Client Protocol to an editor (Zed, or any client of ACP), the batch goes
//! to the editor as one `elicitation/create` form, in the editor's own UI,
//! scoped to the agent's session (and, when given, the tool call).
//!
//! The agent host hands it its connection to the client, what the client
//! declared at `initialize`, and the session:
//!
//! ```ignore
//! let acp = AcpAnswerer::new(connection.clone(), &client_capabilities, session_id.clone());
//! seam.waterfall().register(acp, Placement { scope: Some(root_key), prepend: true, ..Default::default() });
//! ```
//!
//! The form is the one `ask-user mcp` shows an MCP client ([`crate::form`]).
//! A client that did not declare form elicitation, or that answers the
//! request with an error, is passed over: the question goes down the chain.
//! Declined or cancelled in the editor, the ask ends `ASK_CANCELLED`. When
//! the turn is cancelled (or a time limit passes) while the form is open,
//! the request is withdrawn with `$/cancel_request`.
//!
//! The agent host must not wait for a tool call inside an ACP request
//! handler: the connection answers nothing while a handler runs, the form's
//! answer included. Run the turn in a task (`connection.spawn`) and respond
//! to `session/prompt` from there.

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateElicitationRequest, ElicitationAction, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, SessionId, ToolCallId,
};
use agent_client_protocol::{Client, ErrorCode as RpcCode};
use ask_user_seam::{AnswerError, AnswerFuture, Answerer, Ask, AskError, ErrorCode, Next};
use serde_json::{Map, Value};

use crate::form::{self, Form, Renders};

/// What an ACP client's form shows: ACP's form schema has multi-select
/// lists, and a client may leave any field empty.
const RENDERS: Renders = Renders {
    arrays: true,
    text_last: true,
};

/// Answers a batch with one form in an ACP client's UI.
pub struct AcpAnswerer {
    connection: ConnectionTo<Client>,
    /// The client declared form elicitation at `initialize`.
    forms: bool,
    session: SessionId,
    tool_call: Option<ToolCallId>,
}

impl AcpAnswerer {
    /// Asks in `session`, over the agent's `connection` to the client whose
    /// `initialize` declared `capabilities`.
    pub fn new(
        connection: ConnectionTo<Client>,
        capabilities: &ClientCapabilities,
        session: SessionId,
    ) -> Self {
        let forms = capabilities
            .elicitation
            .as_ref()
            .is_some_and(|e| e.form.is_some());
        AcpAnswerer {
            connection,
            forms,
            session,
            tool_call: None,
        }
    }

    /// Ties the form to one tool call of the session (the editor shows it
    /// with that call), for an answerer made per call.
    pub fn for_tool_call(mut self, tool_call: ToolCallId) -> Self {
        self.tool_call = Some(tool_call);
        self
    }

    /// The `elicitation/create` request for `form`.
    fn request(&self, form: &Form) -> Result<CreateElicitationRequest, AnswerError> {
        let schema: ElicitationSchema = serde_json::from_value(form.schema())
            .map_err(|e| AnswerError::other(format!("the form could not be built: {e}")))?;
        let scope =
            ElicitationSessionScope::new(self.session.clone()).tool_call_id(self.tool_call.clone());
        Ok(CreateElicitationRequest::new(
            ElicitationFormMode::new(scope, schema),
            form.message(),
        ))
    }
}

impl Answerer for AcpAnswerer {
    fn name(&self) -> &str {
        "acp"
    }

    fn place(&self) -> &str {
        "in the editor"
    }

    fn answer<'a>(&'a self, ask: &'a Ask, next: Next<'a>) -> AnswerFuture<'a> {
        Box::pin(async move {
            if !self.forms {
                return next.run().await;
            }
            let form = Form::new(&ask.request, RENDERS).asked_by(ask.asked_by_label());
            // Dropped before its answer (the turn was cancelled), the sent
            // request is withdrawn with `$/cancel_request`.
            let sent = self.connection.send_request(self.request(&form)?);
            match sent.block_task().await {
                Ok(response) => match response.action {
                    ElicitationAction::Accept(accepted) => {
                        let content = accepted
                            .content
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(key, value)| Ok((key, serde_json::to_value(value)?)))
                            .collect::<Result<Map<String, Value>, serde_json::Error>>()
                            .map_err(AnswerError::other)?;
                        Ok(form.answers(&content)?)
                    }
                    ElicitationAction::Decline => Err(form::dismissed("declined").into()),
                    ElicitationAction::Cancel => Err(form::dismissed("cancelled").into()),
                    other => Err(AskError::new(
                        ErrorCode::InvalidAnswer,
                        format!(
                            "the editor answered the form with an action this host does not \
                             know ({other:?}); nothing was passed on. Ask in your reply instead"
                        ),
                    )
                    .into()),
                },
                Err(error) if error.code == RpcCode::REQUEST_CANCELLED => {
                    Err(form::dismissed("cancelled").into())
                }
                // No form after all (the client does not handle the method,
                // failed, or the connection is gone): the chain goes on.
                Err(error) => {
                    tracing::warn!(code = ?error.code, message = %error.message,
                        "the ACP client did not show the form; passing the question on");
                    next.run().await
                }
            }
        })
    }
}
