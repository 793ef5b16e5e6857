//! Checks on the raw JSON before it is typed: duplicate keys, and the JSON path of a typing
//! error (serde names the wrong value but not where it is, and the `status`-tagged sections
//! lose even the position).

use super::{at, idx};
use crate::profile::{
    Bandwidth, CacheCurve, CacheHierarchy, CacheLevel, CachePoint, ChaseCurve, ChasePoint,
    DeviceIdentity, MemoryKind, Provenance, RandomAccessCurve, RandomAccessPoint, Section,
    StagingEntry, StagingTable, TlbKind, TlbLevel,
};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::collections::HashSet;
use std::fmt;

/// The first object of `bytes` (valid JSON) that holds a key twice: its path and the key.
/// serde_json keeps the last of duplicate keys, so a file could say two things at once and
/// the digest (taken on the parsed value) would vouch for one of them.
pub(crate) fn find_duplicate_key(bytes: &[u8]) -> Option<String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match (Walk {
        path: String::new(),
    })
    .deserialize(&mut de)
    {
        Ok(()) => None,
        Err(e) => Some(strip_position(&e.to_string())),
    }
}

/// serde_json appends ` at line L column C`; the path says more.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Walks any JSON value, failing on the first repeated key of an object.
struct Walk {
    path: String,
}

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Walk {
                path: idx(&self.path, i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = at(&self.path, &key);
            if !seen.insert(key.clone()) {
                let place = if self.path.is_empty() {
                    "the top-level object".to_string()
                } else {
                    format!("`{}`", self.path)
                };
                return Err(de::Error::custom(format!(
                    "{path}: duplicate key `{key}` in {place}; a key may appear once"
                )));
            }
            map.next_value_seed(Walk { path })?;
        }
        Ok(())
    }
}

/// Where a value of a profile fails to type, and serde's message. `value` is the whole
/// profile; the parts are typed smallest first, so the innermost failing object is found,
/// then the field inside it that serde's message describes.
pub(crate) fn locate_type_error(value: &Value) -> Option<(String, String)> {
    let top = value.as_object()?;
    let get = |k: &str| top.get(k);
    typed::<String>(get("schema"), "schema")
        .and_then(|_| typed::<u32>(get("schema_minor"), "schema_minor"))
        .and_then(|_| typed::<DeviceIdentity>(get("device"), "device"))
        .and_then(|_| typed::<Provenance>(get("provenance"), "provenance"))
        .and_then(|_| per_kind(get("tlb"), "tlb", tlb))
        .and_then(|_| per_kind(get("random_access"), "random_access", random_access))
        .and_then(|_| section::<CacheHierarchy>(get("caches"), "caches", caches))
        .and_then(|_| {
            section::<StagingTable>(
                get("shared_memory_staging"),
                "shared_memory_staging",
                |v, p| items::<StagingEntry>(v.get("entries"), &at(p, "entries")),
            )
        })
        .and_then(|_| section::<Bandwidth>(get("bandwidth"), "bandwidth", |_, _| Ok(())))
        .err()
}

type Found = Result<(), (String, String)>;

fn per_kind(v: Option<&Value>, path: &str, each: fn(Option<&Value>, &str) -> Found) -> Found {
    let Some(obj) = v.and_then(Value::as_object) else {
        return typed::<serde_json::Map<String, Value>>(v, path);
    };
    for kind in MemoryKind::ALL {
        each(obj.get(kind.as_str()), &at(path, kind.as_str()))?;
    }
    Ok(())
}

fn tlb(v: Option<&Value>, path: &str) -> Found {
    section::<TlbKind>(v, path, |v, p| {
        items::<TlbLevel>(v.get("levels"), &at(p, "levels"))?;
        items::<TlbLevel>(v.get("unstable_levels"), &at(p, "unstable_levels"))?;
        nested::<ChaseCurve, ChasePoint>(v.get("curves"), &at(p, "curves"))
    })
}

fn random_access(v: Option<&Value>, path: &str) -> Found {
    section::<RandomAccessCurve>(v, path, |v, p| {
        items::<RandomAccessPoint>(v.get("points"), &at(p, "points"))?;
        items::<RandomAccessPoint>(v.get("atomic_points"), &at(p, "atomic_points"))
    })
}

fn caches(v: &Value, path: &str) -> Found {
    items::<CacheLevel>(v.get("levels"), &at(path, "levels"))?;
    nested::<CacheCurve, CachePoint>(v.get("curves"), &at(path, "curves"))
}

