//! Property tests of the parsers that read user files: whatever the bytes, the profile codec
//! and the trace readers return a value or an error, never panic; what they accept is
//! exactly what was written.

use memtune_core::codec;
use memtune_core::reuse::{Format, TraceReader};
use proptest::prelude::*;
use std::path::Path;

const FIXTURE: &[u8] = include_bytes!("../../../tests/fixtures/k80.json");

fn read_all(bytes: &[u8], format: Format) -> Result<Vec<u64>, String> {
    TraceReader::new(bytes, format)
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_codec_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = codec::from_slice(&bytes, Path::new("fuzz.json"));
    }

    #[test]
    fn a_mutated_profile_is_refused_or_still_valid(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
    ) {
        let mut bytes = FIXTURE.to_vec();
        for (at, value) in edits {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok(profile) = codec::from_slice(&bytes, Path::new("mutated.json")) {
            prop_assert!(profile.validate().is_ok());
        }
    }

    #[test]
    fn text_traces_read_back_what_was_written(
        addresses in proptest::collection::vec(any::<u64>(), 0..300),
        hex in proptest::collection::vec(any::<bool>(), 300)
    ) {
        let text: String = addresses
            .iter()
            .zip(&hex)
            .map(|(a, &h)| if h { format!("{a:#x}\n") } else { format!("{a}\n") })
            .collect();
        prop_assert_eq!(read_all(text.as_bytes(), Format::Text), Ok(addresses));
    }

    #[test]
    fn u64_traces_read_back_and_name_trailing_bytes(
        addresses in proptest::collection::vec(any::<u64>(), 0..300),
        extra in 0usize..8
    ) {
        let mut bytes: Vec<u8> = addresses.iter().flat_map(|a| a.to_le_bytes()).collect();
        bytes.extend(std::iter::repeat_n(0xab, extra));
        let got = read_all(&bytes, Format::U64);
        if extra == 0 {
            prop_assert_eq!(got, Ok(addresses));
        } else {
            let err = got.expect_err("trailing bytes are an error");
            prop_assert!(err.contains(&extra.to_string()), "{}", err);
        }
    }

    #[test]
    fn trace_readers_never_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        for format in [Format::Text, Format::U64, Format::Lackey { data_only: true }, Format::Lackey { data_only: false }] {
            let _ = read_all(&bytes, format);
        }
    }
}
