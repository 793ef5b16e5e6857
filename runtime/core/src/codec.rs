//! Reading and writing profile JSON: schema check, digest check, the typed model, then
//! semantic validation ([`crate::validate()`]), so no decoded profile holds nonsense.
//!
//! Compatibility: a profile of the same major schema and a newer minor version may carry
//! fields this build does not know. They are covered by the digest (checked on the parsed
//! value, before typing), ignored by the typed model, and kept byte-for-byte (but for a
//! leading UTF-8 byte order mark) by `import` and `export`, which copy the verified file
//! rather than re-serialising it. A newer major schema is refused.

use crate::error::ProfileError;
use crate::profile::{is_valid_uuid, Profile, SCHEMA, SCHEMA_FAMILY, SCHEMA_MAJOR};
use crate::validate::{self, json};
use crate::{digest, userio};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Parses and verifies a profile read from `path` (used in error messages only): a UTF-8
/// byte order mark is dropped; then JSON without duplicate keys, the schema, the digest, the
/// typed model (a typing error names the field's JSON path) and [`crate::validate()`].
pub fn from_slice(bytes: &[u8], path: &Path) -> Result<Profile, ProfileError> {
    let bytes = userio::strip_bom(bytes);
    let invalid = |detail: String| ProfileError::Invalid {
        path: path.to_path_buf(),
        detail,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ProfileError::Parse {
        path: path.to_path_buf(),
        detail: if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
            "the file starts with a UTF-16 byte order mark: save it as UTF-8".to_string()
        } else {
            e.to_string()
        },
    })?;
    if let Some(detail) = json::find_duplicate_key(bytes) {
        return Err(invalid(detail));
    }
    check_schema(&value, path)?;
    let stored = value
        .get("digest")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("no `digest` field".to_string()))?;
    let computed = digest::of_value(&value);
    if stored != computed {
        return Err(ProfileError::DigestMismatch {
            path: path.to_path_buf(),
            stored: stored.to_string(),
            computed,
        });
    }
    let profile: Profile = match Profile::deserialize(&value) {
        Ok(p) => p,
        Err(e) => {
            return Err(invalid(match json::locate_type_error(&value) {
                Some((field, why)) => format!("{field}: {why}"),
                None => e.to_string(),
            }))
        }
    };
    if !is_valid_uuid(&profile.device.uuid) {
        return Err(invalid(format!(
            "device.uuid: `{}` is not of the form GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
            profile.device.uuid
        )));
    }
    validate::validate(&profile).map_err(|source| ProfileError::Semantic {
        path: path.to_path_buf(),
        source,
    })?;
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
