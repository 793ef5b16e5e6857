use super::*;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn seed(text: &str) -> Result<FileCurves, ImportError> {
    parse_seed(text, Path::new("k80.csv"), MemoryKind::Device)
}

fn long(text: &str) -> Result<FileCurves, ImportError> {
    parse_long(text, Path::new("curves.csv"))
}

/// The message of an invalid-content error, with its file and line.
fn invalid(result: Result<FileCurves, ImportError>) -> (Option<usize>, String) {
    match result {
        Err(ImportError::Invalid { line, message, .. }) => (line, message),
        other => panic!("expected an invalid-content error, got {other:?}"),
    }
}

#[test]
fn seed_rows_with_empty_cells_and_trailing_commas() {
    let f = seed(
        "#Tesla K80: cuda 3.7\n#,64,128,256,\n1,239,239,238,\n1.0625,240,,,\r\n\n1.125,239,240,,\n",
    )
    .unwrap();
    assert_eq!(f.gpu.as_deref(), Some("Tesla K80"));
    let got: Vec<(u64, u64, f64)> = f
        .points
        .iter()
        .map(|p| (p.stride_bytes / KIB, p.footprint_bytes, p.cycles))
        .collect();
    assert_eq!(
        got,
        vec![
            (64, MIB, 239.0),
            (128, MIB, 239.0),
            (256, MIB, 238.0),
            (64, MIB + 64 * KIB, 240.0),
            (64, MIB + 128 * KIB, 239.0),
            (128, MIB + 128 * KIB, 240.0),
        ]
    );
    assert!(f.points.iter().all(|p| p.kind == MemoryKind::Device));
}

#[test]
fn seed_footprints_printed_to_six_digits_snap_to_the_stride() {
    // The tool prints 1500 + 1/16 MiB as `1500.06`.
    let f = seed("#GPU\n#,64,\n1500.06,275,\n").unwrap();
    assert_eq!(f.points[0].footprint_bytes, 1500 * MIB + 64 * KIB);
}

#[test]
fn seed_malformed_lines_name_their_line_and_column() {
    let cases = [
        ("#GPU\n1,239,\n", 2, "before the `#,"),
        ("#GPU\n#,64,abc,\n", 2, "column 3: stride `abc`"),
        ("#GPU\n#,64,0,\n", 2, "column 3: stride `0`"),
        ("#GPU\n#,64,64,\n", 2, "named twice"),
        ("#GPU\n#,\n", 2, "names no stride"),
        (
            "#GPU\n#,64,\n1,239,\nx,240,\n",
            4,
            "column 1: footprint `x`",
        ),
        ("#GPU\n#,64,\n-1,240,\n", 3, "column 1: footprint `-1`"),
        (
            "#GPU\n#,64,\n1,fast,\n",
            3,
            "column 2 (stride 64 KiB): cycles `fast`",
        ),
        ("#GPU\n#,64,\n1,0,\n", 3, "above 0"),
        ("#GPU\n#,64,\n1,inf,\n", 3, "above 0"),
        ("#GPU\n#,64,\n1,239,240,\n", 3, "column 3 holds `240`"),
        (
            "#GPU\n#,2048,\n1,239,\n",
            3,
            "smaller than the stride 2048 KiB",
        ),
        ("#GPU\n#,64,\n1,239,\n#,64,\n", 4, "a second"),
    ];
    for (text, line, needle) in cases {
        let (got_line, message) = invalid(seed(text));
        assert_eq!(got_line, Some(line), "{text:?}: {message}");
        assert!(message.contains(needle), "{text:?}: {message}");
    }
    let (line, message) = invalid(seed("#GPU\n#,64,\n\n1,,\n"));
    assert_eq!(line, None);
    assert!(message.contains("no measurements"), "{message}");
    let (line, message) = invalid(seed("#GPU only\n"));
    assert_eq!(line, None);
    assert!(message.contains("no `#,"), "{message}");
}

#[test]
fn errors_display_file_and_line() {
    let e = seed("#GPU\n#,64,\n1,fast,\n").unwrap_err();
    assert!(e.to_string().starts_with("k80.csv:3: column 2"), "{e}");
    assert_eq!(e.class(), ErrorClass::Invalid);
}

