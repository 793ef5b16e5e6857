//! Every plot of the real H100 profile and of its benchmarks, rendered to PNG with resvg:
//! a broken SVG fails the build, no two text boxes may overlap, no two curves may share a
//! colour. The PNGs are left in the target folder (`tmp/plots/`) to look at.

use cargo_tune::plot::{profile_svgs, reuse_svgs};
use cargo_tune::report::{bench_chart, BenchFile};
use resvg::{tiny_skia, usvg};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const RUN: &str = "tests/fixtures/h100/bench-b9cd8c3b";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The profile of the run in [`RUN`] (a fixture: tests read it).
fn profile_path() -> PathBuf {
    repo().join("tests/fixtures/h100/GPU-b9cd8c3b-46b0-8568-1f4e-2b6244305dff.json")
}

/// The system's fonts; `None` (test skipped) where there are none, except on CI.
fn options() -> Option<usvg::Options<'static>> {
    let mut opts = usvg::Options::default();
    opts.fontdb_mut().load_system_fonts();
    if opts.fontdb.is_empty() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no fonts to render the plots' text with"
        );
        println!("SKIPPED plots: no system fonts");
        return None;
    }
    // Generic `sans-serif` means Arial to fontdb; use a sans-serif face that is there.
    let family = ["DejaVu Sans", "Liberation Sans", "Noto Sans"]
        .into_iter()
        .find(|f| {
            let query = usvg::fontdb::Query {
                families: &[usvg::fontdb::Family::Name(f)],
                ..Default::default()
            };
            opts.fontdb.query(&query).is_some()
        })
        .map(str::to_string)
        .or_else(|| {
            opts.fontdb
                .faces()
                .next()?
                .families
                .first()
                .map(|f| f.0.clone())
        })?;
    opts.fontdb_mut().set_sans_serif_family(&family);
    opts.font_family = family;
    Some(opts)
}

fn text_boxes(group: &usvg::Group, out: &mut Vec<(String, usvg::Rect)>) {
    for node in group.children() {
        match node {
            usvg::Node::Group(g) => text_boxes(g, out),
            usvg::Node::Text(t) => {
                let s: String = t.chunks().iter().map(|c| c.text()).collect();
                out.push((s, t.abs_bounding_box()));
            }
            _ => {}
        }
    }
}

/// The stroke colours of the curves (plotters draws each curve as one 2-px polyline).
fn curve_colours(svg: &str) -> Vec<String> {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| p.contains("stroke-width=\"2\""))
        .filter_map(|p| Some(p.split("stroke=\"").nth(1)?.split('"').next()?.to_string()))
        .collect()
}

/// Renders `svg` to `dir/name.png` and returns what is wrong with it.
fn check(name: &str, svg: &str, opts: &usvg::Options, dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let tree = match usvg::Tree::from_str(svg, opts) {
        Ok(t) => t,
        Err(e) => return vec![format!("{name}: not an SVG: {e}")],
    };
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).expect("a pixmap");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    let inked = pixmap.pixels().iter().filter(|p| p.red() < 200).count();
    if inked < 2000 {
        problems.push(format!(
            "{name}: almost nothing drawn ({inked} dark pixels)"
        ));
    }
    let png = dir.join(name.replace(".svg", ".png"));
    pixmap.save_png(&png).expect("PNG written");
    let mut boxes = Vec::new();
    text_boxes(tree.root(), &mut boxes);
    if boxes.len() < 5 {
        problems.push(format!("{name}: only {} texts laid out", boxes.len()));
    }
    for (i, (a, ra)) in boxes.iter().enumerate() {
        for (b, rb) in &boxes[i + 1..] {
            let w = ra.right().min(rb.right()) - ra.left().max(rb.left());
            let h = ra.bottom().min(rb.bottom()) - ra.top().max(rb.top());
            if w > 0.5 && h > 0.5 {
                problems.push(format!("{name}: `{a}` overlaps `{b}` ({w:.1} x {h:.1} px)"));
            }
        }
    }
    let colours = curve_colours(svg);
    let distinct: BTreeSet<&String> = colours.iter().collect();
    if distinct.len() != colours.len() {
        problems.push(format!(
            "{name}: {} curves in {} colours",
            colours.len(),
            distinct.len()
        ));
    }
    problems
}

