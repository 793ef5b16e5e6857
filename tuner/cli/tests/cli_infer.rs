//! `cargo tune infer` through the built binary: the committed fixture (the simulated K80 of
//! seed 000, resampled as the seed tool's three files look: windows with gaps, a coarse
//! grid, 1-3% noise; written by `memtune-probe`'s `infer_imported` tests), the long layout,
//! and bad input.

mod common;

use common::Env;
use std::path::PathBuf;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The fixture's files, as absolute paths (the binary runs in a scratch project).
fn fixture() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/curves");
    ["k80-1-5.csv", "k80-48-240.csv", "k80-1500-5000.csv"]
        .iter()
        .map(|f| dir.join(f).to_string_lossy().into_owned())
        .collect()
}

fn args<'a>(head: &[&'a str], files: &'a [String]) -> Vec<&'a str> {
    head.iter()
        .copied()
        .chain(files.iter().map(String::as_str))
        .collect()
}

#[test]
fn the_seed_tools_files_of_a_simulated_k80_give_its_three_levels() {
    let env = Env::new();
    let files = fixture();
    let r = env.run(&args(&["infer", "--json"], &files));
    r.expect(0);
    let doc = r.json();
    assert_eq!(doc["gpu"], "paper-k80 (resampled)");
    assert_eq!(doc["files"].as_array().unwrap().len(), 3);
    let device = &doc["kinds"]["device"];
    // The configuration's levels (seed 000 Table 2): entries within 10%, page exact.
    let want = [(16, 128 * KIB), (65, 2 * MIB), (1032, 2 * MIB)];
    let levels = device["levels"].as_array().unwrap();
    assert_eq!(levels.len(), want.len(), "{levels:?}");
    for (level, (entries, page)) in levels.iter().zip(want) {
        assert_eq!(level["page_bytes"], page, "{level}");
        let got = level["entries"].as_u64().unwrap() as f64;
        assert!(
            (got / entries as f64 - 1.0).abs() <= 0.1,
            "{got} entries, want {entries}"
        );
    }
    // The merged curves: six strides, one window a file, every point.
    assert_eq!(device["curves"].as_array().unwrap().len(), 6);
    let windows = device["windows"].as_array().unwrap();
    let spans: Vec<(u64, u64)> = windows
        .iter()
        .map(|w| {
            (
                w["from_bytes"].as_u64().unwrap() / MIB,
                w["to_bytes"].as_u64().unwrap() / MIB,
            )
        })
        .collect();
    assert_eq!(spans, vec![(1, 5), (48, 240), (1500, 5000)]);
    let points: u64 = windows.iter().map(|w| w["points"].as_u64().unwrap()).sum();
    assert_eq!(device["points"], points);

    // The human output: the extent and the levels as `show` prints them.
    let r = env.run(&args(&["infer"], &files));
    r.expect(0)
        .says("paper-k80 (resampled) (3 files)")
        .says("strides 64 KiB, 128 KiB, 256 KiB, 1 MiB, 2 MiB, 4 MiB, 3 footprint windows")
        .says("1500 MiB - 5000 MiB")
        .says("level   entries       page      reach  miss cycles")
        .says("128 KiB");
}

#[test]
fn long_rows_of_several_kinds_and_the_kind_option() {
    let env = Env::new();
    // A single level of 16 entries of 64 KiB pages, +50 cycles, in pinned memory; device
    // memory flat.
    let mut text = String::from("kind,stride_bytes,footprint_bytes,cycles\n");
    for stride in [32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB] {
        for loads in 2..=64u64 {
            let footprint = loads * stride;
            let pages = footprint.div_ceil(64 * KIB);
            let missing = if pages > 16 {
                50.0 * (stride as f64 / (64 * KIB) as f64).min(1.0)
            } else {
                0.0
            };
            text += &format!("pinned,{stride},{footprint},{}\n", 1000.0 + missing);
            text += &format!("device,{stride},{footprint},300\n");
        }
    }
    let file = env.file("long.csv", &text);
    let path = file.to_str().unwrap();
    let r = env.run(&["infer", path, "--json"]);
    r.expect(0);
    let doc = r.json();
    assert!(doc["gpu"].is_null());
    let pinned = doc["kinds"]["pinned"]["levels"].as_array().unwrap();
    assert_eq!(pinned.len(), 1, "{pinned:?}");
    assert_eq!(pinned[0]["entries"], 16);
    assert_eq!(pinned[0]["page_bytes"], 64 * KIB);
    assert_eq!(doc["kinds"]["device"]["levels"], serde_json::json!([]));

    let r = env.run(&[
        "infer", path, "--format", "long", "--kind", "pinned", "--json",
    ]);
    r.expect(0);
    let kinds: Vec<String> = r.json()["kinds"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(kinds, vec!["pinned"]);
    env.run(&["infer", path, "--kind", "managed"])
        .expect(4)
        .says("no measurements of managed memory");
}

#[test]
fn bad_input_names_the_file_and_line_and_exits_as_an_invalid_file() {
    let env = Env::new();
    let bad = env.file(
        "bad.csv",
        "#Tesla K80: cuda 3.7\n#,64,128,\n1,239,239,\n1.5,240,x,\n",
    );
    let bad = bad.to_str().unwrap();
    env.run(&["infer", bad])
        .expect(4)
        .says("bad.csv:4: column 3 (stride 128 KiB): cycles `x` is not a number");
    let r = env.run(&["infer", bad, "--json"]);
    r.expect(4);
    assert_eq!(r.json()["error"]["kind"], "invalid_profile");
    // A seed file read as long rows; a file of neither layout.
    let files = fixture();
    env.run(&["infer", files[0].as_str(), "--format", "long"])
        .expect(4)
        .says("unknown column");
    let other = env.file("other.csv", "a,b\n1,2\n");
    env.run(&["infer", other.to_str().unwrap()])
        .expect(4)
        .says("neither layout");
    // Files of two GPUs are not merged.
    let p100 = env.file("p100.csv", "#Tesla P100: cuda 6.0\n#,1024,\n12,293,\n");
    env.run(&["infer", files[0].as_str(), p100.to_str().unwrap()])
        .expect(4)
        .says("curves of different GPUs cannot be merged");
    env.run(&["infer", "missing.csv"]).expect(6);
    env.run(&["infer"]).expect(2);
    env.run(&["infer", files[0].as_str(), "--clock-mhz", "0"])
        .expect(2);
}

#[test]
fn plot_draws_the_merged_curves_with_each_inferred_level() {
    let env = Env::new();
    let files = fixture();
    let dir = env.project().join("plots");
    let dir_arg = dir.to_string_lossy().into_owned();
    env.run(&args(&["infer", "--plot", &dir_arg], &files))
        .expect(0);
    let svg = std::fs::read_to_string(dir.join("tlb-device.svg")).expect("the chart");
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{}",
        &svg[..80]
    );
    for label in ["L1 16 ", "L2 6", "L3 10", "stride 64 KiB", "stride 4 MiB"] {
        assert!(svg.contains(label), "no `{label}` in the chart");
    }
    // A file where the folder should be: refused, nothing written.
    let blocked = env.file("blocked", "keep");
    let blocked_arg = blocked.to_string_lossy().into_owned();
    env.run(&args(&["infer", "--plot", &blocked_arg], &files))
        .expect(5);
    assert_eq!(std::fs::read_to_string(&blocked).unwrap(), "keep");
}
