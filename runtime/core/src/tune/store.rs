//! Where decisions live: the user cache (`<profile cache>/decisions/`, written), the
//! project's `.memtune/decisions/` (committed, shipped) and decisions embedded in the binary.
//! Lookup order: local > project > embedded (a local measurement supersedes a shipped one).
//! One file per key; written through a temporary file and a hard link, so two processes
//! tuning one key store one whole decision (the first writer's) and nobody sees half a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::decision::{Decision, DecisionError};
use super::key::TuneKey;
use crate::lookup::{default_cache_dir, PROJECT_DIR};
use crate::userio::{self, InputKind, UserIoError};

/// `off` (the model's plan, nothing timed or read), `cached` (stored decisions only, never
/// time), `always` (time again and replace); unset or `auto`: stored, else tune and store.
pub const ENV_AUTOTUNE: &str = "MEMTUNE_AUTOTUNE";
/// The folder of decisions inside a profile store or `.memtune/`.
pub const DECISIONS_DIR: &str = "decisions";

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreSource {
    /// Tuned on this machine (user cache).
    Local,
    /// The project's `.memtune/decisions/`.
    Project,
    /// Embedded in the binary.
    Embedded,
}

impl StoreSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StoreSource::Local => "local",
            StoreSource::Project => "project",
            StoreSource::Embedded => "embedded",
        }
    }
}

/// A stored decision and where it was found.
#[derive(Debug, Clone)]
pub struct Found {
    pub decision: Decision,
    pub source: StoreSource,
    /// The file, or the embedded name.
    pub path: PathBuf,
}

#[derive(Debug, Clone, Default)]
pub struct DecisionStore {
    local: Option<PathBuf>,
    project: Option<PathBuf>,
    embedded: Vec<(String, String)>,
}

impl DecisionStore {
    /// `local`: the folder decisions are written to; `project`: a read-only folder searched
    /// after it.
    pub fn new(local: Option<PathBuf>, project: Option<PathBuf>) -> DecisionStore {
        DecisionStore {
            local,
            project,
            embedded: Vec::new(),
        }
    }

    /// The user cache's `decisions/` beside the profiles (`MEMTUNE_CACHE_DIR` honoured) and
    /// `<project_root>/.memtune/decisions/`.
    pub fn from_env(project_root: Option<&Path>) -> DecisionStore {
        DecisionStore::new(
            default_cache_dir().map(|d| d.join(DECISIONS_DIR)),
            project_root.map(|r| r.join(PROJECT_DIR).join(DECISIONS_DIR)),
        )
    }

    /// Adds decisions embedded in the binary: `(name, json)` pairs, searched last.
    pub fn with_embedded<'a>(
        mut self,
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        self.embedded.extend(
            files
                .into_iter()
                .map(|(n, j)| (n.to_string(), j.to_string())),
        );
        self
    }

    pub fn local_dir(&self) -> Option<&Path> {
        self.local.as_deref()
    }

    pub fn project_dir(&self) -> Option<&Path> {
        self.project.as_deref()
    }

    /// The decision stored for `key`, and a warning for each unusable file met on the way.
    pub fn find(&self, key: &TuneKey) -> (Option<Found>, Vec<String>) {
        let name = key.file_name();
        let mut warnings = Vec::new();
        let dirs = [
            (self.local.as_ref(), StoreSource::Local),
            (self.project.as_ref(), StoreSource::Project),
        ];
        for (dir, source) in dirs {
            let Some(dir) = dir else { continue };
            let path = dir.join(&name);
            match read_decision(&path) {
                Ok(Some(d)) if d.key == *key => {
                    return (Some(found(d, source, path)), warnings);
                }
                Ok(Some(_)) => warnings.push(format!(
                    "{}: holds a decision for another key; ignored",
                    path.display()
                )),
                Ok(None) => {}
                Err(e) => warnings.push(e.to_string()),
            }
        }
        for (embedded_name, json) in &self.embedded {
            let path = PathBuf::from(format!("<embedded>/{embedded_name}"));
            match Decision::from_slice(json.as_bytes(), &path) {
                Ok(d) if d.key == *key => {
                    return (Some(found(d, StoreSource::Embedded, path)), warnings)
                }
                Ok(_) => {}
                Err(e) => warnings.push(e.to_string()),
            }
        }
        (None, warnings)
    }

    /// Stores `decision` in the local folder. `replace`: a stored one is replaced (atomic
    /// rename); otherwise the first writer wins and this returns the stored file's path.
    pub fn save(&self, decision: &Decision, replace: bool) -> Result<PathBuf, DecisionError> {
        let dir = self.local.as_ref().ok_or_else(|| DecisionError::Io {
            path: PathBuf::from("<no cache directory>"),
            what: "finding the user cache",
            source: std::io::Error::other("set MEMTUNE_CACHE_DIR"),
        })?;
        save_in(dir, decision, replace)
    }

    /// Every decision file of the local and project folders, each with its decision or
    /// why it is not valid.
    pub fn list(&self) -> Vec<(PathBuf, StoreSource, Result<Decision, DecisionError>)> {
        let mut out = Vec::new();
        let dirs = [
            (self.local.as_ref(), StoreSource::Local),
            (self.project.as_ref(), StoreSource::Project),
        ];
        for (dir, source) in dirs {
            let Some(dir) = dir else { continue };
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            paths.sort();
            for path in paths {
                let d = read_decision(&path).and_then(|d| {
                    d.ok_or_else(|| DecisionError::Invalid {
                        path: path.clone(),
                        why: "vanished while listing".into(),
                    })
                });
                out.push((path, source, d));
            }
        }
        out
    }
}

fn found(decision: Decision, source: StoreSource, path: PathBuf) -> Found {
    Found {
        decision,
        source,
        path,
    }
}

/// Reads a decision file: `Ok(None)` when there is none. Only regular files are read, at
/// most [`MAX_DECISION_BYTES`](super::MAX_DECISION_BYTES), through
/// [`crate::userio::read_input`].
pub fn read_decision(path: &Path) -> Result<Option<Decision>, DecisionError> {
    match userio::read_input(path, InputKind::Decision) {
        Ok(bytes) => Decision::from_slice(&bytes, path).map(Some),
        Err(UserIoError::NotFound { .. }) => Ok(None),
        Err(UserIoError::Io { source, .. }) => Err(DecisionError::Io {
            path: path.to_path_buf(),
            what: "reading",
            source,
        }),
        Err(other) => Err(DecisionError::Invalid {
            path: path.to_path_buf(),
            why: other.to_string(),
        }),
    }
}

/// Writes `decision` into `dir` as its key's file; see [`DecisionStore::save`].
pub fn save_in(dir: &Path, decision: &Decision, replace: bool) -> Result<PathBuf, DecisionError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let io = |path: &Path, what, source| DecisionError::Io {
        path: path.to_path_buf(),
        what,
        source,
    };
    let path = dir.join(decision.key.file_name());
    decision.validate().map_err(|why| DecisionError::Invalid {
        path: path.clone(),
        why,
    })?;
    fs::create_dir_all(dir).map_err(|e| io(dir, "creating the decisions folder", e))?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        decision.key.file_name(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let bytes = serde_json::to_vec_pretty(decision).unwrap_or_default();
    let written = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(&bytes)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        if replace {
            fs::rename(&tmp, &path)
        } else {
            match fs::hard_link(&tmp, &path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                other => other,
            }
        }
    })();
    let _ = fs::remove_file(&tmp);
    written.map_err(|e| io(&path, "writing the decision", e))?;
    Ok(path)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
