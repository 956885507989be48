//! Claude Code's hooks: what its `PermissionRequest` hook for the built-in
//! `AskUserQuestion` tool receives, as our request, and our answers as the
//! decision that answers it.
//!
//! The hook receives the questions (`tool_input.questions[]`: `question`,
//! `header`, `options[{label, description}]`, `multiSelect`) while the
//! terminal shows them; a decision `allow` whose `updatedInput` carries
//! `answers` keyed by each question's exact text answers them (several
//! labels joined with ", ", own words as any other text). Whichever answers
//! first wins. The input the decision carries is built from the questions
//! and our answers only: `answers` the model put in its own call never pass.

use ask_user_inbox::{Asker, WhenDown};
use ask_user_seam::{Answer, AskRequest, Question, QuestionOption};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::hook::AgentOption;
use ask_user_answerers::form::received::ReceivedForm;
use ask_user_mcp::SubAgent;

/// The hook event's name for the tool's permission request.
pub const PERMISSION_REQUEST: &str = "PermissionRequest";

/// The hook event's name for an MCP server's form.
pub const ELICITATION: &str = "Elicitation";

/// The hook event's name after the tool ran: its questions were answered
/// (at the terminal, or by a hook).
pub const POST_TOOL_USE: &str = "PostToolUse";

/// Claude Code's question tool.
pub const TOOL: &str = "AskUserQuestion";

/// The hook event's name before a tool runs: for our own MCP tool, it
/// notes which sub-agent calls it.
pub const PRE_TOOL_USE: &str = "PreToolUse";

/// Our MCP tool, under whatever name the user gave the server: what the
/// `PreToolUse` hook matches (a regular expression, as Claude Code's
/// matchers are).
pub const OUR_MCP_TOOL: &str = "mcp__.*__ask_user_question";

impl HookEvent {
    /// What every event carries; `None` for an event not read here.
    fn session(&self) -> Option<&Session> {
        match self {
            HookEvent::PermissionRequest(tool)
            | HookEvent::PreToolUse(tool)
            | HookEvent::PostToolUse(tool) => Some(&tool.session),
            HookEvent::Elicitation(form) => Some(&form.session),
            HookEvent::Other => None,
        }
    }

    /// The Claude Code session it belongs to.
    pub fn session_id(&self) -> Option<&str> {
        self.session()?.session_id.as_deref()
    }

    /// The session and the questions that were answered, when this is the
    /// event after the question tool ran: the hooks still asking them stop.
    pub fn answered(&self) -> Option<(&str, String)> {
        let HookEvent::PostToolUse(tool) = self else {
            return None;
        };
        if tool.tool_name != TOOL {
            return None;
        }
        let questions = tool.tool_input.get("questions")?;
        Some((tool.session.session_id.as_deref()?, fingerprint(questions)))
    }

    /// The call of our MCP tool about to be made, when this is the event
    /// before it: its tool use id, and a sub-agent's as the server will run
    /// it (a sub-agent of the session's root, named by its kind and the
    /// start of its id), `None` for the main agent's.
    pub fn our_tool_call(&self) -> Option<(&str, Option<SubAgent>)> {
        let HookEvent::PreToolUse(tool) = self else {
            return None;
        };
        let name = &tool.tool_name;
        if !(name.starts_with("mcp__") && name.ends_with("__ask_user_question")) {
            return None;
        }
        Some((tool.tool_use_id.as_deref()?, self.sub_agent(tool)))
    }

    fn sub_agent(&self, tool: &ToolUse) -> Option<SubAgent> {
        let session = &tool.session;
        let agent = session.agent_id.as_deref()?;
        let kind = session
            .agent_type
            .as_deref()
            .filter(|kind| {
                !kind.is_empty()
                    && kind.len() <= 64
                    && kind
                        .chars()
                        .all(|c| c.is_alphanumeric() || " -_.:".contains(c))
            })
            .unwrap_or("sub-agent");
        let short: String = agent
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(8)
            .collect();
        let key =
            crate::hook::session_key(&super::ClaudeCode, session.session_id.as_deref()).ok()?;
        Some(SubAgent {
            session: key,
            turn: session.prompt_id.clone(),
            name: format!("{kind} {short}"),
        })
    }

    /// What the inbox shows as asking ([`asker`]).
    /// No inbox running, its question is left to Claude Code's terminal.
    pub fn asker(&self) -> Asker {
        let server = match self {
            HookEvent::Elicitation(form) => form.mcp_server_name.as_deref(),
            _ => None,
        };
        let cwd = self.session().and_then(|session| session.cwd.as_deref());
        asker(cwd, server, WhenDown::Pass)
    }
}

