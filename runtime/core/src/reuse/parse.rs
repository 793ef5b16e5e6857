//! Parsing one line of a text trace: an address in hex (`0x` prefix) or decimal, or one
//! valgrind lackey `--trace-mem=yes` record. Lines are bytes, already cut at the newline.

/// What a line holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// Blank, a `#` comment, a lackey `==pid==` banner, or an instruction record dropped
    /// by `data_only`.
    Skip,
    One(u64),
    /// A lackey modify (`M`): a load then a store of the same address.
    Two(u64),
}

/// `0x7fffc923c998` or `140736567675288`; `#` starts a comment.
pub(crate) fn text_line(line: &[u8]) -> Result<Line, &'static str> {
    let body = trim(cut_comment(line));
    if body.is_empty() {
        return Ok(Line::Skip);
    }
    if let Some(hex) = body
        .strip_prefix(b"0x")
        .or_else(|| body.strip_prefix(b"0X"))
    {
        return parse_hex(hex).map(Line::One);
    }
    parse_decimal(body).map(Line::One).map_err(|why| {
        if body.iter().all(u8::is_ascii_hexdigit) {
            "not a decimal address (a hex address needs the 0x prefix)"
        } else {
            why
        }
    })
}

/// `I  0400d7d4,8`, ` L 04222cac,8`, ` S 7ff000398,8`, ` M 0421c7f0,4`; `==1234==` lines
/// are valgrind's own and skipped.
pub(crate) fn lackey_line(line: &[u8], data_only: bool) -> Result<Line, &'static str> {
    let body = trim(line);
    if body.is_empty() || body.starts_with(b"==") || body.starts_with(b"#") {
        return Ok(Line::Skip);
    }
    let (&kind, rest) = body.split_first().ok_or("empty record")?;
    let rest = trim(rest);
    let comma = rest
        .iter()
        .position(|&b| b == b',')
        .ok_or("not a lackey record (expected `KIND ADDRESS,SIZE`)")?;
    let address = parse_hex(&rest[..comma])?;
    parse_decimal(&rest[comma + 1..]).map_err(|_| "lackey record without a decimal size")?;
    match kind {
        b'I' if data_only => Ok(Line::Skip),
        b'I' | b'L' | b'S' => Ok(Line::One(address)),
        b'M' => Ok(Line::Two(address)),
        _ => Err("not a lackey record (kind is not I, L, S or M)"),
    }
}

fn cut_comment(line: &[u8]) -> &[u8] {
    match line.iter().position(|&b| b == b'#') {
        Some(i) => &line[..i],
        None => line,
    }
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

fn parse_hex(digits: &[u8]) -> Result<u64, &'static str> {
    if digits.is_empty() {
        return Err("empty hex address");
    }
    let mut v: u64 = 0;
    for &b in digits {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err("not a hex address"),
        };
        if v >> 60 != 0 {
            return Err("hex address wider than 64 bits");
        }
        v = (v << 4) | u64::from(d);
    }
    Ok(v)
}

fn parse_decimal(digits: &[u8]) -> Result<u64, &'static str> {
    if digits.is_empty() {
        return Err("empty address");
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return Err("not a hex (0x...) or decimal address");
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or("decimal address above 2^64 - 1")?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text() {
        assert_eq!(
            text_line(b"0x7fffc923c998"),
            Ok(Line::One(0x7fff_c923_c998))
        );
        assert_eq!(text_line(b"  42 \r"), Ok(Line::One(42)));
        assert_eq!(text_line(b"0XfF # x"), Ok(Line::One(255)));
        assert_eq!(text_line(b"# header"), Ok(Line::Skip));
        assert_eq!(text_line(b"   "), Ok(Line::Skip));
        assert_eq!(text_line(b"18446744073709551615"), Ok(Line::One(u64::MAX)));
        assert!(text_line(b"18446744073709551616").is_err());
        assert!(text_line(b"0x1ffffffffffffffff").is_err());
        assert!(text_line(b"0x").is_err());
        assert!(text_line(b"12 34").is_err());
        assert!(text_line(b"abc").unwrap_err().contains("0x prefix"));
    }

    #[test]
    fn lackey() {
        assert_eq!(
            lackey_line(b"I  0400d7d4,8", false),
            Ok(Line::One(0x0400_d7d4))
        );
        assert_eq!(lackey_line(b"I  0400d7d4,8", true), Ok(Line::Skip));
        assert_eq!(
            lackey_line(b" L 04222cac,8", true),
            Ok(Line::One(0x0422_2cac))
        );
        assert_eq!(
            lackey_line(b" S 7ff000398,8", true),
            Ok(Line::One(0x7_ff00_0398))
        );
        assert_eq!(
            lackey_line(b" M 0421c7f0,4", true),
            Ok(Line::Two(0x0421_c7f0))
        );
        assert_eq!(lackey_line(b"==1234== Lackey", true), Ok(Line::Skip));
        assert!(lackey_line(b" X 0421c7f0,4", true).is_err());
        assert!(lackey_line(b" L 0421c7f0", true).is_err());
        assert!(lackey_line(b" L zz,4", true).is_err());
        assert!(lackey_line(b" L 10,", true).is_err());
    }
}