/// The reuse plots of a trace that sweeps 4 MiB in 64-byte steps and reads a random 256 KiB
/// window between sweeps, with the H100 profile's levels marked (device memory).
fn reuse_plots() -> Vec<(String, String)> {
    use memtune_core::reuse::{analyze_slice, levels, Mode, Options};
    let mut trace = Vec::new();
    let mut x = 1u64;
    for _ in 0..4 {
        trace.extend((0..(4u64 << 20) / 64).map(|i| i * 64));
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            trace.push((x >> 40) % (256 << 10));
        }
    }
    let profile =
        memtune_core::store::load_path(&repo().join("tests/fixtures/h100.json")).expect("profile");
    let levels = levels::levels(&profile, memtune_core::MemoryKind::Device);
    let mut granularities = levels::granularities(&levels);
    granularities.push(1);
    let histograms: std::collections::BTreeMap<u64, _> = granularities
        .into_iter()
        .map(|granularity| {
            let options = Options {
                granularity,
                ..Options::default()
            };
            let h = analyze_slice(&trace, Mode::ExactCpu, &options).expect("analysis");
            (granularity, h)
        })
        .collect();
    let sectored: std::collections::BTreeMap<(u64, u64), _> = levels::sectored_grains(&levels)
        .into_iter()
        .map(|(fill, line)| {
            let h = memtune_core::reuse::sectored::histogram(&trace, fill, line);
            ((fill, line), h.expect("sectored analysis"))
        })
        .collect();
    let predictions = levels::predict(&levels, |l| {
        if l.sectored() {
            sectored.get(&(l.granularity, l.line_bytes))
        } else {
            histograms.get(&l.granularity)
        }
    });
    assert!(predictions.len() >= 3, "{predictions:?}");
    let svgs = reuse_svgs("sweep+window", &histograms, &predictions);
    let cdf = &svgs[0].1;
    assert!(
        cdf.contains("hit 0."),
        "levels are labelled with their hit ratio"
    );
    assert_eq!(
        curve_colours(cdf).len(),
        histograms.len(),
        "a curve per granularity"
    );
    svgs
}

fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plots");
    std::fs::create_dir_all(&dir).expect("plot folder");
    dir
}

#[test]
fn every_plot_renders_without_overlapping_text_or_shared_colours() {
    let Some(opts) = options() else { return };
    let dir = out_dir();
    let mut svgs = Vec::new();
    for path in [profile_path(), repo().join("tests/fixtures/h100.json")] {
        let profile = memtune_core::store::load_path(&path).expect("the profile loads");
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("p")
            .to_string();
        for (name, svg) in profile_svgs(&profile) {
            svgs.push((format!("{stem}-{name}"), svg));
        }
    }
    for workload in ["sampling", "grouping", "stencil"] {
        let path = repo().join(RUN).join(format!("bench-{workload}.json"));
        let bytes = std::fs::read(&path).expect("bench file");
        let bench: BenchFile = serde_json::from_slice(&bytes).expect("bench JSON");
        svgs.push((
            format!("bench-{workload}.svg"),
            bench_chart(&bench).to_svg(),
        ));
    }
    svgs.extend(reuse_plots());
    assert!(svgs.len() >= 14, "{} plots", svgs.len());
    let tlb = svgs
        .iter()
        .find(|(n, _)| n.starts_with("GPU-b9cd8c3b") && n.ends_with("tlb-pinned.svg"));
    let tlb = &tlb.expect("the pinned TLB plot").1;
    assert_eq!(curve_colours(tlb).len(), 14, "one curve per stride");
    assert!(
        tlb.contains("L6 981 × 2 MiB"),
        "levels are labelled with size"
    );
    assert!(
        tlb.contains("conf 0.80"),
        "levels are labelled with confidence"
    );
    let problems: Vec<String> = svgs
        .iter()
        .flat_map(|(name, svg)| check(name, svg, &opts, &dir))
        .collect();
    println!("PNG renderings in {}", dir.display());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn bench_times_are_on_a_log_axis_with_round_ticks() {
    let path = repo().join(RUN).join("bench-sampling.json");
    let bench: BenchFile =
        serde_json::from_slice(&std::fs::read(path).expect("bench file")).expect("bench JSON");
    let svg = bench_chart(&bench).to_svg();
    // Sampling spans about 100 µs to 50 ms: a log axis labels decades and 1-3 steps.
    for tick in ["100 µs", "1 ms", "10 ms"] {
        assert!(
            svg.contains(&format!(">\n{tick}\n</text>")),
            "no tick {tick}"
        );
    }
    assert!(svg.contains("opacity=\"0.16\""), "bands are drawn");
}
