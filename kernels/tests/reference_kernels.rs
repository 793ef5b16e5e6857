//! NVRTC checks of the tuned reference kernels beyond `nvrtc_compile.rs` (which builds
//! every source with its default defines): tuned, non-default defines compile cleanly;
//! impossible ones fail with the kernel's own message; the stencil's repeats really
//! re-read memory; and NVRTC lays out memtune_params.h exactly as the Rust side does.
//! Needs NVRTC 13 (scripts/install-cuda.sh).

use std::mem::{offset_of, size_of};

use memtune_kernels::params::{
    GroupingBucket, GroupingCounters, GroupingParams, SamplingParams, StencilParams, EMPTY_KEY,
};
use memtune_kernels::{compile_ptx, grouping, sampling, stencil, CompileError, KernelSource};

const ARCHS: &[&str] = &["sm_75", "sm_80", "sm_90"];

type Defines = &'static [(&'static str, &'static str)];

/// Tuned (non-default) define sets, each of which must compile for every arch.
const TUNED: &[(KernelSource, Defines)] = &[
    (
        sampling::SOURCE,
        &[
            ("MEMTUNE_SAMPLING_BLOCK", "128"),
            ("MEMTUNE_SAMPLING_UNROLL", "1"),
        ],
    ),
    (
        sampling::SOURCE,
        &[
            ("MEMTUNE_SAMPLING_BLOCK", "1024"),
            ("MEMTUNE_SAMPLING_UNROLL", "16"),
        ],
    ),
    (
        sampling::SOURCE,
        &[
            ("MEMTUNE_SAMPLING_BLOCK", "96"),
            ("MEMTUNE_SAMPLING_UNROLL", "3"),
        ],
    ),
    (grouping::SOURCE, &[("MEMTUNE_GROUPING_BLOCK", "32")]),
    (grouping::SOURCE, &[("MEMTUNE_GROUPING_BLOCK", "1024")]),
    (
        stencil::SOURCE,
        &[
            stencil::F64,
            ("MEMTUNE_BX", "32"),
            ("MEMTUNE_BY", "4"),
            ("MEMTUNE_BZ", "2"),
        ],
    ),
    (stencil::SOURCE, &[stencil::F64]),
    (
        stencil::SOURCE,
        &[
            ("MEMTUNE_BX", "8"),
            ("MEMTUNE_BY", "8"),
            ("MEMTUNE_BZ", "8"),
        ],
    ),
    (
        stencil::SOURCE,
        &[
            stencil::F64,
            ("MEMTUNE_BX", "64"),
            ("MEMTUNE_BY", "16"),
            ("MEMTUNE_BZ", "1"),
        ],
    ),
    (
        stencil::SOURCE,
        &[
            ("MEMTUNE_BX", "1"),
            ("MEMTUNE_BY", "1"),
            ("MEMTUNE_BZ", "1"),
        ],
    ),
];

fn compile(source: &KernelSource, arch: &str, defines: Defines) -> Result<String, CompileError> {
    compile_ptx(source, arch, defines).map(|ptx| ptx.text)
}

#[test]
fn tuned_defines_compile_for_every_arch() {
    if !memtune_kernels::toolchain::nvrtc_or_skip("tuned_defines_compile_for_every_arch") {
        return;
    }
    for (source, defines) in TUNED {
        for arch in ARCHS {
            let ptx = compile_ptx(source, arch, defines)
                .unwrap_or_else(|e| panic!("{} {defines:?}: {e}", source.name));
            for entry in source.entries {
                // Streaming blocks are whole warps along x; built for others, it is left out.
                let bx = defines.iter().find(|(name, _)| *name == "MEMTUNE_BX");
                if *entry == stencil::STREAMING
                    && bx.is_some_and(|(_, v)| v.parse::<u32>().is_ok_and(|bx| bx % 32 != 0))
                {
                    assert!(!ptx.has_entry(entry), "{defines:?}: {entry} built");
                    continue;
                }
                assert!(
                    ptx.has_entry(entry),
                    "{} {defines:?} {arch}: no {entry}",
                    source.name
                );
            }
        }
    }
}

#[test]
fn impossible_defines_fail_with_the_kernels_message() {
    if !memtune_kernels::toolchain::nvrtc_or_skip(
        "impossible_defines_fail_with_the_kernels_message",
    ) {
        return;
    }
    let cases: &[(KernelSource, Defines, &str)] = &[
        (
            sampling::SOURCE,
            &[("MEMTUNE_SAMPLING_BLOCK", "100")],
            "multiple of 32",
        ),
        (
            sampling::SOURCE,
            &[("MEMTUNE_SAMPLING_UNROLL", "0")],
            "UNROLL must be >= 1",
        ),
        (
            grouping::SOURCE,
            &[("MEMTUNE_GROUPING_BLOCK", "2048")],
            "at most 1024",
        ),
        (
            stencil::SOURCE,
            &[
                ("MEMTUNE_BX", "32"),
                ("MEMTUNE_BY", "32"),
                ("MEMTUNE_BZ", "2"),
            ],
            "1 to 1024 threads",
        ),
        // 1000 threads, but a 3 x 3 x 1002 tile of doubles is 72 KB.
        (
            stencil::SOURCE,
            &[
                stencil::F64,
                ("MEMTUNE_BX", "1"),
                ("MEMTUNE_BY", "1"),
                ("MEMTUNE_BZ", "1000"),
            ],
            "48 KiB",
        ),
    ];
    for (source, defines, message) in cases {
        match compile(source, "sm_90", defines) {
            Err(CompileError::Diagnostics { log, .. }) => {
                assert!(log.contains(message), "{defines:?}: {log}");
            }
            other => panic!("{defines:?}: expected a diagnostic, got {other:?}"),
        }
    }
}

