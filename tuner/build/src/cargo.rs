//! What the build helper tells cargo: every environment variable it reads and every file
//! its output depends on (so that changing either reruns the build script), and warnings.
//! Collected first and printed at the end, so that tests can read them.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Clone)]
pub struct Instructions {
    env: BTreeSet<String>,
    files: BTreeSet<PathBuf>,
    warnings: Vec<String>,
}

impl Instructions {
    /// Reads `name`, remembering it for `rerun-if-env-changed`. Empty counts as unset.
    pub fn var(&mut self, name: &str) -> Option<OsString> {
        self.env.insert(name.to_string());
        std::env::var_os(name).filter(|v| !v.is_empty())
    }

    /// Remembers variables read by code that reads the environment itself.
    pub fn read_elsewhere(&mut self, names: &[&str]) {
        self.env.extend(names.iter().map(|n| n.to_string()));
    }

    /// Reruns the build script when `path` changes. Only existing paths: cargo reruns
    /// every build for a path that does not exist.
    pub fn file(&mut self, path: &Path) {
        if path.exists() {
            self.files.insert(path.to_path_buf());
        }
    }

    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    pub fn env_vars(&self) -> impl Iterator<Item = &str> {
        self.env.iter().map(String::as_str)
    }

    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(PathBuf::as_path)
    }

    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The `cargo:` lines, in a stable order.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .files
            .iter()
            .map(|f| format!("cargo:rerun-if-changed={}", f.display()))
            .collect();
        lines.extend(
            self.env
                .iter()
                .map(|v| format!("cargo:rerun-if-env-changed={v}")),
        );
        // A warning is one line to cargo: continuation lines would be dropped.
        lines.extend(
            self.warnings
                .iter()
                .map(|w| format!("cargo:warning={}", w.replace('\n', " "))),
        );
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_recorded_missing_files_are_not() {
        let mut i = Instructions::default();
        let _ = i.var("MEMTUNE_TEST_SURELY_UNSET_VAR");
        i.file(Path::new("/surely/not/here.cu"));
        i.file(Path::new(env!("CARGO_MANIFEST_DIR")));
        i.warn("two\nlines");
        let lines = i.lines();
        assert!(lines.contains(&"cargo:rerun-if-env-changed=MEMTUNE_TEST_SURELY_UNSET_VAR".into()));
        assert!(!lines.iter().any(|l| l.contains("/surely/not/here.cu")));
        assert!(lines.contains(&format!(
            "cargo:rerun-if-changed={}",
            env!("CARGO_MANIFEST_DIR")
        )));
        assert!(lines.contains(&"cargo:warning=two lines".into()));
    }
}