/// What the inbox shows as asking: Claude Code, the folder it works in
/// (`cwd`, the home folder as `~`), and for a form the MCP server's name;
/// `when_down`, what its ask does when no inbox runs.
pub fn asker(cwd: Option<&str>, mcp_server: Option<&str>, when_down: WhenDown) -> Asker {
    crate::hook::asker("Claude Code", cwd, mcp_server, when_down)
}

/// What tells one batch of the tool's questions from another in the same
/// session: a digest of their texts in order, which the permission request
/// and the event after the tool ran both carry (Claude Code keys answers by
/// them too; the rest of their JSON may come back reshaped).
pub fn fingerprint(questions: &Value) -> String {
    let texts: Vec<&str> = questions
        .as_array()
        .into_iter()
        .flatten()
        .map(|question| {
            question
                .get("question")
                .and_then(Value::as_str)
                .unwrap_or_default()
        })
        .collect();
    ask_user_inbox::digest(&serde_json::to_string(&texts).expect("strings"))
}

/// What a hook receives on standard input, by its `hook_event_name`, as
/// far as it is read here; an event of another name is [`HookEvent::Other`].
#[derive(Debug, Deserialize)]
#[serde(tag = "hook_event_name")]
pub enum HookEvent {
    /// The question tool asks ([`PERMISSION_REQUEST`]).
    PermissionRequest(ToolUse),
    /// A tool is about to run ([`PRE_TOOL_USE`]).
    PreToolUse(ToolUse),
    /// A tool ran ([`POST_TOOL_USE`]).
    PostToolUse(ToolUse),
    /// An MCP server's form ([`ELICITATION`]).
    Elicitation(Form),
    #[serde(other)]
    Other,
}

/// What every event carries.
#[derive(Debug, Default, Deserialize)]
pub struct Session {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// The sub-agent the hook fires in; absent in the main thread.
    pub agent_id: Option<String>,
    /// The sub-agent's kind (`general-purpose`, a user's agent's name).
    pub agent_type: Option<String>,
    /// The user prompt (the turn) this event belongs to.
    pub prompt_id: Option<String>,
}

/// A tool's event.
#[derive(Debug, Deserialize)]
pub struct ToolUse {
    #[serde(flatten)]
    pub session: Session,
    #[serde(default)]
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    /// An MCP call of the tool carries the same id.
    pub tool_use_id: Option<String>,
}

/// An MCP server's form: its message, mode and schema.
#[derive(Debug, Deserialize)]
pub struct Form {
    #[serde(flatten)]
    pub session: Session,
    pub mcp_server_name: Option<String>,
    #[serde(default)]
    pub message: String,
    pub mode: Option<String>,
    pub requested_schema: Option<Value>,
}

/// What a hook prints: the decision its event takes.
#[derive(Serialize)]
struct HookOutput<'a> {
    #[serde(rename = "hookSpecificOutput")]
    specific: Specific<'a>,
}

#[derive(Serialize)]
#[serde(tag = "hookEventName")]
enum Specific<'a> {
    PermissionRequest {
        decision: Decision<'a>,
    },
    Elicitation {
        action: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<Map<String, Value>>,
    },
}

/// The permission decision: the questions answered, or refused with a
/// message the model gets.
#[derive(Serialize)]
#[serde(tag = "behavior", rename_all = "lowercase")]
enum Decision<'a> {
    Allow {
        #[serde(rename = "updatedInput")]
        updated_input: UpdatedInput<'a>,
    },
    Deny {
        message: &'static str,
    },
}

#[derive(Serialize)]
struct UpdatedInput<'a> {
    /// As the tool received them, passed back unchanged.
    questions: &'a Value,
    /// Each answered question's text, and its answer.
    answers: Map<String, Value>,
}

impl HookOutput<'_> {
    fn json(&self) -> Value {
        serde_json::to_value(self).expect("a hook's output is plain JSON")
    }
}

/// What a hook event asks of the person, and how the answer goes back.
#[derive(Debug)]
pub enum Ask {
    /// The question tool's questions (a `PermissionRequest`).
    Questions(Asked),
    /// An MCP server's form (an `Elicitation`).
    Form(ReceivedForm),
}

