//! Claude Code's settings file (`~/.claude/settings.json`): our hooks merged
//! with what is there, and taken out again, leaving everything else as it
//! was.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::input;

/// How long Claude Code gives a hook that asks: a person may take a day.
/// The terminal still asks the question tool's questions meanwhile (the
/// first answer wins); a form waits for the hook, and the terminal says
/// where it is asked ([`WAITING_STATUS`]).
pub const HOOK_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// How long a hook that asks nothing may take (the one that stops a
/// waiting hook, the one that notes a sub-agent's call).
pub const STOP_TIMEOUT_SECS: u64 = 10;

/// The hooks installed: (event, matcher). The first asks the question
/// tool's questions; the second stops it when they were answered at the
/// terminal first; the third asks every MCP server's forms; the fourth
/// notes which sub-agent calls our MCP tool ([`crate::hook::calls`]).
const HOOKS: &[(&str, &str)] = &[
    (input::PERMISSION_REQUEST, input::TOOL),
    (input::POST_TOOL_USE, input::TOOL),
    (input::ELICITATION, "*"),
    (input::PRE_TOOL_USE, input::OUR_MCP_TOOL),
];

/// What follows the program in the command of each hook.
const ARGUMENTS: &str = " hook claude-code";

/// The user's settings file: `$CLAUDE_CONFIG_DIR/settings.json`, else
/// `~/.claude/settings.json`.
pub fn default_path() -> Option<PathBuf> {
    let dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".claude")))?;
    Some(dir.join("settings.json"))
}

/// The command a hook runs: `program hook claude-code`, the program quoted
/// for the shell where it must be.
pub fn command(program: &Path) -> String {
    let program = program.display().to_string();
    let plain = program
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    match plain {
        true => format!("{program}{ARGUMENTS}"),
        false => format!("'{}'{ARGUMENTS}", program.replace('\'', r"'\''")),
    }
}

/// Whether `command` is one of ours: an `ask-user` program (wherever it
/// was when installed) with our arguments.
fn ours(command: &str) -> bool {
    let Some(program) = command.strip_suffix(ARGUMENTS) else {
        return false;
    };
    let program = program.trim_matches('\'');
    Path::new(program)
        .file_name()
        .is_some_and(|name| name == "ask-user")
}

/// What Claude Code shows, in place of "running … hook", while a hook of
/// ours waits for a person: where the question is, and how to stop.
pub const WAITING_STATUS: &str = "Asking you through ask-user: answer in its inbox (ask-user inbox page) or on your phone; Esc stops";

/// Our hook for `event`, running `command`: only the hooks that ask wait
/// for a person, and say so.
fn entry(event: &str, command: &str) -> Value {
    match event {
        input::POST_TOOL_USE | input::PRE_TOOL_USE => {
            json!({"type": "command", "command": command, "timeout": STOP_TIMEOUT_SECS})
        }
        _ => json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS,
            "statusMessage": WAITING_STATUS}),
    }
}

