//! Profile JSON: decoding (schema, digest, typed model) and semantic validation must refuse
//! any input with an error, never panic. A profile that decodes is re-encoded, and the
//! encoding must decode to the same profile. A mutated input almost never keeps its digest
//! right, so each input is also decoded re-sealed (its `digest` recomputed), which lets the
//! typed model and the validation see the mutations.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memtune_core::{codec, digest, validate};
use serde_json::Value;
use std::path::Path;

fn decode(bytes: &[u8]) {
    let path = Path::new("fuzz.json");
    let Ok(mut profile) = codec::from_slice(bytes, path) else {
        return;
    };
    validate::validate(&profile).expect("a decoded profile is valid");
    let text = codec::to_json(&mut profile);
    let again = codec::from_slice(text.as_bytes(), path).expect("the encoding decodes");
    assert_eq!(again, profile, "the encoding round-trips");
}

fuzz_target!(|data: &[u8]| {
    decode(data);
    let Ok(mut value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let sealed = digest::of_value(&value);
    let Some(map) = value.as_object_mut() else {
        return;
    };
    map.insert("digest".to_string(), Value::String(sealed));
    if let Ok(bytes) = serde_json::to_vec(&value) {
        decode(&bytes);
    }
});