impl Ask {
    /// What `input` asks; `Ok(None)` for an event that asks nothing of us
    /// (another event, another tool, a form of a mode or a field we cannot
    /// show, which Claude Code then shows itself).
    pub fn from_hook(event: &HookEvent) -> Result<Option<Ask>, String> {
        if let HookEvent::Elicitation(form) = event {
            let schema = form
                .requested_schema
                .as_ref()
                .filter(|_| form.mode.as_deref().is_none_or(|mode| mode == "form"));
            return Ok(schema
                .and_then(|schema| ReceivedForm::from_schema(&form.message, schema))
                .map(Ask::Form));
        }
        Ok(Asked::from_hook(event)?.map(Ask::Questions))
    }

    /// Our request.
    pub fn request(&self) -> &AskRequest {
        match self {
            Ask::Questions(asked) => &asked.request,
            Ask::Form(form) => &form.request,
        }
    }

    /// What the hook prints for `answers`.
    pub fn output(&self, answers: &[Answer]) -> Value {
        match self {
            Ask::Questions(asked) => asked.decision(answers),
            Ask::Form(form) => HookOutput {
                specific: Specific::Elicitation {
                    action: "accept",
                    content: Some(form.content(answers)),
                },
            }
            .json(),
        }
    }

    /// What the hook prints when the person dismissed the questions (in the
    /// inbox, on a channel): the question tool is denied with what the
    /// model is told of a dismissal, and a form is declined (its server
    /// hears so), rather than left to Claude Code's terminal.
    pub fn dismissed(&self) -> Value {
        let specific = match self {
            Ask::Questions(_) => Specific::PermissionRequest {
                decision: Decision::Deny {
                    message: ask_user_inbox::DISMISSED,
                },
            },
            Ask::Form(_) => Specific::Elicitation {
                action: "decline",
                content: None,
            },
        };
        HookOutput { specific }.json()
    }
}

