//! Tasks kept on disk, so that a task is found again by its id after its
//! server restarts (killed, stopped, or upgraded): each task's call (its
//! arguments) as it starts, and its result as it ends, one file a task in
//! a folder of this user's alone, of one server key (the bearer token's).
//!
//! A task found here and not in the process is asked again from its
//! arguments under its id: a question waiting in the inbox is found again
//! (the call's id is keyed by the same token), and an answer given
//! meanwhile comes back. A task that had ended gives its kept result, and
//! is not asked again. Files older than twice the task's [`TTL`] go when
//! the server starts, and then at most once every [`SWEEP_EVERY`] as tasks
//! start.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};

use super::TTL;

/// The largest file taken as a kept task (the arguments' limit is far
/// below it).
const MAX_FILE: u64 = 4 << 20;

/// How often a server that keeps starting tasks sweeps the old ones.
const SWEEP_EVERY: Duration = Duration::from_secs(60 * 60);

/// A task as kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptTask {
    /// The call's arguments.
    pub arguments: JsonObject,
    /// When the task was made (ISO 8601).
    pub created_at: String,
    /// Its result, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CallToolResult>,
}

/// The folder of one server's tasks.
#[derive(Debug)]
pub struct Kept {
    dir: PathBuf,
    /// When the folder was last swept of old tasks.
    swept: Mutex<Instant>,
}

impl Kept {
    /// The folder `dir` (made 0700 when missing, refused when another
    /// user could change it), swept of tasks older than twice [`TTL`].
    pub fn in_dir(dir: &Path) -> std::io::Result<Kept> {
        let dir = ask_user_seam::files::private_dir(dir)?;
        ask_user_seam::files::remove_older_than(&dir, 2 * TTL);
        Ok(Kept {
            dir,
            swept: Mutex::new(Instant::now()),
        })
    }

    /// Keeps the new task `id` (its call), sweeping the folder of old
    /// tasks when it has not been for [`SWEEP_EVERY`].
    pub fn start(&self, id: &str, task: &KeptTask) {
        let mut swept = self.swept.lock().unwrap_or_else(|e| e.into_inner());
        if swept.elapsed() > SWEEP_EVERY {
            *swept = Instant::now();
            ask_user_seam::files::remove_older_than(&self.dir, 2 * TTL);
        }
        drop(swept);
        self.put(id, task);
    }

    /// The task `id`, when kept.
    pub fn get(&self, id: &str) -> Option<KeptTask> {
        let path = self.path(id)?;
        let text = ask_user_seam::files::read_bounded(&path, MAX_FILE).ok()?;
        serde_json::from_str(&text)
            .inspect_err(|error| tracing::warn!(%error, path = %path.display(), "a kept task"))
            .ok()
    }

    /// Keeps `task` as `id`, replacing what was kept; a failure is logged
    /// (the task goes on, and is lost only in a restart).
    pub fn put(&self, id: &str, task: &KeptTask) {
        let Some(path) = self.path(id) else {
            return;
        };
        if let Err(error) = write_atomically(&path, &serde_json::to_vec(task).unwrap_or_default()) {
            tracing::warn!(%error, path = %path.display(), "a task could not be kept");
        }
    }

    /// Forgets the task `id` (cancelled: there is nothing to find again).
    pub fn remove(&self, id: &str) {
        if let Some(path) = self.path(id) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The file of task `id`: ids are this server's (UUIDs), anything else
    /// has none (no name a client sends reaches beyond the folder).
    fn path(&self, id: &str) -> Option<PathBuf> {
        let uuid = id.len() == 36
            && id
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-');
        uuid.then(|| self.dir.join(format!("{id}.json")))
    }
}

/// Writes `bytes` to `path` (0600) through a file beside it, so a reader
/// never sees half a task.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let part = path.with_extension("part");
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&part)?
        .write_all(bytes)?;
    std::fs::rename(&part, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn a_task_is_kept_by_its_id_alone_and_only_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Kept::in_dir(&dir.path().join("tasks")).unwrap();
        let id = "5f0e0a8e-2b1c-4c53-9d8e-0f6c1a2b3c4d";
        let mut task = KeptTask {
            arguments: serde_json::from_str(r#"{"questions": []}"#).unwrap(),
            created_at: "2026-12-07T10:00:00Z".into(),
            result: None,
        };
        kept.put(id, &task);
        assert!(kept.get(id).unwrap().result.is_none());
        task.result = Some(CallToolResult::success(vec![ContentBlock::text("yes")]));
        kept.put(id, &task);
        let again = Kept::in_dir(&dir.path().join("tasks")).unwrap();
        assert!(again.get(id).unwrap().result.is_some());
        let climbing = "../aaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaa";
        assert_eq!(climbing.len(), 36);
        for outside in [
            climbing,
            "5F0E0A8E-2B1C-4C53-9D8E-0F6C1A2B3C4D",
            "",
            "a.json",
        ] {
            assert!(again.get(outside).is_none(), "{outside}");
        }
    }
}
