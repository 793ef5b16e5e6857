//! The profile digest: sha2-256 over a canonical serialisation.
//!
//! The canonical form is the profile's JSON value without its `digest` key, written with
//! object keys sorted bytewise, no insignificant whitespace, and numbers and strings as
//! serde_json writes them. It is computed from the parsed value, not the file's bytes, so
//! re-indenting a profile keeps it valid while changing any value does not, and fields this
//! build does not know (from a newer minor version) are covered too.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The prefix of every stored digest, naming the algorithm.
pub const PREFIX: &str = "sha256:";

/// The digest of a profile's JSON value, ignoring any `digest` key it has.
pub fn of_value(value: &Value) -> String {
    let mut canonical = String::new();
    write_canonical(value, &mut canonical, Some("digest"));
    let hash = Sha256::digest(canonical.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{hex}")
}

/// Writes `value` canonically; `skip` leaves out that key of this object only.
fn write_canonical(value: &Value, out: &mut String, skip: Option<&str>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().filter(|k| Some(k.as_str()) != skip).collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out, None);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out, None);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_whitespace_do_not_matter() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2.5], "x": "s"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":{"x":"s","y":[1,2.5]},"b":1}"#).unwrap();
        assert_eq!(of_value(&a), of_value(&b));
    }

    #[test]
    fn digest_key_is_ignored_and_values_count() {
        let a = json!({"a": 1, "digest": "sha256:whatever"});
        let b = json!({"a": 1});
        let c = json!({"a": 2});
        assert_eq!(of_value(&a), of_value(&b));
        assert_ne!(of_value(&b), of_value(&c));
        assert!(of_value(&a).starts_with(PREFIX));
        assert_eq!(of_value(&a).len(), PREFIX.len() + 64);
    }

    #[test]
    fn nested_digest_keys_are_covered() {
        // Only the top-level digest is excluded; a nested one is content.
        let a = json!({"x": {"digest": 1}});
        let b = json!({"x": {"digest": 2}});
        assert_ne!(of_value(&a), of_value(&b));
    }
}
