//! What the pages and services of `ask_user_question` are served with,
//! shared by the web answerer, the inbox and the MCP server:
//!
//! - [`answer_page`]: the page where a human answers, its event stream and
//!   its answer endpoint, for a [`Desk`](answer_page::Desk) (the questions
//!   behind it, and who may see and answer each), and the
//!   [`Gate`](answer_page::Gate) of one person's page;
//! - [`serve`]: HTTP on a TCP port or a private Unix socket, with a bound
//!   on connections and a clean stop;
//! - [`refusal`]: how a request is refused, one JSON body with a code and
//!   a message.

pub mod answer_page;
pub mod refusal;
pub mod serve;