/// A `status`-tagged section: the tag, then (when measured) the parts, then the whole.
fn section<T: DeserializeOwned>(
    v: Option<&Value>,
    path: &str,
    parts: impl FnOnce(&Value, &str) -> Found,
) -> Found {
    if let Some(value @ Value::Object(obj)) = v {
        let status = obj.get("status");
        typed::<SectionStatus>(status, &at(path, "status"))?;
        if status.and_then(Value::as_str) == Some("measured") {
            parts(value, path)?;
        }
    }
    typed::<Section<T>>(v, path)
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum SectionStatus {
    Measured,
    NotMeasured,
    Failed,
}

/// Each item of an array of `T`, when `v` is an array.
fn items<T: DeserializeOwned>(v: Option<&Value>, path: &str) -> Found {
    for (i, item) in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        typed::<T>(Some(item), &idx(path, i))?;
    }
    Ok(())
}

/// An array of curves `C`, each with `points` of `P`.
fn nested<C: DeserializeOwned, P: DeserializeOwned>(v: Option<&Value>, path: &str) -> Found {
    for (i, curve) in v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let cp = idx(path, i);
        items::<P>(curve.get("points"), &at(&cp, "points"))?;
        typed::<C>(Some(curve), &cp)?;
    }
    Ok(())
}

/// Types `v` as `T`; on failure, the path of the field serde's message is about.
fn typed<T: DeserializeOwned>(v: Option<&Value>, path: &str) -> Found {
    let Some(v) = v else {
        return match serde_json::from_value::<T>(Value::Null) {
            Ok(_) => Ok(()),
            Err(_) => Err((path.to_string(), "missing field".to_string())),
        };
    };
    match T::deserialize(v) {
        Ok(_) => Ok(()),
        Err(e) => {
            let msg = e.to_string();
            let leaf = field_of(v, path, &msg).unwrap_or_else(|| path.to_string());
            Err((leaf, msg))
        }
    }
}

/// The field below `path` that a serde message is about: the missing field it names, or
/// the first value whose kind and text the message quotes.
fn field_of(v: &Value, path: &str, msg: &str) -> Option<String> {
    if let Some(name) = quoted_after(msg, "missing field `") {
        return Some(at(path, name));
    }
    if let Some(variant) = quoted_after(msg, "unknown variant `") {
        return find(v, path, &|x| x.as_str() == Some(variant));
    }
    if let Some(rest) = msg.strip_prefix("invalid length ") {
        let n: usize = rest.split(',').next()?.trim().parse().ok()?;
        return find(v, path, &|x| x.as_array().is_some_and(|a| a.len() == n));
    }
    if let Some(text) = quoted_after(msg, "floating point `") {
        let quoted: f64 = text.parse().ok()?;
        return find(v, path, &|x| x.is_f64() && x.as_f64() == Some(quoted));
    }
    if let Some(text) = quoted_after(msg, "integer `") {
        let quoted: i128 = text.parse().ok()?;
        let int = |x: &Value| x.as_i64().map(i128::from).or(x.as_u64().map(i128::from));
        return find(v, path, &|x| int(x) == Some(quoted));
    }
    find(v, path, &|x| {
        unexpected(x).is_some_and(|u| msg.contains(&u))
    })
}

/// The text between `prefix` and the next backtick.
fn quoted_after<'a>(msg: &'a str, prefix: &str) -> Option<&'a str> {
    let start = msg.find(prefix)? + prefix.len();
    let len = msg[start..].find('`')?;
    Some(&msg[start..start + len])
}

/// The first value below `v` (`v` itself excluded), depth first, that satisfies `hit`.
fn find(v: &Value, path: &str, hit: &dyn Fn(&Value) -> bool) -> Option<String> {
    let children: Vec<(String, &Value)> = match v {
        Value::Object(map) => map.iter().map(|(k, x)| (at(path, k), x)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| (idx(path, i), x))
            .collect(),
        _ => return None,
    };
    for (p, x) in children {
        if hit(x) {
            return Some(p);
        }
        if let Some(found) = find(x, &p, hit) {
            return Some(found);
        }
    }
    None
}

/// How serde's `Unexpected` describes a non-numeric JSON value in an "invalid type" message.
fn unexpected(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => "invalid type: null".to_string(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(_) => return None,
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "invalid type: sequence".to_string(),
        Value::Object(_) => "invalid type: map".to_string(),
    })
}