/// The questions of one `AskUserQuestion` call.
#[derive(Debug)]
pub struct Asked {
    /// As the tool received them, passed back unchanged.
    questions: Value,
    /// Ours: ids `q1`, `q2`, … in order, so an answers file or a rule can
    /// name them.
    pub request: AskRequest,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolQuestion {
    question: String,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    options: Vec<AgentOption>,
    #[serde(default)]
    multi_select: bool,
}

impl Asked {
    /// The questions of `input`, when it is a permission request for the
    /// question tool; `Ok(None)` for any other event; an error saying what
    /// is wrong with questions of another shape.
    pub fn from_hook(event: &HookEvent) -> Result<Option<Asked>, String> {
        match event {
            HookEvent::PermissionRequest(tool) if tool.tool_name == TOOL => {
                Asked::from_tool_input(&tool.tool_input).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The questions of the tool's input; an error saying what is wrong
    /// with questions of another shape.
    pub fn from_tool_input(input: &Value) -> Result<Asked, String> {
        let questions = input
            .get("questions")
            .and_then(Value::as_array)
            .filter(|questions| !questions.is_empty())
            .ok_or("the AskUserQuestion input has no questions")?;
        let mut request = AskRequest {
            questions: Vec::with_capacity(questions.len()),
        };
        for (n, value) in questions.iter().enumerate() {
            let asked: ToolQuestion = serde_json::from_value(value.clone())
                .map_err(|e| format!("question {} of the AskUserQuestion input: {e}", n + 1))?;
            let mut question = Question::new(format!("q{}", n + 1), asked.question);
            question.header = asked.header;
            if !asked.options.is_empty() {
                question.options = Some(
                    asked
                        .options
                        .into_iter()
                        .map(QuestionOption::from)
                        .collect(),
                );
                question.multi_select = Some(asked.multi_select);
            }
            request.questions.push(question);
        }
        Ok(Asked {
            questions: Value::Array(questions.clone()),
            request,
        })
    }

    /// Their [`fingerprint`].
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.questions)
    }

    /// The hook's decision that answers the questions with `answers`.
    pub fn decision(&self, answers: &[Answer]) -> Value {
        HookOutput {
            specific: Specific::PermissionRequest {
                decision: self.permission(answers),
            },
        }
        .json()
    }

    /// The permission that answers the questions with `answers`: each
    /// question's labels joined with ", ", own words after them; a skipped
    /// question has no answer (Claude Code tells the model so).
    pub fn allow(&self, answers: &[Answer]) -> Value {
        serde_json::to_value(self.permission(answers)).expect("a decision is plain JSON")
    }

    fn permission(&self, answers: &[Answer]) -> Decision<'_> {
        let mut by_text = Map::new();
        for question in &self.request.questions {
            let Some(answer) = Answer::of(answers, &question.id) else {
                continue;
            };
            let parts: Vec<&str> = answer.parts().collect();
            if !parts.is_empty() {
                by_text.insert(question.question.clone(), json!(parts.join(", ")));
            }
        }
        Decision::Allow {
            updated_input: UpdatedInput {
                questions: &self.questions,
                answers: by_text,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event `name` of the question tool with `tool_input`, read as
    /// Claude Code sends it.
    fn event(name: &str, tool: &str, tool_input: Value) -> HookEvent {
        serde_json::from_value(json!({
            "hook_event_name": name, "session_id": "s", "tool_name": tool,
            "tool_input": tool_input, "permission_mode": "default",
        }))
        .unwrap()
    }

    fn input(tool_input: Value) -> HookEvent {
        event(PERMISSION_REQUEST, TOOL, tool_input)
    }

    fn deploy() -> Value {
        json!({"questions": [
            {"question": "Where to?", "header": "Deploy", "multiSelect": false,
             "options": [{"label": "Staging", "description": "Safe."}, {"label": "Production"}]},
            {"question": "Which checks?", "header": "Checks", "multiSelect": true,
             "options": [{"label": "Unit"}, {"label": "Load"}]},
            {"question": "Anything else?", "header": "Note", "options": []},
        ],
        // What the model claims the user said: never passed on.
        "answers": {"Where to?": "Production"}})
    }

    #[test]
    fn the_questions_become_ours_in_order() {
        let asked = Asked::from_hook(&input(deploy())).unwrap().unwrap();
        let ids: Vec<&str> = asked
            .request
            .questions
            .iter()
            .map(|q| q.id.as_str())
            .collect();
        assert_eq!(ids, ["q1", "q2", "q3"]);
        let first = &asked.request.questions[0];
        assert_eq!(first.header.as_deref(), Some("Deploy"));
        assert_eq!(
            first.labels().collect::<Vec<_>>(),
            ["Staging", "Production"]
        );
        assert!(asked.request.questions[1].is_multi_select());
        assert!(asked.request.questions[2].options.is_none(), "free text");
    }

    #[test]
    fn the_decision_carries_our_answers_only() {
        let asked = Asked::from_hook(&input(deploy())).unwrap().unwrap();
        // In another order than the questions: matched by id, not place.
        let answers = [
            Answer {
                id: "q2".into(),
                selected: vec!["Unit".into(), "Load".into()],
                custom: Some("and lint".into()),
            },
            Answer::skipped("q3"),
            Answer {
                id: "q1".into(),
                selected: vec!["Staging".into()],
                custom: None,
            },
        ];
        let decision = asked.decision(&answers);
        let output = &decision["hookSpecificOutput"];
        assert_eq!(output["hookEventName"], "PermissionRequest");
        assert_eq!(output["decision"]["behavior"], "allow");
        let updated = &output["decision"]["updatedInput"];
        assert_eq!(
            updated["answers"],
            json!({"Where to?": "Staging", "Which checks?": "Unit, Load, and lint"})
        );
        assert_eq!(updated["questions"], deploy()["questions"]);
        assert!(
            updated
                .get("answers")
                .unwrap()
                .get("Anything else?")
                .is_none()
        );
    }

    #[test]
    fn an_mcp_servers_form_is_asked_and_answered_as_its_content() {
        let form = |mode: &str| -> HookEvent {
            serde_json::from_value(json!({
                "hook_event_name": ELICITATION, "message": "Deploy?", "mode": mode,
                "requested_schema": {"type": "object", "properties": {
                    "go": {"type": "boolean", "title": "Go ahead?"}}},
                "mcp_server_name": "deployer",
            }))
            .unwrap()
        };
        let elicitation = form("form");
        assert_eq!(elicitation.asker().agent, "Claude Code · deployer");
        let ask = Ask::from_hook(&elicitation).unwrap().unwrap();
        assert_eq!(ask.request().questions[0].id, "go");
        let answers = [Answer {
            id: "go".into(),
            selected: vec!["Yes".into()],
            custom: None,
        }];
        assert_eq!(
            ask.output(&answers),
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation",
                "action": "accept", "content": {"go": true}}})
        );
        assert!(
            Ask::from_hook(&form("url")).unwrap().is_none(),
            "a page is the client's"
        );
        assert_eq!(
            ask.dismissed(),
            json!({"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "decline"}}),
            "a dismissed form is declined, with nothing of its content"
        );
    }

    #[test]
    fn dismissed_questions_are_denied_with_what_the_model_is_told() {
        let ask = Ask::from_hook(&input(deploy())).unwrap().unwrap();
        assert_eq!(
            ask.dismissed(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": ask_user_inbox::DISMISSED}}})
        );
    }

    #[test]
    fn a_batch_is_told_by_its_question_texts_whatever_their_shape() {
        let asked = Asked::from_hook(&input(deploy())).unwrap().unwrap();
        // The same texts, keys in another order and an option dropped.
        let reshaped = json!([
            {"header": "Deploy", "question": "Where to?"},
            {"question": "Which checks?"},
            {"question": "Anything else?"},
        ]);
        assert_eq!(asked.fingerprint(), fingerprint(&reshaped));
        let other = json!([{"question": "Where to?"}, {"question": "Which checks?"}]);
        assert_ne!(asked.fingerprint(), fingerprint(&other));
        let answered = event(POST_TOOL_USE, TOOL, json!({"questions": reshaped}));
        assert_eq!(answered.answered(), Some(("s", asked.fingerprint())));
    }

    #[test]
    fn the_asker_is_claude_code_or_a_forms_server_in_its_folder() {
        let asked = |cwd: Option<&str>, server| asker(cwd, server, WhenDown::Pass);
        assert_eq!(asked(Some("/srv/app"), None).agent, "Claude Code");
        assert_eq!(
            asked(Some("/srv/app"), Some("deployer")).agent,
            "Claude Code · deployer"
        );
        // The folder goes beside the name, as it is: every surface shows it.
        assert_eq!(
            asked(Some("/srv/app"), None).cwd.as_deref(),
            Some("/srv/app")
        );
        assert_eq!(asked(None, None).cwd, None);
    }

    #[test]
    fn other_events_pass_and_broken_questions_are_named() {
        let other = event(POST_TOOL_USE, TOOL, deploy());
        assert!(Asked::from_hook(&other).unwrap().is_none());
        let bash = event(PERMISSION_REQUEST, "Bash", deploy());
        assert!(Asked::from_hook(&bash).unwrap().is_none());
        // An event of a name not read here, whatever it carries.
        let stop: HookEvent =
            serde_json::from_value(json!({"hook_event_name": "Stop", "session_id": 3})).unwrap();
        assert!(matches!(stop, HookEvent::Other));
        assert!(Ask::from_hook(&stop).unwrap().is_none());
        let error = Asked::from_hook(&input(json!({"questions": [{"header": "x"}]}))).unwrap_err();
        assert!(
            error.contains("question 1") && error.contains("question"),
            "{error}"
        );
        assert!(Asked::from_hook(&input(json!({}))).is_err());
    }

    #[test]
    fn only_a_sub_agents_call_of_our_tool_is_noted_with_a_plain_name() {
        let named =
            |name: &str, tool: &str, agent: Option<&str>, kind: Option<&str>| -> HookEvent {
                serde_json::from_value(json!({
                    "hook_event_name": name, "session_id": "0b9d3c6e", "tool_name": tool,
                    "tool_input": {}, "tool_use_id": "toolu_01", "agent_id": agent,
                    "agent_type": kind, "prompt_id": "p1",
                }))
                .unwrap()
            };
        let pre = |tool: &str, agent, kind| named(PRE_TOOL_USE, tool, agent, kind);
        let ours = "mcp__ask-user__ask_user_question";
        let input = pre(ours, Some("a70dee6c5f1e"), Some("general-purpose"));
        let (call, sub) = input.our_tool_call().unwrap();
        assert_eq!(call, "toolu_01");
        assert_eq!(
            sub,
            Some(SubAgent {
                session: "claude-code-0b9d3c6e".into(),
                turn: Some("p1".into()),
                name: "general-purpose a70dee6c".into(),
            })
        );
        // The main thread's call: ours, by no sub-agent.
        assert_eq!(
            pre(ours, None, None).our_tool_call(),
            Some(("toolu_01", None))
        );
        // Another tool, another event: not ours.
        assert!(
            pre("mcp__other__deploy", Some("a1"), None)
                .our_tool_call()
                .is_none()
        );
        let post = named(POST_TOOL_USE, ours, Some("a1"), None);
        assert!(post.our_tool_call().is_none());
        // A kind that is not plain text is not shown.
        let odd = pre(ours, Some("a1"), Some("x\u{1b}[2J"));
        assert_eq!(odd.our_tool_call().unwrap().1.unwrap().name, "sub-agent a1");
    }
}
