//! This user's files: where they live (the XDG folders) and how they are
//! kept to this user. Whatever another local user could write (a folder, a
//! socket, compiled code) is never trusted: a folder is used only when this
//! user owns it, nobody else may write it, and nobody else could move it
//! away (every folder above it is this user's or root's, and one that others
//! may write is sticky, as `/tmp` is), and no link on the way to it is
//! another user's. The folder is checked as resolved and used as resolved,
//! so no link swapped after the check leads elsewhere. The same check
//! serves the program that makes a folder and every program that reads it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Reads the text file at `path`, refusing one larger than `limit` bytes
/// (`/dev/zero` is not read for ever).
pub fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "it is larger than {limit} bytes"
        )));
    }
    Ok(text)
}

/// Removes the files in `dir` last changed more than `age` ago; what
/// cannot be read or removed stays (a sweep, best effort).
pub fn remove_older_than(dir: &Path, age: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|since| since > age);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// This user's `ask-user` directory of one XDG kind: `$<xdg_var>/ask-user`
/// when that variable is set and not empty, else `~/<home_default>/ask-user`;
/// `None` when neither is known.
pub fn user_dir(xdg_var: &str, home_default: &str) -> Option<PathBuf> {
    let base = std::env::var_os(xdg_var)
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(home_default)))?;
    Some(base.join("ask-user"))
}

/// Makes `dir` (mode 0700) when it is missing, then refuses it unless it is
/// [`trusted_dir`]; the folder as resolved, which is what to use from then
/// on. Every error names the folder.
pub fn private_dir(dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot make the folder {}: {e}", dir.display()),
            )
        })?;
    trusted_dir(dir)
}

/// `dir` resolved (every link followed), when it is a folder only this user
/// controls (module docs); the error says whose it is and what to do.
///
/// A link on the way that another user owns is refused, whatever it points
/// to now: they could point it elsewhere. The folder is checked as
/// resolved, and the resolved path is what the caller uses from then on:
/// every folder on it is this user's or root's and nobody else may change
/// it, so no link swapped after the check can lead anywhere else.
pub fn trusted_dir(dir: &Path) -> std::io::Result<PathBuf> {
    let refused = |why: String| {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a folder of this user's alone ({why}); nothing in it is used. Give \
                 a folder of your own (mode 0700)",
                dir.display()
            ),
        ))
    };
    let absolute = std::path::absolute(dir)?;
    let mut on_the_way = PathBuf::new();
    for part in absolute.components() {
        on_the_way.push(part);
        let Ok(metadata) = std::fs::symlink_metadata(&on_the_way) else {
            break;
        };
        if metadata.file_type().is_symlink() && metadata.uid() != me() && metadata.uid() != 0 {
            return refused(format!(
                "{} on the way is a link of user {}, who could point it elsewhere",
                on_the_way.display(),
                metadata.uid()
            ));
        }
    }
    let resolved = std::fs::canonicalize(&absolute).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot read {}: {e}", dir.display()))
    })?;
    let metadata = std::fs::metadata(&resolved).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot read {}: {e}", dir.display()))
    })?;
    if !metadata.is_dir() {
        return refused("it is not a folder".to_owned());
    }
    if metadata.uid() != me() {
        return refused(format!("it belongs to user {}", metadata.uid()));
    }
    if metadata.mode() & 0o022 != 0 {
        return refused(format!(
            "others may write it: mode {:o}",
            metadata.mode() & 0o777
        ));
    }
    for above in resolved.ancestors().skip(1) {
        let metadata = std::fs::metadata(above)?;
        let owner_ok = metadata.uid() == me() || metadata.uid() == 0;
        let sticky = metadata.mode() & 0o1000 != 0;
        if !owner_ok || (metadata.mode() & 0o022 != 0 && !sticky) {
            return refused(format!(
                "{} above it belongs to user {} with mode {:o}: others could move it away",
                above.display(),
                metadata.uid(),
                metadata.mode() & 0o7777
            ));
        }
    }
    Ok(resolved)
}

/// Owned by this user, and writable by nobody else.
pub fn private(metadata: &std::fs::Metadata) -> bool {
    metadata.uid() == me() && metadata.mode() & 0o022 == 0
}

/// This process's effective user.
pub fn me() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_folder_is_made_0700_and_a_shared_one_refused_by_name() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        private_dir(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        mode(&dir, 0o777);
        let error = trusted_dir(&dir).unwrap_err().to_string();
        assert!(error.contains(&dir.display().to_string()), "{error}");
        assert!(error.contains("others may write it: mode 777"), "{error}");
        // A folder others could rename away is no better.
        mode(&dir, 0o700);
        mode(&root.path().join("a"), 0o777);
        let error = trusted_dir(&dir).unwrap_err().to_string();
        assert!(error.contains("others could move it away"), "{error}");
        // Sticky, as /tmp is: they cannot.
        mode(&root.path().join("a"), 0o1777);
        trusted_dir(&dir).unwrap();
    }

    #[test]
    fn a_folder_is_used_as_resolved_and_never_through_another_users_link() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        private_dir(&real).unwrap();
        // A link of this user's: the folder it leads to, resolved, is used.
        let mine = root.path().join("mine");
        std::os::unix::fs::symlink(&real, &mine).unwrap();
        let resolved = trusted_dir(&mine.join(".")).unwrap();
        assert_eq!(resolved, std::fs::canonicalize(&real).unwrap());
        assert_eq!(private_dir(&mine).unwrap(), resolved);
        // Another user's link, though it leads to this user's own folder
        // now (a pre-made /tmp/ask-user-victim): refused by name. Only root
        // can give a link to another user, as CI runs.
        if me() != 0 {
            eprintln!("not root: another user's link is not made here");
            return;
        }
        let theirs = root.path().join("theirs");
        std::os::unix::fs::symlink(&real, &theirs).unwrap();
        std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
        for path in [theirs.clone(), theirs.join("sub")] {
            let error = trusted_dir(&path).unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "{} on the way is a link of user 65534",
                    theirs.display()
                )),
                "{error}"
            );
        }
        assert!(private_dir(&theirs.join("made")).is_err());
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_named() {
        let error = private_dir(Path::new("/proc/ask-user-test"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("cannot make the folder /proc/ask-user-test"),
            "{error}"
        );
    }
}
