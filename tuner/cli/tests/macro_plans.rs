//! The macros' compile-time plans equal what `cargo tune plan --json` prints for the same
//! profile: the simulated K80 and P100 of `tests/fixtures/`.

mod common;

use common::GROUPING_8GIB;
use memtune::{GroupingConsts, SamplingConsts, StencilConsts};
use serde_json::Value;
use std::process::Command;

const K80_GROUP: GroupingConsts = memtune::grouping_plan!(
    table = 8 GiB,
    table_memory = device,
    input_memory = pinned,
    profile = "../../tests/fixtures/k80.json"
);
const P100_GROUP: GroupingConsts = memtune::grouping_plan!(
    table = 8 GiB,
    table_memory = device,
    input_memory = pinned,
    profile = "../../tests/fixtures/p100.json"
);
const K80_SAMPLE: SamplingConsts = memtune::sampling_plan!(
    region = 4 GiB,
    memory = device,
    profile = "../../tests/fixtures/k80.json"
);
const P100_SAMPLE: SamplingConsts = memtune::sampling_plan!(
    region = 4 GiB,
    memory = device,
    profile = "../../tests/fixtures/p100.json"
);
const P100_STENCIL: StencilConsts = memtune::stencil_plan!(
    dims = 256x256x256,
    dtype = f64,
    repeats = 12,
    profile = "../../tests/fixtures/p100.json"
);

fn cargo_tune_plan(args: &[&str], fixture: &str) -> Value {
    let bin = memtune_tests::cargo_tune_bin(env!("CARGO_BIN_EXE_cargo-tune"));
    let profile = format!(
        "{}/../../tests/fixtures/{fixture}",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(bin)
        .arg("plan")
        .args(args)
        .args(["--profile", &profile, "--json"])
        .output()
        .expect("run cargo-tune");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn grouping_constants_are_what_cargo_tune_plan_prints() {
    for (consts, fixture) in [(K80_GROUP, "k80.json"), (P100_GROUP, "p100.json")] {
        let cli = cargo_tune_plan(&GROUPING_8GIB, fixture);
        assert_eq!(cli["passes"], consts.passes, "{fixture}");
        assert_eq!(cli["scope_bytes"], consts.scope_bytes, "{fixture}");
        assert_eq!(cli["approach"], consts.approach.as_str(), "{fixture}");
        assert_eq!(cli["profile"]["digest"], consts.profile.digest, "{fixture}");
    }
    assert_ne!(
        (K80_GROUP.passes, K80_GROUP.approach),
        (P100_GROUP.passes, P100_GROUP.approach)
    );
}

#[test]
fn sampling_and_stencil_constants_are_what_cargo_tune_plan_prints() {
    let args = ["sampling", "--region", "4GiB", "--memory", "device"];
    for (consts, fixture) in [(K80_SAMPLE, "k80.json"), (P100_SAMPLE, "p100.json")] {
        let cli = cargo_tune_plan(&args, fixture);
        assert_eq!(cli["passes"], consts.passes, "{fixture}");
        assert_eq!(cli["scope_bytes"], consts.scope_bytes, "{fixture}");
        assert_eq!(
            cli["predicted_speedup"], consts.predicted_speedup,
            "{fixture}"
        );
        let reasons: Vec<&str> = cli["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(reasons, consts.reasons, "{fixture}");
    }
    assert_ne!(K80_SAMPLE.predicted_speedup, P100_SAMPLE.predicted_speedup);

    let cli = cargo_tune_plan(
        &[
            "stencil",
            "--dims",
            "256x256x256",
            "--dtype",
            "f64",
            "--repeats",
            "12",
        ],
        "p100.json",
    );
    assert_eq!(cli["block"], serde_json::json!(P100_STENCIL.block));
    assert_eq!(cli["staging"], P100_STENCIL.staging);
}
