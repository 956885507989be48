//! The WIT package as people consume it with `wkg` or a bindings
//! generator: `wit/v0.1.0.wasm`, the binary encoding of `wit/v0.1.0/`,
//! docs included. The checked-in file is held to an encoding of the folder
//! made now; `ASK_USER_UPDATE_DOCS=1` writes it again.

use std::path::Path;

use wit_parser::{Resolve, WorldItem};

const FOLDER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/wit/v0.1.0");
const BINARY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/wit/v0.1.0.wasm");

fn encoded() -> Vec<u8> {
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_dir(Path::new(FOLDER)).unwrap();
    wit_component::encode(&resolve, package, false).unwrap()
}

#[test]
fn the_wit_binary_is_the_folder_encoded_with_its_docs() {
    let encoded = encoded();
    if std::env::var_os("ASK_USER_UPDATE_DOCS").is_some() {
        std::fs::write(BINARY, &encoded).unwrap();
    }
    let shipped = std::fs::read(BINARY).unwrap();
    assert!(
        shipped == encoded,
        "wit/v0.1.0.wasm is not wit/v0.1.0/ encoded now: run \
         ASK_USER_UPDATE_DOCS=1 cargo test -p ask-user-contract --test wit_binary"
    );

    // Decoded, it is the package with its docs: the package's, an
    // interface's, a function's, a record field's.
    let wit_parser::decoding::DecodedWasm::WitPackage(resolve, package) =
        wit_parser::decoding::decode(&shipped).unwrap()
    else {
        panic!("a WIT package, not a component");
    };
    let package = &resolve.packages[package];
    assert_eq!(package.name.to_string(), "dsh:ask-user@0.1.0");
    assert!(
        package
            .docs
            .contents
            .as_deref()
            .unwrap()
            .contains("ask_user_question")
    );
    let tool = &resolve.interfaces[package.interfaces["tool"]];
    let execute = &tool.functions["execute"];
    assert!(
        execute
            .docs
            .contents
            .as_deref()
            .unwrap()
            .starts_with("Run the tool")
    );
    let world = &resolve.worlds[package.worlds["ask-user-tool"]];
    assert!(world.docs.contents.is_some());
    assert!(
        world
            .exports
            .values()
            .any(|item| matches!(item, WorldItem::Interface { .. }))
    );
    let types = &resolve.interfaces[package.interfaces["types"]];
    let answer = &resolve.types[types.types["answer"]];
    let wit_parser::TypeDefKind::Record(record) = &answer.kind else {
        panic!("answer is a record");
    };
    let custom = record.fields.iter().find(|f| f.name == "custom").unwrap();
    assert!(
        custom
            .docs
            .contents
            .as_deref()
            .unwrap()
            .starts_with("Free text")
    );
}
