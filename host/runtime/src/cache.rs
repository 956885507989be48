//! Compiled components kept on disk, so that a process that loads the same
//! component on the same engine skips compiling it (about 40 ms of
//! cranelift for the tool; loading the cached code takes under 1 ms).
//!
//! Compiled code is machine code run as is, so the cache trusts nothing it
//! did not check: it lives in a directory of the user's own that nobody
//! else may write (owned by this user, no group or other write bits; it is
//! created with mode 0700), each entry is named by a SHA-256 of the
//! component's bytes and the engine's compatibility hash (wasmtime's
//! version, settings and target), and carries a SHA-256 of its own content.
//! An entry that is missing, stale, corrupt, unreadable or not the user's
//! own is compiled again and rewritten (atomically: written aside, then
//! renamed), never loaded. A cache that cannot be used only costs the
//! compile; the reason is logged.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use crate::engine::Engine;

/// The largest entry read, in bytes: far above a compiled tool (about
/// 300 KB), so that a stray huge file is not read into memory.
const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// A directory of compiled components.
#[derive(Debug, Clone)]
pub struct CodeCache {
    dir: PathBuf,
}

impl CodeCache {
    /// The user's cache: `$XDG_CACHE_HOME/ask-user/compiled`, else
    /// `~/.cache/ask-user/compiled`; `None` when neither is known or the
    /// directory cannot be made safe (the reason is logged).
    pub fn user_default() -> Option<CodeCache> {
        let dir = ask_user_seam::files::user_dir("XDG_CACHE_HOME", ".cache")?.join("compiled");
        CodeCache::at(&dir)
            .inspect_err(|error| {
                tracing::warn!(
                    %error,
                    dir = %dir.display(),
                    "not caching compiled components; each start compiles the component"
                )
            })
            .ok()
    }

    /// A cache in `dir`, created (mode 0700) when missing. Refused when it
    /// is not a directory of this user's that only this user may write.
    pub fn at(dir: impl Into<PathBuf>) -> std::io::Result<CodeCache> {
        let dir = ask_user_seam::files::private_dir(&dir.into())?;
        Ok(CodeCache { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `component` compiled for `engine`: from the cache when a checked
    /// entry is there, else compiled and stored.
    pub(crate) fn load(&self, engine: &Engine, component: &[u8]) -> wasmtime::Result<Component> {
        let path = self
            .dir
            .join(format!("{}.cwasm", hex(&key(engine, component))));
        match self.read(&path) {
            Ok(code) => {
                // SAFETY: the entry is this user's own, in a directory only
                // this user may write, and its content is the one stored
                // (its checksum matches); wasmtime checks that it was made
                // for this engine and refuses it otherwise.
                match unsafe { Component::deserialize(engine.wasmtime(), &code) } {
                    Ok(loaded) => return Ok(loaded),
                    Err(error) => tracing::debug!(%error, "a cached component was refused"),
                }
            }
            Err(why) => tracing::debug!(path = %path.display(), why, "compiling"),
        }
        let compiled = Component::new(engine.wasmtime(), component)?;
        match compiled.serialize() {
            Ok(code) => {
                if let Err(error) = self.write(&path, &code) {
                    tracing::warn!(%error, path = %path.display(), "cannot cache the compiled component");
                }
            }
            Err(error) => tracing::warn!(%error, "cannot serialise the compiled component"),
        }
        Ok(compiled)
    }

    /// The checked code of the entry at `path`, or why there is none.
    fn read(&self, path: &Path) -> Result<Vec<u8>, &'static str> {
        let file = std::fs::File::open(path).map_err(|_| "no entry")?;
        let metadata = file.metadata().map_err(|_| "unreadable")?;
        if !metadata.is_file()
            || !ask_user_seam::files::private(&metadata)
            || metadata.len() > MAX_ENTRY_BYTES
        {
            return Err("an entry that is not this user's own file");
        }
        let mut bytes = Vec::with_capacity(metadata.len() as usize);
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_ENTRY_BYTES), &mut bytes)
            .map_err(|_| "unreadable")?;
        let Some((checksum, code)) = bytes.split_at_checked(32) else {
            return Err("a truncated entry");
        };
        if Sha256::digest(code).as_slice() != checksum {
            return Err("a corrupt entry");
        }
        // The code, without copying it: the checksum moves out of the way.
        bytes.drain(..32);
        Ok(bytes)
    }

    fn write(&self, path: &Path, code: &[u8]) -> std::io::Result<()> {
        let mut aside = tempfile::NamedTempFile::new_in(&self.dir)?;
        aside
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o600))?;
        aside.write_all(&Sha256::digest(code))?;
        aside.write_all(code)?;
        aside.as_file().sync_all()?;
        aside.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn key(engine: &Engine, component: &[u8]) -> [u8; 32] {
    struct Feed(Sha256);
    impl Hasher for Feed {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
    }
    let mut feed = Feed(Sha256::new());
    feed.write(b"ask-user compiled component v1\0");
    feed.write(&(component.len() as u64).to_le_bytes());
    feed.write(component);
    engine
        .wasmtime()
        .precompile_compatibility_hash()
        .hash(&mut feed);
    feed.0.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    fn entries(cache: &CodeCache) -> Vec<PathBuf> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        entries
    }

    #[test]
    fn a_compiled_component_is_stored_checked_and_loaded_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CodeCache::at(dir.path().join("compiled")).unwrap();
        let mode = std::fs::metadata(cache.dir()).unwrap().mode();
        assert_eq!(mode & 0o777, 0o700);
        let engine = Engine::shared().unwrap();
        cache.load(engine, crate::COMPONENT).unwrap();
        let [entry] = entries(&cache).try_into().unwrap();
        assert_eq!(std::fs::metadata(&entry).unwrap().mode() & 0o777, 0o600);
        let stored = std::fs::read(&entry).unwrap();
        assert!(cache.read(&entry).is_ok());

        // Corrupt, truncated, or well-formed but not code for this engine:
        // each is compiled again and rewritten, never loaded.
        let mut corrupt = stored.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        let mut foreign = Sha256::digest(b"not code").to_vec();
        foreign.extend_from_slice(b"not code");
        for (bad, read) in [
            (corrupt, Err("a corrupt entry")),
            (stored[..20].to_vec(), Err("a truncated entry")),
            (foreign, Ok(b"not code".to_vec())),
        ] {
            std::fs::write(&entry, &bad).unwrap();
            assert_eq!(cache.read(&entry), read);
            cache.load(engine, crate::COMPONENT).unwrap();
            assert_eq!(std::fs::read(&entry).unwrap(), stored, "rewritten");
        }
    }

    #[test]
    fn a_directory_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = CodeCache::at(&open).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(error.to_string().contains("others may write it"), "{error}");
    }

    #[test]
    fn an_entry_others_may_write_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CodeCache::at(dir.path()).unwrap();
        let engine = Engine::shared().unwrap();
        cache.load(engine, crate::COMPONENT).unwrap();
        let [entry] = entries(&cache).try_into().unwrap();
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(
            cache.read(&entry),
            Err("an entry that is not this user's own file")
        );
    }
}