#[test]
fn overlong_lines_are_refused() {
    let text = format!("#GPU\n#,64,\n1,{}\n", "2".repeat(MAX_LINE_BYTES));
    let (line, message) = invalid(seed(&text));
    assert_eq!(line, Some(3));
    assert!(message.contains("longer than"), "{message}");
}

#[test]
fn windows_of_several_files_merge_into_one_curve_per_stride() {
    let a = parse_seed(
        "#Tesla K80: cuda 3.7\n#,1024,2048,\n48,248,248,\n49,249,,\n50,250,248,\n",
        Path::new("a.csv"),
        MemoryKind::Device,
    )
    .unwrap();
    // Overlaps `a` at 50 MiB (the median of 250 and 252 is kept) and adds a far window.
    let b = parse_seed(
        "#Tesla K80: cuda 3.7\n#,1024,\n50,252,\n1500,275,\n1501,275,\n1502,276,\n",
        Path::new("b.csv"),
        MemoryKind::Device,
    )
    .unwrap();
    let imported = merge(vec![b, a], None).unwrap();
    assert_eq!(imported.gpu.as_deref(), Some("Tesla K80"));
    let device = &imported.kinds[&MemoryKind::Device];
    let strides: Vec<u64> = device.curves.iter().map(|c| c.stride_bytes).collect();
    assert_eq!(strides, vec![MIB, 2 * MIB]);
    let one: Vec<(u64, f64)> = device.curves[0]
        .points
        .iter()
        .map(|p| (p.footprint_bytes / MIB, p.cycles_per_load))
        .collect();
    assert_eq!(
        one,
        vec![
            (48, 248.0),
            (49, 249.0),
            (50, 251.0),
            (1500, 275.0),
            (1501, 275.0),
            (1502, 276.0)
        ]
    );
    assert_eq!(device.points(), 8);
    assert_eq!(device.swept_up_to_bytes(), 1502 * MIB);
    let windows: Vec<(u64, u64, Vec<u64>)> = device
        .windows
        .iter()
        .map(|w| (w.from_bytes / MIB, w.to_bytes / MIB, w.strides.clone()))
        .collect();
    assert_eq!(
        windows,
        vec![(48, 50, vec![MIB, 2 * MIB]), (1500, 1502, vec![MIB])]
    );
}

#[test]
fn files_of_different_gpus_are_not_merged() {
    let a = parse_seed(
        "#Tesla K80\n#,64,\n1,239,\n",
        Path::new("a.csv"),
        MemoryKind::Device,
    );
    let b = parse_seed(
        "#Tesla P100\n#,64,\n1,293,\n",
        Path::new("b.csv"),
        MemoryKind::Device,
    );
    let e = merge(vec![a.unwrap(), b.unwrap()], None).unwrap_err();
    assert!(
        e.to_string().contains("b.csv: measured `Tesla P100`"),
        "{e}"
    );
    assert!(e.to_string().contains("a.csv measured `Tesla K80`"), "{e}");
}

#[test]
fn long_rows_in_any_column_order_with_repeats() {
    let f = long(
        "# written by hand\nstride_bytes,kind,footprint_bytes,cycles\n\
         4096,pinned,65536,2100.5\n4096,pinned,65536,2101.5\n2097152,device,4194304,300\n",
    )
    .unwrap();
    assert_eq!(f.points.len(), 3);
    let imported = merge(vec![f.clone()], None).unwrap();
    let pinned = &imported.kinds[&MemoryKind::Pinned].curves;
    assert_eq!(pinned.len(), 1);
    assert_eq!(pinned[0].points.len(), 1, "repeats are one point");
    assert_eq!(pinned[0].points[0].cycles_per_load, 2101.0);
    assert_eq!(
        imported.kinds[&MemoryKind::Device].curves[0].points.len(),
        1
    );
    // --kind keeps one kind; a kind with no rows is an error.
    let only = merge(vec![f.clone()], Some(MemoryKind::Device)).unwrap();
    assert_eq!(
        only.kinds.keys().collect::<Vec<_>>(),
        vec![&MemoryKind::Device]
    );
    let e = merge(vec![f], Some(MemoryKind::Managed)).unwrap_err();
    assert!(
        e.to_string().contains("no measurements of managed memory"),
        "{e}"
    );
}