/// Adds the hooks running `command` to the settings at `path` (made when
/// missing), and brings those of an earlier install up to date (its
/// program, timeouts and words). Returns false when they were there as
/// they are now. With `state` (a folder of this user's), what the file was
/// before any hook of ours is kept there, so that [`uninstall`] can put it
/// back byte for byte. Everything is checked before anything is written: an
/// install that fails changes nothing.
pub fn install(path: &Path, command: &str, state: Option<&Path>) -> io::Result<bool> {
    // A file that cannot be read is refused by `read`, with why.
    let before = std::fs::read_to_string(path).ok();
    let (mut settings, newline) = read(path)?;
    let hooks = object(&mut settings, "hooks", path)?;
    let (mut changed, mut had_ours) = (false, false);
    for (event, matcher) in HOOKS {
        let wanted = entry(event, command);
        let groups = hooks
            .entry(*event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(groups) = groups.as_array_mut() else {
            return Err(not_shaped(path, &format!("hooks.{event}"), "a list"));
        };
        let installed = groups
            .iter_mut()
            .filter(|group| group["matcher"] == *matcher)
            .filter_map(|group| group.get_mut("hooks").and_then(Value::as_array_mut))
            .flatten()
            .find(|h| h["command"].as_str().is_some_and(ours));
        match installed {
            Some(hook) => {
                had_ours = true;
                if *hook != wanted {
                    *hook = wanted;
                    changed = true;
                }
            }
            None => {
                groups.push(json!({"matcher": matcher, "hooks": [wanted]}));
                changed = true;
            }
        }
    }
    if !changed {
        return Ok(false);
    }
    // Where the file's past is kept, checked (a state folder of this
    // user's alone) before the file is touched. What it was before any
    // hook of ours: the file as it is, or what an earlier install kept
    // when nobody changed the file since; else nothing, and uninstall
    // takes out our hooks alone.
    let kept_at = state.map(|state| Before::at(state, path)).transpose()?;
    let earliest = match &kept_at {
        Some(_) if !had_ours => Some(before.clone()),
        Some(at) => Before::read(at)
            .filter(|kept| {
                Some(&kept.installed) == before.as_deref().map(ask_user_inbox::digest).as_ref()
            })
            .map(|kept| kept.before),
        None => None,
    };
    let written = write(path, &settings, newline)?;
    if let Some(at) = kept_at {
        let Some(earliest) = earliest else {
            let _ = std::fs::remove_file(&at);
            return Ok(true);
        };
        let kept = Before {
            before: earliest,
            installed: ask_user_inbox::digest(&written),
        };
        if let Err(error) = kept.keep(&at) {
            // Put back what was there: a failed install changes nothing.
            let _ = match &before {
                Some(before) => replace(path, before),
                None => std::fs::remove_file(path),
            };
            return Err(error);
        }
    }
    Ok(true)
}

/// Takes our hooks out of the settings at `path`. When the file is still
/// what [`install`] wrote (its digest kept in `state`), it becomes exactly
/// what it was before, or is removed if install made it; else every hook
/// of ours is taken out, with the lists and table that only held them.
/// Returns false when there was none.
pub fn uninstall(path: &Path, state: Option<&Path>) -> io::Result<bool> {
    let kept = state.and_then(|state| Before::take(state, path));
    let now = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    if let Some(kept) = kept.filter(|kept| kept.installed == ask_user_inbox::digest(&now)) {
        match kept.before {
            Some(before) => replace(path, &before)?,
            None => std::fs::remove_file(path)?,
        }
        return Ok(true);
    }
    let (mut settings, newline) = read(path)?;
    let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok(false);
    };
    let mut changed = false;
    for (event, _) in HOOKS {
        let Some(groups) = hooks.get_mut(*event).and_then(Value::as_array_mut) else {
            continue;
        };
        for group in groups.iter_mut() {
            if let Some(entries) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                let before = entries.len();
                entries.retain(|h| !h["command"].as_str().is_some_and(ours));
                changed |= entries.len() != before;
            }
        }
        groups.retain(|group| group["hooks"].as_array().is_none_or(|h| !h.is_empty()));
        if groups.is_empty() {
            hooks.remove(*event);
        }
    }
    if hooks.is_empty() {
        settings.as_object_mut().map(|s| s.remove("hooks"));
    }
    if changed {
        write(path, &settings, newline)?;
    }
    Ok(changed)
}

/// The settings at `path` (an empty object when there is no file), and
/// whether the file ended with a newline.
fn read(path: &Path) -> io::Result<(Value, bool)> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((json!({}), true)),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot read {}: {e}", path.display()),
            ));
        }
    };
    let settings: Value = serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not JSON ({e}); fix it and run this again, nothing was changed",
                path.display()
            ),
        )
    })?;
    if !settings.is_object() {
        return Err(not_shaped(path, "the file", "a JSON object"));
    }
    Ok((settings, text.ends_with('\n')))
}

/// `settings[key]`, made an empty object when missing.
fn object<'a>(
    settings: &'a mut Value,
    key: &str,
    path: &Path,
) -> io::Result<&'a mut Map<String, Value>> {
    settings
        .as_object_mut()
        .expect("checked when read")
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_shaped(path, key, "an object"))
}

fn not_shaped(path: &Path, what: &str, wanted: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{what} in {} is not {wanted}; nothing was changed",
            path.display()
        ),
    )
}

/// Writes `settings` as Claude Code does (two-space indents); the text
/// written.
fn write(path: &Path, settings: &Value, newline: bool) -> io::Result<String> {
    let mut text = serde_json::to_string_pretty(settings).map_err(io::Error::other)?;
    if newline {
        text.push('\n');
    }
    replace(path, &text)?;
    Ok(text)
}

/// Makes `text` the file at `path`, whole or not at all (a file beside
/// it, renamed over it), left as it was found: a link stays the same link
/// (the file it leads to is replaced), and the file keeps its owner, group
/// and mode (root installing into a user's file leaves it theirs).
fn replace(path: &Path, text: &str) -> io::Result<()> {
    replace_whole(path, text)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))
}

