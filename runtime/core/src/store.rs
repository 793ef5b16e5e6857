//! A directory of profiles named `<uuid>.json`: the user cache and the project's `.memtune/`.
//!
//! Writes are atomic: the bytes go to a temporary file in the same directory, are synced,
//! and are renamed over the target. A reader sees the old file or the new one, never a torn
//! one, and of two concurrent writers one complete profile remains. Only a profile that
//! verifies and passes [`crate::validate()`] is written; files are read through
//! [`crate::userio`] (regular files only, size-capped).

use crate::error::ProfileError;
use crate::profile::{is_valid_uuid, Profile};
use crate::userio::{self, InputKind, UserIoError, WriteOptions};
use crate::{codec, validate};
use std::fs;
use std::path::{Path, PathBuf};

/// A profile directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// A file found in a store and what it held.
#[derive(Debug)]
pub struct Entry {
    pub path: PathBuf,
    pub profile: Result<Profile, ProfileError>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the profile of `uuid` lives in this store.
    pub fn path_for(&self, uuid: &str) -> PathBuf {
        self.dir.join(format!("{uuid}.json"))
    }

    /// The stored profile of `uuid`, `None` when there is none, an error when the file is
    /// there but invalid.
    pub fn load(&self, uuid: &str) -> Result<Option<Profile>, ProfileError> {
        let path = self.path_for(uuid);
        match userio::read_input(&path, InputKind::Profile) {
            Ok(bytes) => verify_stored(&bytes, &path).map(Some),
            Err(UserIoError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every `*.json` file of the store, sorted by path, each with its profile or the reason
    /// it is not valid. A store directory that does not exist yet is empty.
    pub fn list(&self) -> Result<Vec<Entry>, ProfileError> {
        let read_dir = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(ProfileError::io(
                    &self.dir,
                    "listing the profile directory",
                    "make it a readable directory, or point MEMTUNE_CACHE_DIR elsewhere",
                    e,
                ))
            }
        };
        let mut paths = Vec::new();
        for item in read_dir {
            let item = item.map_err(|e| {
                ProfileError::io(
                    &self.dir,
                    "listing the profile directory",
                    "check its permissions",
                    e,
                )
            })?;
            let path = item.path();
            if path.extension().is_some_and(|x| x == "json") {
                paths.push(path);
            }
        }
        paths.sort();
        Ok(paths
            .into_iter()
            .map(|path| {
                let profile = read_file(&path).and_then(|b| verify_stored(&b, &path));
                Entry { path, profile }
            })
            .collect())
    }

    /// Seals `profile` and writes it atomically as `<uuid>.json`. Simulated profiles are
    /// refused: they never stand for a real device; so is one that fails validation.
    pub fn save(&self, profile: &mut Profile) -> Result<PathBuf, ProfileError> {
        let path = self.path_for(&profile.device.uuid);
        refuse_simulated(profile, &path)?;
        validate::validate(profile).map_err(|source| ProfileError::Semantic {
            path: path.clone(),
            source,
        })?;
        let text = codec::to_json(profile);
        self.write(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Verifies `bytes` (read from `origin`) as a profile, validation included, and stores
    /// them unchanged but for a byte order mark, so fields from a newer minor version
    /// survive. Nothing is written unless they verify.
    pub fn import(&self, bytes: &[u8], origin: &Path) -> Result<(PathBuf, Profile), ProfileError> {
        let profile = codec::from_slice(bytes, origin)?;
        check_file_name(origin, &profile)?;
        let path = self.path_for(&profile.device.uuid);
        refuse_simulated(&profile, origin)?;
        self.write(&path, userio::strip_bom(bytes))?;
        Ok((path, profile))
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
        if self.dir.as_os_str().is_empty() {
            return Err(ProfileError::EmptyVariable {
                name: crate::lookup::ENV_CACHE_DIR,
            });
        }
        fs::create_dir_all(&self.dir).map_err(|e| {
            ProfileError::io(
                &self.dir,
                "creating the profile directory",
                "make its parent writable, or point MEMTUNE_CACHE_DIR elsewhere",
                e,
            )
        })?;
        userio::replace_file(path, bytes, WriteOptions::default()).map_err(|e| match e {
            UserIoError::Io { source, .. } => ProfileError::io(
                path,
                "writing the profile",
                "make the directory writable, or point MEMTUNE_CACHE_DIR elsewhere",
                source,
            ),
            other => other.into(),
        })
    }
}

fn refuse_simulated(profile: &Profile, path: &Path) -> Result<(), ProfileError> {
    match &profile.provenance.simulator {
        Some(sim) => Err(ProfileError::Invalid {
            path: path.to_path_buf(),
            detail: format!(
                "this profile was simulated (`{sim}`) and cannot be stored as a real device; keep it as a file and pass it with --profile or MEMTUNE_PROFILE"
            ),
        }),
        None => Ok(()),
    }
}

/// Reads a user-named profile file (`-` for stdin) through [`userio::read_input`]: a
/// regular file, at most [`InputKind::Profile`]'s cap, BOM dropped; errors name it.
pub fn read_file(path: &Path) -> Result<Vec<u8>, ProfileError> {
    userio::read_input(path, InputKind::Profile).map_err(|e| match e {
        UserIoError::NotFound { .. } => ProfileError::NotFound {
            what: format!(
                "{}: no such file; check the path, or run `cargo tune` to make a profile",
                path.display()
            ),
        },
        UserIoError::Io { source, .. } => ProfileError::io(
            path,
            "reading the profile",
            "check the file's permissions",
            source,
        ),
        other => other.into(),
    })
}

/// Reads and verifies a profile file wherever it is.
pub fn load_path(path: &Path) -> Result<Profile, ProfileError> {
    codec::from_slice(&read_file(path)?, path)
}

/// Verifies a profile stored as `<uuid>.json`: valid, and for the UUID its name says.
fn verify_stored(bytes: &[u8], path: &Path) -> Result<Profile, ProfileError> {
    let profile = codec::from_slice(bytes, path)?;
    let stem = file_stem(path);
    if stem != profile.device.uuid {
        return Err(mismatch(path, stem, &profile));
    }
    Ok(profile)
}

/// Any profile file may have any name, but one named like a UUID must hold that UUID's
/// profile: a mismatch means a file was copied or renamed by mistake.
pub fn check_file_name(path: &Path, profile: &Profile) -> Result<(), ProfileError> {
    let stem = file_stem(path);
    if is_valid_uuid(&stem) && stem != profile.device.uuid {
        return Err(mismatch(path, stem, profile));
    }
    Ok(())
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn mismatch(path: &Path, file_uuid: String, profile: &Profile) -> ProfileError {
    ProfileError::UuidMismatch {
        path: path.to_path_buf(),
        file_uuid,
        profile_uuid: profile.device.uuid.clone(),
    }
}

/// Writes `bytes` to `path` through a uniquely named temporary file in the same directory
/// and a rename, so that the file is replaced whole or not at all. What is at `path` must be
/// a regular file or nothing: a device, FIFO, socket, directory or symbolic link there is
/// refused and left alone (see [`userio::replace_file`], which says why in its error).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    userio::replace_file(path, bytes, WriteOptions::default()).map_err(|e| match e {
        UserIoError::Io { source, .. } => source,
        other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
    })
}
