//! The answerer chain from a configuration file (TOML).
//!
//! Every key, with an example and its default: the book's page "The
//! config file" (`docs/src/reference/config.md`), whose TOML is read by a
//! test of this module, as every other page's is.
//!
//! Each `[[answerer]]` names its kind; `scope` and `timeout` are common to
//! every kind, and the other keys are the kind's own (see
//! [`crate::answerers::Kinds`]: a new kind is one registration).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use crate::agents::{Delegated, PolicySettings};
use crate::answerers::{ConfigProblem, KindTable, Kinds, Setup};
use crate::front_end;
use crate::inbox::notify::Channels;
use crate::inbox::settings::{InboxSettings, RawInbox};
use crate::runtime::{RuntimeConfig, SandboxSettings};
use crate::waterfall::Placement;

/// A configuration file that cannot be used; says where and why.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// A host's configuration: its answerers and its limits.
#[derive(Debug, Default)]
pub struct Config {
    /// Limit on every ask.
    pub timeout: Option<Duration>,
    /// Where to write the audit trail.
    pub audit: Option<PathBuf>,
    /// The answerers, in order.
    pub answerers: Vec<AnswererEntry>,
    /// The sandbox's limits: the defaults, with what the file sets.
    pub sandbox: RuntimeConfig,
    /// How `ask-user inbox serve` serves (`[inbox]`, read by the inbox).
    pub inbox: InboxSettings,
    /// The front ends' own tables (`[mcp]`), read by their settings'
    /// types.
    pub front_ends: front_end::Settings,
    /// What a delegated sub-agent's ask gets (`[policy]`).
    pub delegated: Delegated,
}

/// One answerer of the chain, configured but not started.
#[derive(Debug)]
pub struct AnswererEntry {
    /// Its kind's name, for messages.
    pub kind: String,
    pub setup: Box<dyn Setup>,
    pub placement: Placement,
}

