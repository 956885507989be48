//! The seam plugs, and the tool composed with one: a component whose only
//! imports are WASI 0.2, for runtimes that bring no seam of their own (the
//! wasmtime CLI, wassette, jco, wasmtime-py; docs/src/embedding/runtimes.md).
//!
//! A plug exports `dsh:ask-user/user-questions@0.1.0` and the `types` it
//! uses; [`compose`] instantiates it and hands both to the tool's imports,
//! as `wac plug` does. The plugs are built from `plugs/` in the repository
//! and shipped built, like the tool (scripts/update-component; a test holds
//! the bytes to a rebuild).

use std::fmt;

/// A seam plug the command ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Plug {
    /// A person answers in an inbox, reached over `wasi:http`
    /// (`ASK_USER_INBOX_URL`, `ASK_USER_AGENT_TOKEN`).
    Inbox,
    /// Answers from `ASK_USER_ANSWERS`, the JSON of an answers file: tests
    /// and CI.
    Answers,
    /// A plain prompt on standard error, answered on standard input.
    Terminal,
}

impl Plug {
    /// Every plug, in the order of the docs.
    pub const ALL: [Plug; 3] = [Plug::Inbox, Plug::Answers, Plug::Terminal];

    /// Its name, as `--plug` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Plug::Inbox => "inbox",
            Plug::Answers => "answers",
            Plug::Terminal => "terminal",
        }
    }

    /// The plug component itself.
    pub fn component(self) -> &'static [u8] {
        match self {
            Plug::Inbox => include_bytes!("../plugs/inbox.wasm"),
            Plug::Answers => include_bytes!("../plugs/answers.wasm"),
            Plug::Terminal => include_bytes!("../plugs/terminal.wasm"),
        }
    }
}

/// Why a tool and a plug could not be composed.
#[derive(Debug)]
pub struct ComposeError(String);

impl fmt::Display for ComposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ComposeError {}

/// `tool` (a component that imports the seam, such as
/// [`COMPONENT`](crate::COMPONENT)) with `plug` supplying the seam: one
/// component that exports what `tool` exports and imports what the plug
/// imports.
pub fn compose(tool: &[u8], plug: Plug) -> Result<Vec<u8>, ComposeError> {
    use wac_graph::types::Package;
    use wac_graph::{CompositionGraph, EncodeOptions};

    let failed = |what: &str, e: &dyn fmt::Display| ComposeError(format!("{what}: {e:#}"));
    let mut graph = CompositionGraph::new();
    let tool = Package::from_bytes("ask-user:tool", None, tool.to_vec(), graph.types_mut())
        .map_err(|e| failed("the tool is not a component", &e))?;
    let tool = graph
        .register_package(tool)
        .map_err(|e| failed("the tool cannot be composed", &e))?;
    let name = format!("ask-user:plug-{}", plug.name());
    let socket = Package::from_bytes(&name, None, plug.component(), graph.types_mut())
        .map_err(|e| failed("the plug is not a component", &e))?;
    let socket = graph
        .register_package(socket)
        .map_err(|e| failed("the plug cannot be composed", &e))?;
    wac_graph::plug(&mut graph, vec![socket], tool).map_err(|e| {
        failed(
            &format!(
                "the {} plug does not fit the tool's imports (a tool of another contract \
                 version?)",
                plug.name()
            ),
            &e,
        )
    })?;
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| failed("the composed component cannot be encoded", &e))
}