#[test]
fn long_malformed_lines_name_their_line() {
    let header = "kind,stride_bytes,footprint_bytes,cycles\n";
    let cases = [
        (
            "kind,stride,footprint_bytes,cycles\n",
            1,
            "unknown column `stride`",
        ),
        ("kind,stride_bytes,footprint_bytes\n", 1, "lacks `cycles`"),
        (
            "kind,kind,stride_bytes,footprint_bytes,cycles\n",
            1,
            "named twice",
        ),
        (
            "host,4096,8192,100\n",
            2,
            "column 1: unknown memory kind `host`",
        ),
        ("device,4096,8192\n", 2, "3 columns, but the header has 4"),
        ("device,4k,8192,100\n", 2, "column 2: stride_bytes `4k`"),
        ("device,4096,0,100\n", 2, "column 3: footprint_bytes `0`"),
        ("device,8192,4096,100\n", 2, "smaller than stride_bytes"),
        ("device,4096,8192,NaN\n", 2, "column 4: cycles"),
    ];
    for (rows, line, needle) in cases {
        let text = if line == 1 {
            rows.to_string()
        } else {
            format!("{header}{rows}")
        };
        let (got_line, message) = invalid(long(&text));
        assert_eq!(got_line, Some(line), "{text:?}: {message}");
        assert!(message.contains(needle), "{text:?}: {message}");
    }
    let (line, message) = invalid(long(header));
    assert_eq!(line, None);
    assert!(message.contains("no measurements"), "{message}");
}

#[test]
fn formats_are_detected_and_written_back() {
    assert_eq!(Format::detect("\n#Tesla K80\n"), Some(Format::Seed));
    assert_eq!(
        Format::detect("kind,stride_bytes,footprint_bytes,cycles\n"),
        Some(Format::Long)
    );
    assert_eq!(Format::detect("a,b\n"), None);
    assert_eq!("long".parse::<Format>(), Ok(Format::Long));
    let curves = vec![
        ChaseCurve {
            stride_bytes: 64 * KIB,
            points: vec![
                ChasePoint {
                    footprint_bytes: MIB,
                    cycles_per_load: 239.0,
                },
                ChasePoint {
                    footprint_bytes: MIB + 64 * KIB,
                    cycles_per_load: 244.0,
                },
            ],
        },
        ChaseCurve {
            stride_bytes: 128 * KIB,
            points: vec![ChasePoint {
                footprint_bytes: MIB,
                cycles_per_load: 240.0,
            }],
        },
    ];
    let text = write_seed("Sim K80", &curves);
    assert_eq!(text, "#Sim K80\n#,64,128,\n1,239,240,\n1.0625,244,,\n");
    let back = merge(vec![seed(&text).unwrap()], None).unwrap();
    assert_eq!(back.kinds[&MemoryKind::Device].curves, curves);
    let text = write_long(MemoryKind::Pinned, &curves);
    let back = merge(vec![long(&text).unwrap()], None).unwrap();
    assert_eq!(back.kinds[&MemoryKind::Pinned].curves, curves);
}

#[test]
fn files_are_read_through_userio_with_its_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.csv");
    let e = import_files(&[missing], None, None).unwrap_err();
    assert_eq!(e.class(), ErrorClass::NotFound);
    let odd = dir.path().join("odd.csv");
    std::fs::write(&odd, "x,y\n1,2\n").unwrap();
    let e = import_files(std::slice::from_ref(&odd), None, None).unwrap_err();
    assert!(e.to_string().contains("odd.csv:1: neither layout"), "{e}");
    let good = dir.path().join("k80.csv");
    std::fs::write(&good, "#Tesla K80: cuda 3.7\n#,64,\n1,239,\n2,240,\n").unwrap();
    let imported = import_files(&[good], None, Some(MemoryKind::Pinned)).unwrap();
    assert!(imported.kinds.contains_key(&MemoryKind::Pinned));
}