fn replace_whole(path: &Path, text: &str) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    // Through every link to the file itself; a link to nothing yet is
    // made where it leads.
    let mut target = path.to_owned();
    for _ in 0..40 {
        match std::fs::read_link(&target) {
            Ok(to) => target = target.parent().unwrap_or(Path::new("")).join(to),
            Err(_) => break,
        }
    }
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    if let Ok(metadata) = std::fs::metadata(&target) {
        let made = file.as_file().metadata()?;
        if (made.uid(), made.gid()) != (metadata.uid(), metadata.gid()) {
            std::os::unix::fs::fchown(file.as_file(), Some(metadata.uid()), Some(metadata.gid()))
                .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot keep its owner ({}:{}): {e}; nothing was changed",
                        metadata.uid(),
                        metadata.gid()
                    ),
                )
            })?;
        }
        file.as_file().set_permissions(metadata.permissions())?;
    }
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    file.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// What a settings file was before [`install`], and a digest of what
/// install wrote, kept in this user's state folder under a digest of the
/// file's path.
#[derive(serde::Serialize, serde::Deserialize)]
struct Before {
    /// `None`: there was no file.
    before: Option<String>,
    installed: String,
}

impl Before {
    /// Where what is kept for `path` goes, in the state folder: made and
    /// checked to be this user's alone, resolved.
    fn at(state: &Path, path: &Path) -> io::Result<PathBuf> {
        let state = ask_user_seam::files::private_dir(state)?;
        let folder = ask_user_seam::files::private_dir(&state.join(KEPT_FOLDER))?;
        Ok(folder.join(Before::name(path)?))
    }

    /// Its file's name: a digest of `path`.
    fn name(path: &Path) -> io::Result<String> {
        let path = std::path::absolute(path)?;
        Ok(format!(
            "{}.json",
            ask_user_inbox::digest(&path.to_string_lossy())
        ))
    }

    fn keep(&self, at: &Path) -> io::Result<()> {
        replace(at, &serde_json::to_string(self).map_err(io::Error::other)?)
    }

    /// What is kept at `at` (a checked folder's file), left there.
    fn read(at: &Path) -> Option<Before> {
        serde_json::from_str(&std::fs::read_to_string(at).ok()?).ok()
    }

    /// What was kept for `path`, taken out of the state folder (when it is
    /// this user's alone); `None` when nothing was, or it cannot be read.
    fn take(state: &Path, path: &Path) -> Option<Before> {
        let folder = ask_user_seam::files::trusted_dir(&state.join(KEPT_FOLDER)).ok()?;
        let at = folder.join(Before::name(path).ok()?);
        let kept = Before::read(&at);
        let _ = std::fs::remove_file(&at);
        kept
    }
}

/// The folder of [`Before`] settings, in the state folder.
const KEPT_FOLDER: &str = "claude-code-settings";

#[cfg(test)]
mod tests {
    use super::*;

    const COMMAND: &str = "/usr/local/bin/ask-user hook claude-code";

    #[test]
    fn install_then_uninstall_leaves_the_file_exactly_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let before = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PermissionRequest\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"audit.sh\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
        std::fs::write(&path, before).unwrap();
        assert!(install(&path, COMMAND, None).unwrap());
        assert!(
            !install(&path, COMMAND, None).unwrap(),
            "installing twice adds nothing"
        );
        let installed: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let groups = installed["hooks"]["PermissionRequest"].as_array().unwrap();
        assert_eq!(groups.len(), 2, "{installed}");
        assert_eq!(groups[0]["matcher"], "Bash", "theirs kept first");
        assert_eq!(groups[1]["matcher"], "AskUserQuestion");
        assert_eq!(groups[1]["hooks"][0]["command"], COMMAND);
        assert_eq!(groups[1]["hooks"][0]["timeout"], HOOK_TIMEOUT_SECS);
        assert_eq!(installed["model"], "opus");
        assert!(uninstall(&path, None).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        assert!(!uninstall(&path, None).unwrap(), "nothing left to take out");
    }

