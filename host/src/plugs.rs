//! The seam plugs, and the tool composed with one: a component whose only
//! imports are WASI 0.2, for runtimes that bring no seam of their own (the
//! wasmtime CLI, wassette, jco, wasmtime-py; docs/src/embedding/runtimes.md).
//!
//! A plug exports `dsh:ask-user/user-questions@0.1.0` and the `types` it
//! uses; [`compose`] instantiates it and hands both to the tool's imports,
//! as `wac plug` does. In the [`Face::Wassette`] form, a third component
//! takes the tool's export and exports it as one typed function, with the
//! tool's description in the component's `package-docs`. The plugs and the
//! face are built from `plugs/` and `faces/` in the repository and shipped
//! built, like the tool (scripts/update-component; a test holds the bytes
//! to a rebuild).

use std::fmt;

use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions, NodeId};

const TYPES: &str = "dsh:ask-user/types@0.1.0";
const SEAM: &str = "dsh:ask-user/user-questions@0.1.0";
const TOOL: &str = "dsh:ask-user/tool@0.1.0";

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

/// What the composed component exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Face {
    /// The tool's own export, `dsh:ask-user/tool@0.1.0`: `definition` and
    /// `execute(arguments)`, the arguments as JSON text.
    #[default]
    Tool,
    /// One typed world-level function, `ask-user-question(questions)`, and
    /// the tool's description in `package-docs`: what wassette lists as one
    /// tool with the questions' schema.
    Wassette,
}

impl Face {
    /// The face component, if the form has one.
    pub fn component(self) -> Option<&'static [u8]> {
        match self {
            Face::Tool => None,
            Face::Wassette => Some(include_bytes!("../plugs/wassette-face.wasm")),
        }
    }
}

/// The function the wassette face exports.
pub const WASSETTE_FUNCTION: &str = "ask-user-question";

/// Why a tool and a plug could not be composed.
#[derive(Debug)]
pub struct ComposeError(String);

impl fmt::Display for ComposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ComposeError {}

fn failed(what: &str, e: impl fmt::Display) -> ComposeError {
    ComposeError(format!("{what}: {e:#}"))
}

/// `tool` (a component that imports the seam, such as
/// [`COMPONENT`](crate::COMPONENT)) with `plug` supplying the seam, in the
/// form `face`: one component that imports what the plug imports. For
/// [`Face::Wassette`], `description` is what the model is told (the tool's
/// definition's), written into the component's `package-docs` as the
/// function's.
pub fn compose(
    tool: &[u8],
    plug: Plug,
    face: Face,
    description: &str,
) -> Result<Vec<u8>, ComposeError> {
    let mut graph = CompositionGraph::new();
    let mut register = |name: &str, bytes: &[u8], what: &str| {
        let package = Package::from_bytes(name, None, bytes.to_vec(), graph.types_mut())
            .map_err(|e| failed(&format!("{what} is not a component"), e))?;
        graph
            .register_package(package)
            .map_err(|e| failed(&format!("{what} cannot be composed"), e))
    };
    let tool = register("ask-user:tool", tool, "the tool")?;
    let socket = register(
        &format!("ask-user:plug-{}", plug.name()),
        plug.component(),
        "the plug",
    )?;
    let face_package = face
        .component()
        .map(|bytes| register("ask-user:face", bytes, "the face"))
        .transpose()?;

    let plugged = graph.instantiate(socket);
    let tooled = graph.instantiate(tool);
    let misfit = |e| {
        failed(
            &format!(
                "the tool, the {} plug and the form {face:?} do not fit together (a tool of \
                 another contract version?)",
                plug.name()
            ),
            e,
        )
    };
    for name in [TYPES, SEAM] {
        pass(&mut graph, plugged, tooled, name).map_err(misfit)?;
    }
    match face_package {
        None => export(&mut graph, tooled, TOOL)?,
        Some(face_package) => {
            let faced = graph.instantiate(face_package);
            pass(&mut graph, plugged, faced, TYPES).map_err(misfit)?;
            pass(&mut graph, tooled, faced, TOOL).map_err(misfit)?;
            export(&mut graph, faced, WASSETTE_FUNCTION)?;
        }
    }
    let mut bytes = graph
        .encode(EncodeOptions::default())
        .map_err(|e| failed("the composed component cannot be encoded", e))?;
    if face == Face::Wassette {
        append_package_docs(&mut bytes, &wassette_description(description)?);
    }
    Ok(bytes)
}

/// Gives `name`, exported by instance `from`, to instance `to` as its
/// import of that name.
fn pass(graph: &mut CompositionGraph, from: NodeId, to: NodeId, name: &str) -> Result<(), String> {
    let export = graph
        .alias_instance_export(from, name)
        .map_err(|e| format!("{e:#}"))?;
    graph
        .set_instantiation_argument(to, name, export)
        .map_err(|e| format!("{e:#}"))
}

/// Exports `name` of instance `from` from the composition.
fn export(graph: &mut CompositionGraph, from: NodeId, name: &str) -> Result<(), ComposeError> {
    let item = graph
        .alias_instance_export(from, name)
        .map_err(|e| failed(&format!("no {name} to export"), e))?;
    graph
        .export(item, name)
        .map_err(|e| failed(&format!("{name} cannot be exported"), e))
}

/// The tool's description as the wassette face's schema names things: WIT
/// spells `multi_select` `multi-select`, and the result is the answers'
/// list, not their JSON text.
fn wassette_description(description: &str) -> Result<String, ComposeError> {
    let result = "The result is JSON: {\"answers\":[{\"id\":\"…\",\"selected\":[\"…\"],\"custom\":\"…\"}]}, \
                  one item per question.";
    if !description.contains("multi_select") || !description.contains(result) {
        return Err(ComposeError(
            "the tool's description does not name multi_select and its result as this command \
             expects: a tool of another version? (compose the tool this command ships)"
                .to_owned(),
        ));
    }
    Ok(description.replace("multi_select", "multi-select").replace(
        result,
        "The result is {\"ok\": the answers, one item per question: {id, selected, custom}}; \
         when the call fails, {\"err\": {name, code, message}}, the message saying what to do \
         next.",
    ))
}

/// Appends a `package-docs` custom section (wit-parser's format, version 1:
/// a byte, then JSON) saying that the root world's `ask-user-question` does
/// what `description` says: wassette reads it as the tool's description,
/// and `wasm-tools component wit` shows it.
fn append_package_docs(bytes: &mut Vec<u8>, description: &str) {
    use wasm_encoder::ComponentSection;
    let metadata = serde_json::json!({"worlds": {"root": {
        "func_exports": {WASSETTE_FUNCTION: {"docs": description}},
    }}});
    let mut data = vec![1u8];
    data.extend_from_slice(metadata.to_string().as_bytes());
    wasm_encoder::CustomSection {
        name: "package-docs".into(),
        data: data.into(),
    }
    .append_to_component(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wassette_description_names_what_wassette_shows() {
        let adapted = wassette_description(ask_user_tool::definition::DESCRIPTION).unwrap();
        assert!(adapted.contains("Set multi-select when"), "{adapted}");
        assert!(!adapted.contains("multi_select"), "{adapted}");
        assert!(
            adapted.contains("{\"err\": {name, code, message}}"),
            "{adapted}"
        );
        // A description this command does not know is refused, not half
        // adapted.
        assert!(wassette_description("Ask the user; set multi_select.").is_err());
    }
}
