//! Trace readers: text (hex, decimal, comments), raw u64 (incl. trailing bytes and reads
//! that split words), valgrind lackey (with and without instructions), malformed lines
//! with their line numbers, overlong lines, and the same histogram from every format.

use std::io::{BufRead, BufReader, Cursor, Read};

use memtune_core::reuse::{
    analyze, analyze_slice, trace, AddressSource, Format, Mode, Options, ReuseError, TraceReader,
};
use memtune_core::ErrorClass;

fn read_all(bytes: &[u8], format: Format) -> Result<Vec<u64>, ReuseError> {
    TraceReader::new(Cursor::new(bytes.to_vec()), format).collect()
}

/// A reader that hands out at most `step` bytes per read, to split words and lines.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fn trickle(data: &[u8], step: usize) -> impl BufRead + '_ {
    BufReader::with_capacity(step, Trickle { data, step })
}

#[test]
fn reuse_text_hex_decimal_comments() {
    let text = b"# a PARDA-style trace\n0x7fffc923c998\n\n140736567675288\r\n  0x10  \n# end\n42";
    assert_eq!(
        read_all(text, Format::Text).unwrap(),
        vec![0x7fff_c923_c998, 140_736_567_675_288, 0x10, 42]
    );
    assert_eq!(read_all(b"", Format::Text).unwrap(), Vec::<u64>::new());
    assert_eq!(
        read_all(b"\n\n# only comments\n", Format::Text).unwrap(),
        Vec::<u64>::new()
    );
}