    #[test]
    fn what_install_kept_is_put_back_byte_for_byte_unless_the_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        // Made by install, removed by uninstall.
        let path = dir.path().join("sub/settings.json");
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        assert!(uninstall(&path, Some(&state)).unwrap());
        assert!(!path.exists());
        // Formatted unlike Claude Code: the same bytes come back.
        let before = "{\"model\":    \"opus\"}";
        std::fs::write(&path, before).unwrap();
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        assert!(uninstall(&path, Some(&state)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        // Changed since install: only our hooks go, the change stays.
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        let mut changed: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        changed["theme"] = "dark".into();
        std::fs::write(&path, changed.to_string()).unwrap();
        assert!(uninstall(&path, Some(&state)).unwrap());
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(after, json!({"model": "opus", "theme": "dark"}));
        assert!(
            std::fs::read_dir(state.join(KEPT_FOLDER))
                .unwrap()
                .next()
                .is_none(),
            "nothing kept after"
        );
    }

    #[test]
    fn an_earlier_install_is_brought_up_to_date_and_the_first_file_comes_back() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let path = dir.path().join("settings.json");
        let before = "{\"model\":    \"opus\"}";
        std::fs::write(&path, before).unwrap();
        // An earlier install: another program's path, and a hook as an
        // earlier version wrote it (no words for the terminal).
        let old = "/opt/old/ask-user hook claude-code";
        assert!(install(&path, old, Some(&state)).unwrap());
        let mut earlier: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        earlier["hooks"]["Elicitation"][0]["hooks"][0]
            .as_object_mut()
            .unwrap()
            .remove("statusMessage");
        std::fs::write(&path, serde_json::to_string_pretty(&earlier).unwrap()).unwrap();

        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        let now: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (event, _) in HOOKS {
            let groups = now["hooks"][*event].as_array().unwrap();
            assert_eq!(groups.len(), 1, "{event}: one group, updated in place");
            assert_eq!(
                groups[0]["hooks"],
                json!([entry(event, COMMAND)]),
                "{event}"
            );
        }
        assert_eq!(
            now["hooks"]["Elicitation"][0]["hooks"][0]["statusMessage"],
            WAITING_STATUS
        );
        assert!(
            !install(&path, COMMAND, Some(&state)).unwrap(),
            "up to date: nothing to do"
        );
        // The file was changed by hand between the installs, so what the
        // first kept no longer holds: our hooks alone are taken out.
        assert!(uninstall(&path, Some(&state)).unwrap());
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(after, json!({"model": "opus"}));

        // Two installs with nothing changed between them: the first file
        // comes back byte for byte.
        std::fs::write(&path, before).unwrap();
        assert!(install(&path, old, Some(&state)).unwrap());
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        assert!(uninstall(&path, Some(&state)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn without_a_state_folder_a_made_file_is_emptied_and_a_broken_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/settings.json");
        assert!(install(&path, COMMAND, None).unwrap());
        assert!(uninstall(&path, None).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{ not json").unwrap();
        let error = install(&broken, COMMAND, None).unwrap_err();
        assert!(error.to_string().contains("is not JSON"), "{error}");
        assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{ not json");
        let list = dir.path().join("list.json");
        std::fs::write(&list, "{\"hooks\": []}").unwrap();
        let error = install(&list, COMMAND, None).unwrap_err();
        assert!(error.to_string().contains("hooks in"), "{error}");
    }

    #[test]
    fn a_linked_file_stays_the_same_link_and_keeps_its_owner_and_mode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        // Dotfiles: the settings a link to a file kept elsewhere.
        std::fs::create_dir_all(dir.path().join("dotfiles")).unwrap();
        std::fs::create_dir_all(dir.path().join("claude")).unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        let before = "{\"model\": \"opus\"}\n";
        std::fs::write(&real, before).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        // Another user's file, where this runs as root (as CI does).
        let owner = match ask_user_seam::files::me() {
            0 => {
                std::os::unix::fs::chown(&real, Some(65534), Some(65534)).unwrap();
                (65534, 65534)
            }
            _ => {
                let metadata = std::fs::metadata(&real).unwrap();
                (metadata.uid(), metadata.gid())
            }
        };
        let path = dir.path().join("claude/settings.json");
        std::os::unix::fs::symlink("../dotfiles/settings.json", &path).unwrap();
        let unchanged = |what: &str| {
            let link = std::fs::symlink_metadata(&path).unwrap();
            assert!(link.file_type().is_symlink(), "{what}: still a link");
            let file = std::fs::metadata(&real).unwrap();
            assert_eq!((file.uid(), file.gid()), owner, "{what}: its owner");
            assert_eq!(file.mode() & 0o7777, 0o600, "{what}: its mode");
        };
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        unchanged("installed");
        assert!(std::fs::read_to_string(&real).unwrap().contains(COMMAND));
        assert!(uninstall(&path, Some(&state)).unwrap());
        unchanged("uninstalled");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), before);
        // Without what was kept: our hooks taken out, written through too.
        assert!(install(&path, COMMAND, None).unwrap());
        assert!(uninstall(&path, None).unwrap());
        unchanged("uninstalled without a state folder");
    }

    #[test]
    fn an_install_that_fails_changes_nothing() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        let before = "{\"model\": \"opus\"}";
        std::fs::write(&path, before).unwrap();
        // A state folder in a folder others may write: not this user's alone.
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o775)).unwrap();
        let state = shared.join("ask-user");
        let error = install(&path, COMMAND, Some(&state)).unwrap_err();
        assert!(
            error.to_string().contains("others could move it away"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        // Mended, it installs (the hooks were not there) and comes undone.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(install(&path, COMMAND, Some(&state)).unwrap());
        assert!(uninstall(&path, Some(&state)).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn a_program_path_with_spaces_is_quoted_and_still_ours() {
        let command = command(Path::new("/opt/my tools/ask-user"));
        assert_eq!(command, "'/opt/my tools/ask-user' hook claude-code");
        assert!(ours(&command));
        assert!(ours(COMMAND));
        assert!(!ours("/bin/other hook claude-code"));
        assert!(!ours("ask-user mcp"));
    }
}