impl AnswererEntry {
    /// An answerer of `kind`, at the end of the waterfall, for every request.
    pub fn new(kind: impl Into<String>, setup: Box<dyn Setup>) -> Self {
        AnswererEntry {
            kind: kind.into(),
            setup,
            placement: Placement::default(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    timeout: Option<toml::Spanned<String>>,
    audit: Option<PathBuf>,
    /// Checked here as an array of tables; read with its spans by
    /// [`answerers`].
    #[serde(default, rename = "answerer")]
    _answerer: Vec<toml::Table>,
    sandbox: Option<toml::Spanned<SandboxSettings>>,
    inbox: Option<RawInbox>,
    policy: Option<Spanned<PolicySettings>>,
}

/// What a config file may name: its answerers' kinds, its inbox's
/// channels, and the front ends' tables.
pub struct Registries {
    pub kinds: Kinds,
    pub channels: Channels,
    pub front_ends: front_end::Tables,
}

impl Registries {
    /// Every kind this program has: the answerers of [`crate::answerers`]
    /// (terminal, script, bridge, web) and the inbox's, and the channels of
    /// `ask_user_channels`.
    pub fn builtin() -> Self {
        let mut kinds = Kinds::builtin();
        kinds.register(crate::inbox::InboxKind::default());
        Registries {
            kinds,
            channels: ask_user_channels::builtin(),
            front_ends: front_end::Tables::builtin(),
        }
    }
}

impl Config {
    /// The default location: `$XDG_CONFIG_HOME/ask-user/config.toml`, else
    /// `~/.config/ask-user/config.toml`.
    pub fn default_path() -> Option<PathBuf> {
        Some(crate::files::user_dir("XDG_CONFIG_HOME", ".config")?.join("config.toml"))
    }

    /// Reads and checks the file at `path`, with the built-in answerer
    /// kinds ([`kinds`]).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_with(path, &Registries::builtin())
    }

    /// Reads and checks the file at `path`; its answerers and channels may
    /// be of the kinds in `registries`.
    pub fn load_with(path: &Path, registries: &Registries) -> Result<Self, ConfigError> {
        let text = crate::files::read_bounded(path, MAX_CONFIG_BYTES)
            .map_err(|e| ConfigError(format!("cannot read the config {}: {e}", path.display())))?;
        // A bare file name's folder is the current one.
        let base = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        Self::parse(&text, base, registries).map_err(|(span, problem)| {
            let line = line_of(&text, span.start);
            ConfigError(format!("{} line {line}: {problem}", path.display()))
        })
    }

    fn parse(
        text: &str,
        base: &Path,
        registries: &Registries,
    ) -> Result<Self, (Range<usize>, String)> {
        let (raw, front_ends) = read(text, &registries.front_ends)?;
        let timeout = raw
            .timeout
            .map(|t| duration(t.as_ref()).map_err(|e| (t.span(), e)))
            .transpose()?;
        let answerers = answerers(text, base, &registries.kinds)?;
        let sandbox = match raw.sandbox {
            Some(sandbox) => {
                let span = sandbox.span();
                sandbox
                    .into_inner()
                    .apply()
                    .map_err(|problem| (span, problem))?
            }
            None => RuntimeConfig::default(),
        };
        let inbox = match raw.inbox {
            Some(inbox) => InboxSettings::read(inbox, &registries.channels)?,
            None => InboxSettings::default(),
        };
        let delegated = match raw.policy {
            Some(policy) => {
                let span = policy.span();
                policy.into_inner().delegated().map_err(|e| (span, e))?
            }
            None => Delegated::Refuse,
        };
        Ok(Config {
            timeout,
            audit: raw.audit.map(|p| base.join(p)),
            answerers,
            sandbox,
            inbox,
            front_ends,
            delegated,
        })
    }
}

/// The file's top-level table: the front ends' tables taken out and read
/// by their settings' types, and the rest read as a [`RawConfig`]. A key
/// that is neither is refused listing both.
fn read(
    text: &str,
    tables: &front_end::Tables,
) -> Result<(RawConfig, front_end::Settings), (Range<usize>, String)> {
    let root =
        DeTable::parse(text).map_err(|e| (e.span().unwrap_or(0..0), e.message().to_owned()))?;
    let span = root.span();
    let mut rest = root.into_inner();
    let mut settings = front_end::Settings::default();
    let own: Vec<_> = rest
        .keys()
        .filter(|key| tables.named(key.get_ref()).is_some())
        .map(|key| key.get_ref().to_string())
        .collect();
    for key in own {
        let (key, table) = rest.remove_entry(key.as_str()).expect("a key just listed");
        let front_end = tables.named(key.get_ref()).expect("a front end's key");
        front_end
            .read(table, &mut settings)
            .map_err(|problem| (problem.span.unwrap_or(key.span()), problem.message))?;
    }
    let keys: Vec<_> = rest.keys().map(|key| key.span()).collect();
    let raw = RawConfig::deserialize(ValueDeserializer::from(Spanned::new(
        span,
        DeValue::Table(rest),
    )))
    .map_err(|error| {
        let span = error.span().unwrap_or(0..0);
        let message = error.message().trim();
        // `[answerer]` where `[[answerer]]` was meant: say so.
        let single = text
            .parse::<toml::Table>()
            .is_ok_and(|table| table.get("answerer").is_some_and(toml::Value::is_table));
        if single {
            let list = "answerers are a list: write [[answerer]] (two brackets) above each one";
            return (span, list.to_owned());
        }
        // A key it does not take: the front ends' tables are taken too.
        match keys.contains(&span) {
            true => (
                span,
                format!(
                    "{message}; and the front ends' tables: {}",
                    tables.names().join(", ")
                ),
            ),
            false => (span, message.to_owned()),
        }
    })?;
    Ok((raw, settings))
}

/// The `[[answerer]]` entries, read again with every value's place in the
/// file, so that a problem with a kind's own key names that key's line.
fn answerers(
    text: &str,
    base: &Path,
    kinds: &Kinds,
) -> Result<Vec<AnswererEntry>, (Range<usize>, String)> {
    let root =
        DeTable::parse(text).map_err(|e| (e.span().unwrap_or(0..0), e.message().to_owned()))?;
    let Some(entries) = root.get_ref().get("answerer") else {
        return Ok(Vec::new());
    };
    let DeValue::Array(entries) = entries.get_ref() else {
        return Err((
            entries.span(),
            "`answerer` is a list of tables: [[answerer]]".into(),
        ));
    };
    entries
        .iter()
        .map(|entry| {
            let span = entry.span();
            answerer(entry.clone(), base, kinds)
                .map_err(|problem| (problem.span.unwrap_or(span), problem.message))
        })
        .collect()
}

/// One `[[answerer]]`: the keys every kind takes, then the kind's own.
fn answerer(
    entry: Spanned<DeValue<'_>>,
    base: &Path,
    kinds: &Kinds,
) -> Result<AnswererEntry, ConfigProblem> {
    let span = entry.span();
    let DeValue::Table(mut table) = entry.into_inner() else {
        return Err("an answerer is a table: [[answerer]]".into());
    };
    let mut take_string = |key: &str| match table.remove(key) {
        None => Ok(None),
        Some(value) => match value.get_ref() {
            DeValue::String(text) => Ok(Some(text.to_string())),
            other => Err(ConfigProblem {
                message: format!("`{key}` is a string, not {}", other.type_str()),
                span: Some(value.span()),
            }),
        },
    };
    let Some(name) = take_string("kind")? else {
        return Err(format!(
            "an answerer needs a `kind`: one of {}",
            kinds.names().join(", ")
        )
        .into());
    };
    let scope = take_string("scope")?;
    let timeout = take_string("timeout")?
        .as_deref()
        .map(duration)
        .transpose()?;
    let Some(kind) = kinds.get(&name) else {
        return Err(format!(
            "unknown answerer kind {name:?}; use {}",
            kinds.names().join(", ")
        )
        .into());
    };
    let keys: Vec<_> = table.keys().map(|key| key.span()).collect();
    let own = KindTable::new(span, table);
    let setup = kind.configure(own, base).map_err(|mut problem| {
        // A key the kind does not take: the kind lists its own keys, and
        // these are every answerer's.
        if problem.span.as_ref().is_some_and(|at| keys.contains(at)) {
            problem
                .message
                .push_str("; and every answerer takes `kind`, `scope` and `timeout`");
        }
        problem
    })?;
    Ok(AnswererEntry {
        setup,
        kind: name,
        placement: Placement {
            scope,
            timeout,
            prepend: false,
        },
    })
}

/// The largest config file read, in bytes.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

pub use crate::seam::config::{MAX_DURATION, duration};

/// The line (from 1) of byte `offset` in `text`; an offset past the end, or
/// inside a character, counts the lines before it.
fn line_of(text: &str, offset: usize) -> usize {
    let before = &text.as_bytes()[..offset.min(text.len())];
    before.iter().filter(|&&b| b == b'\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("/etc/ask-user"), &Registries::builtin()).map_err(|(_, e)| e)
    }

    fn problem(text: &str) -> String {
        parse(text).expect_err("the config should be refused")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Any edit of the shipped example ends in a config or an error
        /// that names a line of the text, never a panic.
        #[test]
        fn every_edit_of_the_example_is_read_or_refused_naming_a_line(
            edits in proptest::collection::vec(
                (proptest::num::usize::ANY, 0..3u8, "[\\[\\]{}=\",.#\n a-z0-9_é\u{0}-\u{1f}]"),
                1..6,
            )
        ) {
            let mut text: Vec<char> = EXAMPLE.chars().collect();
            for (at, how, insert) in edits {
                let at = at % (text.len() + 1);
                match how {
                    0 if at < text.len() => { text.remove(at); }
                    1 if at < text.len() => text[at] = insert.chars().next().unwrap(),
                    _ => text.splice(at..at, insert.chars()).for_each(drop),
                }
            }
            let text: String = text.into_iter().collect();
            if let Err((span, message)) =
                Config::parse(&text, Path::new("/nonexistent"), &Registries::builtin())
            {
                proptest::prop_assert!(!message.is_empty());
                proptest::prop_assert!(line_of(&text, span.start) <= text.lines().count() + 1);
            }
        }
    }

    const EXAMPLE: &str = include_str!("../../examples/config.toml");

    /// The config files of the README and of every page of the book are
    /// read as written.
    #[test]
    fn every_config_file_in_the_book_is_read() {
        let pages = ask_user_test_support::book_pages();
        let blocks: Vec<(&std::path::Path, &str)> = pages
            .iter()
            .flat_map(|(path, text)| {
                text.split("```toml\n")
                    .skip(1)
                    .filter_map(|rest| rest.split("```").next())
                    .map(move |block| (path.as_path(), block))
            })
            .collect();
        assert!(blocks.len() >= 7, "{} blocks", blocks.len());
        // The files they name, beside them.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("answers.json"), r#"{"answers":[]}"#).unwrap();
        for (page, block) in blocks {
            if let Err((_, problem)) = Config::parse(block, dir.path(), &Registries::builtin()) {
                panic!("{}: {problem}:\n{block}", page.display());
            }
        }
    }

    #[test]
    fn an_unknown_key_names_the_kinds_keys_and_everyones() {
        let said = problem("[[answerer]]\nkind = \"terminal\"\ndevic = \"/dev/tty\"\n");
        assert!(
            said.contains("expected `device`") && said.contains("`scope` and `timeout`"),
            "{said}"
        );
    }

    #[test]
    fn a_single_bracketed_answerer_says_to_use_two() {
        let said = problem("[answerer]\nkind = \"terminal\"\n");
        assert!(said.contains("write [[answerer]] (two brackets)"), "{said}");
    }

    #[test]
    fn the_mcp_table_places_the_form_and_names_a_wrong_value() {
        use crate::front_end::mcp::Mcp;
        use crate::mcp::Forms;
        let forms = |text: &str| parse(text).unwrap().front_ends.of::<Mcp>().forms;
        assert_eq!(forms(""), Forms::First);
        assert_eq!(forms("[mcp]\nforms = \"never\""), Forms::Never);
        assert_eq!(
            forms("timeout = \"1m\"\n[mcp]\nforms = \"last\""),
            Forms::Last
        );
        let text = "timeout = \"1m\"\n\n[mcp]\nforms = \"sometimes\"";
        let (at, wrong) = Config::parse(text, Path::new("."), &Registries::builtin()).unwrap_err();
        assert!(
            wrong.starts_with("[mcp]") && wrong.contains("first") && wrong.contains("never"),
            "{wrong}"
        );
        assert_eq!(line_of(text, at.start), 4, "the line of the wrong value");
        assert!(problem("[mcp]\nform = \"last\"").contains("forms"));
        // A top-level key nobody takes lists the front ends' tables too.
        let unknown = problem("[mpc]\nforms = \"last\"");
        assert!(
            unknown.contains("unknown field `mpc`")
                && unknown.contains("front ends' tables: [mcp]"),
            "{unknown}"
        );
    }

    #[test]
    fn the_inbox_table_is_read_and_its_mistakes_named() {
        let config = parse(
            "[inbox]\nretention = \"2h\"\nport = 8766\n[inbox.notify]\ndesktop = true\n\
             webhook = \"http://127.0.0.1:9/hook\"",
        )
        .unwrap();
        assert_eq!(config.inbox.retention, Some(Duration::from_secs(7200)));
        assert_eq!(config.inbox.port, Some(8766));
        assert_eq!(config.inbox.notify.names(), ["desktop", "webhook"]);
        assert!(problem("[inbox]\nretention = \"soon\"").contains("not a duration"));
        let discord = problem("[inbox.notify]\ndiscord = \"x\"");
        assert!(discord.contains("no channel `discord`"), "{discord}");
    }

    #[test]
    fn a_line_is_counted_in_bytes_whatever_the_characters() {
        assert_eq!(line_of("a\nbé\nc", 0), 1);
        assert_eq!(line_of("a\nbé\nc", 4), 2, "inside é");
        assert_eq!(line_of("a\nbé\nc", 99), 3);
    }

    #[test]
    fn durations_past_thirty_days_are_refused_not_overflowed() {
        assert!(problem("timeout = \"9999999999999y\"").contains("not a duration"));
        assert!(
            problem("timeout = \"31days\"")
                .contains("longer than the longest duration allowed, 30 days")
        );
        assert!(problem("[[answerer]]\nkind = \"web\"\ngrace = \"1000y\"").contains("longer than"));
        assert!(parse("timeout = \"30days\"").is_ok());
    }

    #[test]
    fn the_sandbox_table_sets_each_limit_and_keeps_the_rest() {
        let config = parse("[sandbox]\ncpu_deadline = \"250ms\"\nmax_asks_per_call = 3").unwrap();
        assert_eq!(config.sandbox.cpu_deadline, Duration::from_millis(250));
        assert_eq!(config.sandbox.max_asks_per_call, 3);
        let defaults = RuntimeConfig::default();
        assert_eq!(config.sandbox.memory_cap, defaults.memory_cap);
        assert_eq!(config.sandbox.max_request_bytes, defaults.max_request_bytes);
    }

    #[test]
    fn sandbox_limits_must_be_above_zero_and_known() {
        assert!(
            problem("[sandbox]\nmax_output_bytes = 0")
                .contains("`max_output_bytes` must be above zero")
        );
        assert!(
            problem("[sandbox]\ncpu_deadline = \"0s\"")
                .contains("`cpu_deadline` must be above zero")
        );
        assert!(problem("[sandbox]\nmemroy_cap = 1").contains("unknown field `memroy_cap`"));
        assert!(problem("[sandbox]\ncpu_deadline = \"soon\"").contains("not a duration"));
    }

    #[test]
    fn each_kind_reads_its_own_keys() {
        let config = parse(
            "[[answerer]]\nkind = \"web\"\nport = 8765\ngrace = \"forever\"\nscope = \"s\"\ntimeout = \"1m\"\n\
             [[answerer]]\nkind = \"bridge\"\nsocket = \"ask.sock\"",
        )
        .unwrap();
        let kinds: Vec<_> = config.answerers.iter().map(|a| a.kind.as_str()).collect();
        assert_eq!(kinds, ["web", "bridge"]);
        assert_eq!(config.answerers[0].placement.scope.as_deref(), Some("s"));
        assert_eq!(
            config.answerers[0].placement.timeout,
            Some(Duration::from_secs(60))
        );
        let web = format!("{:?}", config.answerers[0].setup);
        assert!(
            web.contains("port: 8765") && web.contains("grace: None"),
            "{web}"
        );
        let bridge = format!("{:?}", config.answerers[1].setup);
        assert!(
            bridge.contains("/etc/ask-user/ask.sock"),
            "relative to the file: {bridge}"
        );
    }

    #[test]
    fn a_key_of_another_kind_is_refused_with_the_keys_it_takes() {
        let said = problem("[[answerer]]\nkind = \"web\"\ncommand = [\"x\"]");
        assert!(
            said.contains("a web answerer") && said.contains("unknown field `command`"),
            "{said}"
        );
        assert!(said.contains("`bind`, `port`, `grace`"), "{said}");
        assert!(said.contains("every answerer takes `kind`"), "{said}");
        // A value of the wrong type is not a key it does not take.
        let said = problem("[[answerer]]\nkind = \"web\"\nport = \"x\"");
        assert!(!said.contains("every answerer takes"), "{said}");
    }

    #[test]
    fn kinds_are_named_and_checked() {
        assert!(
            problem("[[answerer]]\nport = 1")
                .contains("needs a `kind`: one of terminal, script, bridge, web")
        );
        assert!(
            problem("[[answerer]]\nkind = \"pager\"").contains("unknown answerer kind \"pager\"")
        );
        assert!(problem("[[answerer]]\nkind = 3").contains("`kind` is a string"));
        assert!(
            problem("[[answerer]]\nkind = \"bridge\"\ncommand = []").contains("names a program")
        );
        assert!(
            problem("[[answerer]]\nkind = \"bridge\"").contains("either a `command` or a `socket`")
        );
    }

    #[test]
    fn a_registered_kind_is_one_more_name() {
        struct Pager;
        impl crate::answerers::AnswererKind for Pager {
            fn name(&self) -> &'static str {
                "pager"
            }
            fn configure(
                &self,
                table: KindTable<'_>,
                _: &Path,
            ) -> Result<Box<dyn Setup>, ConfigProblem> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Table {
                    number: String,
                }
                let table: Table = table.read("pager")?;
                assert_eq!(table.number, "555");
                Ok(crate::answerers::ready(
                    crate::answerers::script::ScriptAnswerer::default(),
                ))
            }
        }
        let mut registries = Registries::builtin();
        registries.kinds.register(Pager);
        let config = Config::parse(
            "[[answerer]]\nkind = \"pager\"\nnumber = \"555\"",
            Path::new("."),
            &registries,
        )
        .unwrap();
        assert_eq!(config.answerers[0].kind, "pager");
        assert!(registries.kinds.names().ends_with(&["inbox", "pager"]));
    }

    #[test]
    fn the_policy_refuses_sub_agents_unless_it_says_relay() {
        assert_eq!(parse("").unwrap().delegated, Delegated::Refuse);
        assert_eq!(
            parse("[policy]\ndelegated = \"relay\"").unwrap().delegated,
            Delegated::Relay {
                max_asks: crate::agents::DEFAULT_MAX_DELEGATED_ASKS
            }
        );
        assert_eq!(
            parse("[policy]\ndelegated = \"relay\"\nmax_delegated_asks = 1")
                .unwrap()
                .delegated,
            Delegated::Relay { max_asks: 1 }
        );
        let said = problem("[policy]\ndelegated = \"allow\"");
        assert!(
            said.contains("`refuse`") && said.contains("`relay`"),
            "{said}"
        );
        let said = problem("[policy]\nmax_delegated_asks = 5");
        assert!(said.contains("delegated = \"relay\""), "{said}");
    }

    #[test]
    fn every_config_in_the_examples_folder_loads() {
        let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&examples).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
                loaded += 1;
            }
        }
        assert!(loaded >= 2, "{loaded} configs in {}", examples.display());
    }
}
