//! Trace readers: addresses streamed from any `BufRead` with bounded memory (one line, or
//! one buffer of words, at a time), and from slices. Formats: text (one hex or decimal
//! address per line, PARDA's layout), raw little-endian `u64`, and valgrind lackey
//! `--trace-mem=yes` output. Compressed traces: wrap the decompressor's reader.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::Path;

use super::error::malformed;
use super::parse::{lackey_line, text_line, Line};
use super::ReuseError;

/// Longest line a text or lackey trace may have; longer is an error, never a bigger buffer.
pub const MAX_LINE: usize = 4096;

/// Records (lines of a text or lackey trace, 8-byte addresses of a `U64` one) a reader
/// takes by default before [`ReuseError::TooManyRecords`]: 2^32, a 32 GiB `U64` trace, so
/// that an endless input (`yes 0x10`, a device) ends with an error instead of running on.
/// [`TraceReader::with_max_records`] sets another bound.
pub const DEFAULT_MAX_RECORDS: u64 = 1 << 32;

/// How a trace file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// One address per line, `0x` hex or decimal; blank lines and `#` comments skipped.
    Text,
    /// Raw little-endian `u64` addresses.
    U64,
    /// valgrind `--tool=lackey --trace-mem=yes`; a modify (`M`) is a load then a store.
    Lackey {
        /// Drop instruction (`I`) records.
        data_only: bool,
    },
}

/// Anything addresses can be drawn from in batches.
pub trait AddressSource {
    /// Appends up to `max` addresses to `out`; returns how many, 0 at the end.
    fn read_into(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, ReuseError>;
}

/// A trace already in memory.
#[derive(Debug, Clone)]
pub struct SliceSource<'a> {
    rest: &'a [u64],
}

impl<'a> SliceSource<'a> {
    pub fn new(addresses: &'a [u64]) -> SliceSource<'a> {
        SliceSource { rest: addresses }
    }
}

impl AddressSource for SliceSource<'_> {
    fn read_into(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, ReuseError> {
        let (now, rest) = self.rest.split_at(max.min(self.rest.len()));
        out.extend_from_slice(now);
        self.rest = rest;
        Ok(now.len())
    }
}

/// Streams the addresses of a trace; an `Iterator` of `Result<u64, _>` and an
/// [`AddressSource`]. After an error it yields nothing more.
#[derive(Debug)]
pub struct TraceReader<R> {
    inner: R,
    format: Format,
    /// Lines read so far (the current line's 1-based number).
    line: u64,
    /// The current line, at most `MAX_LINE` bytes.
    buf: Vec<u8>,
    /// The store half of a lackey modify.
    pending: Option<u64>,
    /// `U64`: bytes read, and a word split across two reads.
    bytes: u64,
    /// `U64`: addresses read.
    words: u64,
    /// Most records (lines, or `U64` addresses) read before an error.
    max_records: u64,
    carry: [u8; 8],
    carry_len: usize,
    scratch: Vec<u64>,
    done: bool,
}

/// Opens a trace file for streaming.
pub fn open(
    path: impl AsRef<Path>,
    format: Format,
) -> Result<TraceReader<BufReader<File>>, ReuseError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| ReuseError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(TraceReader::new(
        BufReader::with_capacity(1 << 16, file),
        format,
    ))
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(inner: R, format: Format) -> TraceReader<R> {
        TraceReader {
            inner,
            format,
            line: 0,
            buf: Vec::new(),
            pending: None,
            bytes: 0,
            words: 0,
            max_records: DEFAULT_MAX_RECORDS,
            carry: [0; 8],
            carry_len: 0,
            scratch: Vec::new(),
            done: false,
        }
    }

    /// The same reader, failing with [`ReuseError::TooManyRecords`] once the trace has
    /// more than `max` records (lines, blank and skipped ones included, or `U64` addresses).
    pub fn with_max_records(mut self, max: u64) -> TraceReader<R> {
        self.max_records = max;
        self
    }

