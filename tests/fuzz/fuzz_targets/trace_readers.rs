//! Reuse-distance trace readers: text, u64 and lackey, plain or through the gzip and zstd
//! decoders `cargo tune reuse` uses, analyzed exactly, by merged chunk summaries and sampled.
//! The first byte picks the format and the wrapping; the rest is the trace. Errors, never
//! panics; at most `MAX_ADDRESSES` addresses are read, so a decompression bomb stays cheap.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memtune_core::reuse::{
    analyze_slice, merge, summarize, AddressSource, Format, Mode, Options, Sampling, TraceReader,
};
use std::io::{BufRead, BufReader, Cursor, Read};

const MAX_ADDRESSES: usize = 1 << 14;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, trace)) = data.split_first() else {
        return;
    };
    let format = match selector % 4 {
        0 => Format::Text,
        1 => Format::U64,
        2 => Format::Lackey { data_only: false },
        _ => Format::Lackey { data_only: true },
    };
    let raw: Box<dyn Read> = match (selector / 4) % 3 {
        0 => Box::new(Cursor::new(trace)),
        1 => Box::new(flate2::read::MultiGzDecoder::new(Cursor::new(trace))),
        _ => match ruzstd::decoding::StreamingDecoder::new(Cursor::new(trace)) {
            Ok(d) => Box::new(d),
            Err(_) => return,
        },
    };
    // Small buffers make lines and words straddle refills.
    let capacity = 1 + usize::from(selector / 12) % 64;
    let inner: Box<dyn BufRead> = Box::new(BufReader::with_capacity(capacity, raw));
    let mut reader = TraceReader::new(inner, format);
    let mut addresses = Vec::new();
    while addresses.len() < MAX_ADDRESSES {
        match reader.read_into(&mut addresses, 257) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let exact = analyze_slice(&addresses, Mode::ExactCpu, &Options::default())
        .expect("a trace that reads analyzes");
    assert_eq!(exact.references, addresses.len() as u64);
    // Chunk summaries merged in order must give the sequential histogram: the parallel
    // mode's merge, here without its threads (one thread per chunk made a run milliseconds).
    let chunk_len = 1 + usize::from(selector) % 97;
    let summaries: Vec<_> = addresses.chunks(chunk_len).map(summarize).collect();
    let merged = merge(&summaries).expect("summaries of a trace merge");
    assert_eq!(
        merged, exact,
        "merged chunk summaries equal the sequential analysis"
    );
    let _ = analyze_slice(
        &addresses,
        Mode::Sampled(Sampling::Budget(64)),
        &Options::default(),
    );
});
