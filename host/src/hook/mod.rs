//! `ask-user hook …`: the command an agent's own hooks run, so that the
//! agent's built-in question tool is answered through the user's chain of
//! answerers (the inbox, a script, a bridge) while its terminal still asks.

pub mod claude_code;
pub mod headless;
pub mod mcp_form;
pub mod settings;
pub mod waiting;