    /// Lines read so far (text and lackey formats).
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// Bytes read so far (`U64` format).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Reads the next line into `buf` (newline dropped); `false` at the end.
    fn next_line(&mut self) -> Result<bool, ReuseError> {
        self.buf.clear();
        let mut any = false;
        loop {
            let avail = fill(&mut self.inner)?;
            if avail.is_empty() {
                break;
            }
            any = true;
            let newline = avail.iter().position(|&b| b == b'\n');
            let take = newline.map_or(avail.len(), |i| i);
            if self.buf.len() + take > MAX_LINE {
                self.line += 1;
                return Err(ReuseError::LineTooLong {
                    line: self.line,
                    max: MAX_LINE,
                });
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.inner.consume(newline.map_or(take, |i| i + 1));
            if newline.is_some() {
                break;
            }
        }
        if any {
            self.line += 1;
            if self.line > self.max_records {
                return Err(ReuseError::TooManyRecords {
                    limit: self.max_records,
                });
            }
        }
        Ok(any)
    }

    /// Next address of a text or lackey trace.
    fn next_text(&mut self) -> Result<Option<u64>, ReuseError> {
        if let Some(a) = self.pending.take() {
            return Ok(Some(a));
        }
        while self.next_line()? {
            let parsed = match self.format {
                Format::Lackey { data_only } => lackey_line(&self.buf, data_only),
                _ => text_line(&self.buf),
            };
            match parsed.map_err(|why| malformed(self.line, &self.buf, why))? {
                Line::Skip => continue,
                Line::One(a) => return Ok(Some(a)),
                Line::Two(a) => {
                    self.pending = Some(a);
                    return Ok(Some(a));
                }
            }
        }
        Ok(None)
    }

    /// Appends up to `max` words of a `U64` trace.
    fn read_words(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, ReuseError> {
        let start = out.len();
        while out.len() - start < max {
            let avail = fill(&mut self.inner)?;
            if avail.is_empty() {
                if self.carry_len > 0 {
                    return Err(ReuseError::TrailingBytes {
                        len: self.bytes,
                        trailing: self.carry_len as u64,
                    });
                }
                break;
            }
            let mut used = 0;
            if self.carry_len > 0 {
                let take = (8 - self.carry_len).min(avail.len());
                self.carry[self.carry_len..self.carry_len + take].copy_from_slice(&avail[..take]);
                self.carry_len += take;
                used = take;
                if self.carry_len == 8 {
                    out.push(u64::from_le_bytes(self.carry));
                    self.words += 1;
                    self.carry_len = 0;
                }
            }
            let want = max - (out.len() - start);
            let words = ((avail.len() - used) / 8).min(want);
            out.extend(
                avail[used..used + words * 8]
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])),
            );
            used += words * 8;
            self.words += words as u64;
            let tail = avail.len() - used;
            if tail < 8 && out.len() - start < max && self.carry_len == 0 {
                self.carry[..tail].copy_from_slice(&avail[used..]);
                self.carry_len = tail;
                used = avail.len();
            }
            self.inner.consume(used);
            self.bytes += used as u64;
            // At most one batch past the bound: the caller's `max` bounds the overshoot.
            if self.words > self.max_records {
                return Err(ReuseError::TooManyRecords {
                    limit: self.max_records,
                });
            }
        }
        Ok(out.len() - start)
    }

    fn read_batch(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, ReuseError> {
        if let Format::U64 = self.format {
            return self.read_words(out, max);
        }
        let start = out.len();
        while out.len() - start < max {
            match self.next_text()? {
                Some(a) => out.push(a),
                None => break,
            }
        }
        Ok(out.len() - start)
    }
}

/// The reader's buffer, refilled if empty; retries interrupted reads.
fn fill<R: BufRead>(r: &mut R) -> Result<&[u8], ReuseError> {
    loop {
        match r.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(r.fill_buf()?)
}

impl<R: BufRead> AddressSource for TraceReader<R> {
    fn read_into(&mut self, out: &mut Vec<u64>, max: usize) -> Result<usize, ReuseError> {
        if self.done || max == 0 {
            return Ok(0);
        }
        let r = self.read_batch(out, max);
        self.done = !matches!(r, Ok(n) if n > 0);
        r
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<u64, ReuseError>;

    fn next(&mut self) -> Option<Result<u64, ReuseError>> {
        let mut one = std::mem::take(&mut self.scratch);
        one.clear();
        let r = self.read_into(&mut one, 1);
        let item = match r {
            Ok(0) => None,
            Ok(_) => one.first().copied().map(Ok),
            Err(e) => Some(Err(e)),
        };
        self.scratch = one;
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// An endless stream repeating `pattern`, like `yes`.
    struct Endless(&'static [u8], usize);

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            for b in buf.iter_mut() {
                *b = self.0[self.1 % self.0.len()];
                self.1 += 1;
            }
            Ok(buf.len())
        }
    }

    fn drain<R: BufRead>(mut r: TraceReader<R>) -> (u64, Result<(), ReuseError>) {
        let mut out = Vec::new();
        loop {
            out.clear();
            match r.read_into(&mut out, 1000) {
                Ok(0) => return (r.words.max(r.line), Ok(())),
                Ok(_) => {}
                Err(e) => return (r.words.max(r.line), Err(e)),
            }
        }
    }

    #[test]
    fn endless_streams_end_at_the_record_bound() {
        for (pattern, format) in [
            (&b"1\n"[..], Format::Text),                                   // `yes 1`
            (&b"\n"[..], Format::Text), // blank lines only: no address at all
            (&b"# x\n"[..], Format::Text), // comments only
            (&b"I  0400d7d4,8\n"[..], Format::Lackey { data_only: true }), // all skipped
            (&b"\0"[..], Format::U64),  // /dev/zero
        ] {
            let reader = TraceReader::new(BufReader::new(Endless(pattern, 0)), format)
                .with_max_records(5000);
            let (records, result) = drain(reader);
            assert!(
                matches!(result, Err(ReuseError::TooManyRecords { limit: 5000 })),
                "{pattern:?} {format:?}: {result:?}"
            );
            // Stopped at the bound, give or take one batch.
            assert!((5000..=6000).contains(&records), "{records}");
        }
    }

    #[test]
    fn a_trace_of_exactly_the_bound_reads_whole() {
        let text = "0x10\n".repeat(100);
        let reader = TraceReader::new(text.as_bytes(), Format::Text).with_max_records(100);
        assert_eq!(reader.count(), 100);
        let words = vec![7u8; 8 * 100];
        let reader = TraceReader::new(&words[..], Format::U64).with_max_records(100);
        assert!(reader
            .map(|a| a.unwrap())
            .all(|a| a == 0x0707_0707_0707_0707));
        let over = TraceReader::new(&words[..], Format::U64).with_max_records(99);
        assert!(over.into_iter().any(|a| a.is_err()));
    }

    #[test]
    fn the_error_names_the_bound_and_how_to_raise_it() {
        let msg = ReuseError::TooManyRecords { limit: 5000 }.to_string();
        assert!(
            msg.contains("5000") && msg.contains("--max-records"),
            "{msg}"
        );
        assert_eq!(
            ReuseError::TooManyRecords { limit: 1 }.class(),
            crate::ErrorClass::Invalid
        );
    }
}