#[test]
fn reuse_malformed_line_names_its_number_and_text() {
    let err = read_all(b"0x10\n# c\n\n12z4\n5\n", Format::Text).unwrap_err();
    match &err {
        ReuseError::Malformed { line, text, .. } => {
            assert_eq!(*line, 4);
            assert_eq!(text, "12z4");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().starts_with("line 4: "), "{err}");
    assert_eq!(err.class(), ErrorClass::Invalid);
    // The error repeats a long bad line only in part.
    let long = format!("1\n{}\n", "x".repeat(1_000));
    match read_all(long.as_bytes(), Format::Text).unwrap_err() {
        ReuseError::Malformed { line, text, .. } => {
            assert_eq!(line, 2);
            assert!(text.chars().count() <= 81, "{text}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn reuse_reader_stops_after_an_error() {
    let mut r = TraceReader::new(Cursor::new(b"1\nbad\n2\n".to_vec()), Format::Text);
    assert_eq!(r.next().unwrap().unwrap(), 1);
    assert!(r.next().unwrap().is_err());
    assert!(r.next().is_none());
}

#[test]
fn reuse_overlong_line_is_an_error_not_a_buffer() {
    let mut data = b"0x1\n".to_vec();
    data.extend(std::iter::repeat_n(b'1', trace::MAX_LINE + 1));
    data.extend(b"\n0x2\n");
    let err = read_all(&data, Format::Text).unwrap_err();
    assert!(
        matches!(err, ReuseError::LineTooLong { line: 2, max } if max == trace::MAX_LINE),
        "{err}"
    );
    // Exactly at the cap is fine (a long comment), even when the line arrives in pieces.
    let mut ok = vec![b'#'; trace::MAX_LINE];
    ok.extend(b"\n7\n");
    let got: Result<Vec<u64>, _> = TraceReader::new(trickle(&ok, 100), Format::Text).collect();
    assert_eq!(got.unwrap(), vec![7]);
}

#[test]
fn reuse_u64_words_and_trailing_bytes() {
    let words = [1u64, 0x7fff_c923_c998, u64::MAX, 0];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(read_all(&bytes, Format::U64).unwrap(), words);
    // Reads of 3 or 5 bytes split every word across reads.
    for step in [1, 3, 5, 8, 13] {
        let got: Result<Vec<u64>, _> =
            TraceReader::new(trickle(&bytes, step), Format::U64).collect();
        assert_eq!(got.unwrap(), words, "reads of {step} bytes");
    }
    let mut cut = bytes.clone();
    cut.extend([1, 2, 3]);
    for step in [2, 7, 64] {
        let got: Result<Vec<u64>, _> = TraceReader::new(trickle(&cut, step), Format::U64).collect();
        match got.unwrap_err() {
            ReuseError::TrailingBytes { len, trailing } => {
                assert_eq!((len, trailing), (35, 3), "reads of {step} bytes");
            }
            other => panic!("{other}"),
        }
    }
    let err = read_all(&[9; 5], Format::U64).unwrap_err();
    assert!(err.to_string().contains("5 trailing bytes"), "{err}");
    assert_eq!(read_all(b"", Format::U64).unwrap(), Vec::<u64>::new());
}

#[test]
fn reuse_batches_split_anywhere() {
    let words: Vec<u64> = (0..1_000).map(|i| i * 0x40).collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let text: String = words.iter().map(|w| format!("{w:#x}\n")).collect();
    for (data, format) in [(bytes, Format::U64), (text.into_bytes(), Format::Text)] {
        let mut r = TraceReader::new(trickle(&data, 37), format);
        let mut out = Vec::new();
        while r.read_into(&mut out, 77).unwrap() > 0 {}
        assert_eq!(out, words, "{format:?}");
    }
}
/// Real valgrind 3.19 `--tool=lackey --trace-mem=yes` output of a small static C program:
/// its head, a stretch with modify records, and its tail (46 I, 21 L/S, 3 M records).
const LACKEY: &str = r"==31713== Lackey, an example Valgrind tool
==31713== Copyright (C) 2002-2017, and GNU GPL'd, by Nicholas Nethercote.
==31713== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info
==31713== Command: ./tiny
==31713== Parent PID: 31704
==31713== 
I  004014f0,2
I  004014f2,3
I  004014f5,1
 L 1fff000780,8
I  004014f6,3
I  004014f9,4
I  004014fd,1
 S 1fff000778,8
I  004014fe,1
 S 1fff000770,8
I  004014ff,3
I  00401502,2
I  00401504,7
I  0040150b,6
 S 1fff000768,8
I  004027e0,2
 S 1fff000760,8
I  004027e2,3
I  004027e5,2
 S 1fff000758,8
I  004027e7,3
I  004027ea,2
 S 1fff000750,8
I  004027ec,2
I  004023b5,6
I  004023bb,7
 L 004ab490,4
I  004023c2,7
I  004023c9,7
 L 004ab4ac,4
I  004023d0,6
 S 004ab470,4
I  004023d6,5
I  004023db,6
 M 004ab4b0,4
I  004023e1,6
 L 004ab4f8,4
I  004023e7,6
I  004023ed,6
 L 004ab488,4
I  004023f3,7
 S 004ab46c,4
I  004023fa,5
I  004023ff,6
 S 004ab48c,4
I  00402405,2
I  00402407,6
 M 004ab508,4
I  0040240d,7
 S 004ab490,4
I  00402414,7
 S 004ab4ac,4
I  0040241b,6
 L 004ab514,4
I  00402421,2
I  00402423,4
 S 1fff000528,4
I  00402427,6
 L 004ab558,4
I  0040242d,6
I  00402433,6
 L 004ab524,4
I  00402439,3
I  0040243c,6
 M 004ab568,4
I  00402442,7
I  00402449,3
I  0040244c,6
 S 004ab524,4
I  00402452,6
==31713== 
==31713== Executed:
==31713==   SBs entered:   9,651
==31713==   SBs completed: 5,719
==31713==   guest instrs:  37,077
==31713==   IRStmts:       279,018
==31713== 
==31713== Ratios:
==31713==   guest instrs : SB entered  = 38 : 10
==31713==        IRStmts : SB entered  = 289 : 10
==31713==        IRStmts : guest instr = 75 : 10
==31713== 
==31713== Exit code:       0
";

#[test]
fn reuse_lackey_records() {
    let all = read_all(LACKEY.as_bytes(), Format::Lackey { data_only: false }).unwrap();
    let data = read_all(LACKEY.as_bytes(), Format::Lackey { data_only: true }).unwrap();
    assert_eq!(all.len(), 46 + 21 + 2 * 3);
    assert_eq!(data.len(), 21 + 2 * 3);
    assert_eq!(
        all[..4],
        [0x0040_14f0, 0x0040_14f2, 0x0040_14f5, 0x1f_ff00_0780]
    );
    // A modify is a load then a store: the store reuses at distance 0.
    let i = data.iter().position(|&a| a == 0x004a_b4b0).unwrap();
    assert_eq!(data[i + 1], 0x004a_b4b0);
    let h = analyze_slice(&data, Mode::ExactCpu, &Options::default()).unwrap();
    assert_eq!(h.references, 27);
    assert!(h.exact.get(0).unwrap_or(0) >= 3);
    // 64-byte items: neighbouring words share an item.
    let lines = Options {
        granularity: 64,
        ..Options::default()
    };
    let by_line = analyze_slice(&data, Mode::ExactCpu, &lines).unwrap();
    assert!(by_line.distinct < h.distinct);
}

#[test]
fn reuse_lackey_malformed() {
    let bad = "==1== banner\nI  0400d7d4,8\n L 04222cac\n";
    match read_all(bad.as_bytes(), Format::Lackey { data_only: false }).unwrap_err() {
        ReuseError::Malformed { line, text, .. } => {
            assert_eq!(line, 3);
            assert_eq!(text, " L 04222cac");
        }
        other => panic!("{other}"),
    }
    // A text trace is not a lackey trace.
    assert!(read_all(b"0x10\n", Format::Lackey { data_only: true }).is_err());
}

#[test]
fn reuse_every_format_gives_the_same_histogram() {
    let words: Vec<u64> = (0..3_000u64).map(|i| (i * i * 31) % 4_096 * 8).collect();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let hex: String = words.iter().map(|w| format!("{w:#x}\n")).collect();
    let dec: String = words.iter().map(|w| format!("{w}\n")).collect();
    let lackey: String = words.iter().map(|w| format!(" L {w:08x},8\n")).collect();
    let opts = Options::default();
    let want = analyze_slice(&words, Mode::ExactCpu, &opts).unwrap();
    for (data, format) in [
        (bytes, Format::U64),
        (hex.into_bytes(), Format::Text),
        (dec.into_bytes(), Format::Text),
        (lackey.into_bytes(), Format::Lackey { data_only: true }),
    ] {
        let mut r = TraceReader::new(Cursor::new(data), format);
        assert_eq!(
            analyze(&mut r, Mode::ExactCpu, &opts).unwrap(),
            want,
            "{format:?}"
        );
    }
}

#[test]
fn reuse_open_names_a_missing_file() {
    let err = trace::open("/nonexistent/trace.txt", Format::Text).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/trace.txt"), "{err}");
    assert_eq!(err.class(), ErrorClass::NotFound);
}

#[test]
fn reuse_analyze_reports_progress_and_stops_on_bad_input() {
    let text: String = (0..200_000u64)
        .map(|i| format!("{}\n", i % 1_000))
        .collect();
    let mut r = TraceReader::new(Cursor::new(text.into_bytes()), Format::Text);
    let mut seen = Vec::new();
    let h = memtune_core::reuse::analyze_with_progress(
        &mut r,
        Mode::ExactCpu,
        &Options::default(),
        |n| seen.push(n),
    )
    .unwrap();
    assert_eq!(h.references, 200_000);
    assert_eq!(seen.last(), Some(&200_000));
    assert!(seen.len() > 1);
    let mut bad = TraceReader::new(Cursor::new(b"1\n2\nnope\n".to_vec()), Format::Text);
    let err = analyze(&mut bad, Mode::ExactCpuParallel, &Options::default()).unwrap_err();
    assert!(
        matches!(err, ReuseError::Malformed { line: 3, .. }),
        "{err}"
    );
}
