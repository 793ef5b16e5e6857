//! Reading and writing profile JSON: schema check, digest check, then the typed model.
//!
//! Compatibility: a profile of the same major schema and a newer minor version may carry
//! fields this build does not know. They are covered by the digest (checked on the parsed
//! value, before typing), ignored by the typed model, and kept byte-for-byte by `import` and
//! `export`, which copy the verified file rather than re-serialising it. A newer major schema
//! is refused.

use crate::digest;
use crate::error::ProfileError;
use crate::profile::{is_valid_uuid, Profile, SCHEMA, SCHEMA_FAMILY, SCHEMA_MAJOR};
use serde_json::Value;
use std::path::Path;

/// Parses and verifies a profile read from `path` (used in error messages only).
pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Profile, ProfileError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ProfileError::Parse {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    check_schema(&value, path)?;
    let stored =
        value
            .get("digest")
            .and_then(Value::as_str)
            .ok_or_else(|| ProfileError::Invalid {
                path: path.to_path_buf(),
                detail: "no `digest` field".to_string(),
            })?;
    let computed = digest::of_value(&value);
    if stored != computed {
        return Err(ProfileError::DigestMismatch {
            path: path.to_path_buf(),
            stored: stored.to_string(),
            computed,
        });
    }
    let profile: Profile = serde_json::from_value(value).map_err(|e| ProfileError::Invalid {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    if !is_valid_uuid(&profile.device.uuid) {
        return Err(ProfileError::Invalid {
            path: path.to_path_buf(),
            detail: format!(
                "device uuid `{}` is not of the form GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
                profile.device.uuid
            ),
        });
    }
    Ok(profile)
}

fn check_schema(value: &Value, path: &Path) -> Result<(), ProfileError> {
    let found = value.get("schema").and_then(Value::as_str);
    let wrong = |found: String| ProfileError::WrongSchema {
        path: path.to_path_buf(),
        found,
        expected: SCHEMA,
    };
    let Some(found) = found else {
        return Err(wrong("missing".to_string()));
    };
    let major = found
        .strip_prefix(SCHEMA_FAMILY)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or_else(|| wrong(format!("\"{found}\"")))?;
    if major > SCHEMA_MAJOR {
        return Err(ProfileError::NewerMajor {
            path: path.to_path_buf(),
            found: format!("\"{found}\""),
            expected: SCHEMA,
        });
    }
    if major < SCHEMA_MAJOR {
        return Err(wrong(format!("\"{found}\"")));
    }
    Ok(())
}

/// Computes and stores the digest. Call after the last change to the profile.
pub fn seal(profile: &mut Profile) {
    let value = serde_json::to_value(&*profile)
        .expect("a Profile always serialises: every map key is a string");
    profile.digest = digest::of_value(&value);
}

/// Seals the profile and returns its pretty JSON with a trailing newline.
pub fn to_json(profile: &mut Profile) -> String {
    seal(profile);
    let mut text = serde_json::to_string_pretty(&*profile)
        .expect("a Profile always serialises: every map key is a string");
    text.push('\n');
    text
}
