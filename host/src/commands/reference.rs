//! The book's page of every command and flag (`docs/src/reference/cli.md`),
//! made from the command's own help, so that it cannot go stale: the test
//! fails when they differ, and `ASK_USER_UPDATE_DOCS=1` writes it again.

use clap::CommandFactory;

/// The page: each command's long help, depth first.
fn page() -> String {
    let mut page = String::from(
        "# The command line\n\nEvery command and flag of `ask-user`, as `ask-user help …` \
         says them. This page is made from the command itself by a test, which fails \
         when they differ; `ASK_USER_UPDATE_DOCS=1 cargo test -p ask-user --bin ask-user \
         reference` writes it again.\n",
    );
    let mut command = crate::Cli::command();
    command.build();
    describe(&mut page, &command, "ask-user");
    page
}

fn describe(page: &mut String, command: &clap::Command, path: &str) {
    let mut command = command.clone().bin_name(path);
    let help = command.render_long_help().to_string();
    page.push_str(&format!(
        "\n## `{path}`\n\n```text\n{}\n```\n",
        help.trim_end()
    ));
    for sub in command
        .get_subcommands()
        .filter(|sub| sub.get_name() != "help")
    {
        describe(page, sub, &format!("{path} {}", sub.get_name()));
    }
}

#[test]
fn the_command_line_reference_is_the_commands_own_help() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/src/reference/cli.md");
    let page = page();
    if std::env::var_os("ASK_USER_UPDATE_DOCS").is_some() {
        std::fs::write(path, &page).unwrap();
    }
    let written = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        written == page,
        "{path} is not the command's help: run ASK_USER_UPDATE_DOCS=1 cargo test -p ask-user \
         --bin ask-user reference, and read the change"
    );
}