/// The loops of a PTX entry that contain no other loop, as (body text): a loop is the
/// text from a label to a later branch back to it.
fn innermost_loops<'a>(ptx: &'a str, entry: &str) -> Vec<&'a str> {
    let start = ptx
        .find(&format!(".entry {entry}("))
        .unwrap_or_else(|| panic!("no entry {entry}"));
    let body = &ptx[start..];
    let body = &body[..body.find("\n}").unwrap_or(body.len())];
    let mut loops: Vec<(usize, usize)> = Vec::new();
    let mut offset = 0;
    for line in body.lines() {
        let mut tokens = line
            .split_whitespace()
            .skip_while(|t| !t.starts_with("bra"));
        if let Some(target) = tokens.nth(1).map(|t| t.trim_end_matches(';')) {
            if let Some(label) = body[..offset].find(&format!("{target}:")) {
                loops.push((label, offset));
            }
        }
        offset += line.len() + 1;
    }
    loops
        .iter()
        .filter(|&&(s, e)| {
            !loops
                .iter()
                .any(|&(s2, e2)| (s2, e2) != (s, e) && s <= s2 && e2 <= e)
        })
        .map(|&(s, e)| &body[s..e])
        .collect()
}

/// The seed's repeats multiply memory accesses per cell; a compiler that loaded the
/// six neighbours once would turn them into register adds. Some innermost loop of each
/// variant must therefore still load six neighbours from the memory it stages them in.
#[test]
fn stencil_repeats_reread_the_neighbours() {
    if !memtune_kernels::toolchain::nvrtc_or_skip("stencil_repeats_reread_the_neighbours") {
        return;
    }
    for (defines, ty) in [(&[][..], "f32"), (&[stencil::F64][..], "f64")] {
        let ptx = compile(&stencil::SOURCE, "sm_90", defines).unwrap_or_else(|e| panic!("{e}"));
        // Streaming keeps z-1 and z+1 and its row's x neighbours in registers: it re-reads
        // the rows above and below, one 16-byte vector each, from its shared plane.
        let vector = if ty == "f32" { "v4" } else { "v2" };
        for (entry, load, need) in [
            (stencil::PLAIN, format!("ld.global.{ty}"), 6),
            (stencil::STAGED, format!("ld.shared.{ty}"), 6),
            (stencil::STREAMING, format!("ld.shared.{vector}.{ty}"), 2),
        ] {
            let most = innermost_loops(&ptx, entry)
                .iter()
                .map(|body| body.matches(&load).count())
                .max()
                .unwrap_or(0);
            assert!(
                most >= need,
                "{entry} ({ty}): innermost loops hold at most {most} {load}"
            );
        }
    }
}

/// NVRTC's sizes and offsets of the header's structs equal Rust's (bindgen's).
#[test]
fn nvrtc_and_rust_agree_on_the_param_layout() {
    if !memtune_kernels::toolchain::nvrtc_or_skip("nvrtc_and_rust_agree_on_the_param_layout") {
        return;
    }
    let mut checks = vec![format!(
        "static_assert(MEMTUNE_GROUPING_EMPTY_KEY == {EMPTY_KEY}u, \"EMPTY\");"
    )];
    let mut layout = |ty: &str, size: usize, fields: &[(&str, usize)]| {
        checks.push(format!(
            "static_assert(sizeof({ty}) == {size}, \"{ty} size\");"
        ));
        for (field, offset) in fields {
            checks.push(format!(
                "static_assert(MEMTUNE_OFFSETOF({ty}, {field}) == {offset}, \"{ty}.{field}\");"
            ));
        }
    };
    // The size of the Rust struct `$ty` and the offset of each of its `$field`s, which the
    // C struct `$c` must have alike.
    macro_rules! layout {
        ($c:literal, $ty:ty, [$($field:ident),+ $(,)?]) => {
            layout($c, size_of::<$ty>(), &[$((stringify!($field), offset_of!($ty, $field))),+])
        };
    }
    layout!(
        "memtune_sampling_params",
        SamplingParams,
        [
            n_words,
            seed,
            scope_begin,
            scope_end,
            reads_per_thread,
            work
        ]
    );
    layout!(
        "memtune_grouping_params",
        GroupingParams,
        [n_keys, capacity, scope_begin, scope_end, work, pad]
    );
    layout!("memtune_grouping_bucket", GroupingBucket, [key, count]);
    layout!(
        "memtune_grouping_counters",
        GroupingCounters,
        [sentinel_count, spilled, dropped]
    );
    layout!(
        "memtune_stencil_params",
        StencilParams,
        [nx, ny, nz, repeats]
    );
    // NVRTC has neither <cstddef> nor __builtin_offsetof; __INTADDR__ is what the EDG
    // front end's own offsetof expands to, and it is a constant expression.
    let text = format!(
        "#include \"memtune_params.h\"\n\
         #define MEMTUNE_OFFSETOF(T, f) ((unsigned long long)__INTADDR__(&(((T*)0)->f)))\n\
         {}\nextern \"C\" __global__ void memtune_layout_probe() {{}}\n",
        checks.join("\n")
    );
    let source = KernelSource {
        name: "layout_probe.cu",
        // compile_ptx takes 'static sources; one small leak per test run.
        source: Box::leak(text.into_boxed_str()),
        entries: &["memtune_layout_probe"],
    };
    for arch in ARCHS {
        if let Err(e) = compile(&source, arch, &[]) {
            panic!("{e}");
        }
    }
}
