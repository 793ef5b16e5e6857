//! Every error of the macros, pinned by trybuild (`tests/ui/**/*.stderr`; regenerate with
//! `TRYBUILD=overwrite cargo test -p memtune-tests --test macros_ui` and review the diff).
//!
//! The lookup reads the environment, so the cases run in groups, one environment each:
//! `ui/errors/` with `MEMTUNE_PROFILE` at the simulated K80, then each `ui/env/` case with
//! the variables it is about. This file has one test, so setting variables is race-free.

use std::path::{Path, PathBuf};

const VARS: [&str; 4] = [
    "MEMTUNE_PROFILE",
    "MEMTUNE_OFFLINE",
    "MEMTUNE_CACHE_DIR",
    "MEMTUNE_DEVICE",
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cases` (a glob under `tests/`) with exactly `vars` of the lookup's variables set,
/// and the user cache empty.
fn compile_fail(cases: &str, vars: &[(&str, &Path)], empty_cache: &Path) {
    for var in VARS {
        std::env::remove_var(var);
    }
    std::env::set_var("MEMTUNE_CACHE_DIR", empty_cache);
    for (var, value) in vars {
        std::env::set_var(var, value);
    }
    // Dropping the TestCases builds and checks them.
    trybuild::TestCases::new().compile_fail(cases);
}

#[test]
fn every_macro_error_is_one_compile_error_naming_the_fix() {
    let cache = tempfile::tempdir().expect("temp dir");
    let fixture = |name: &str| dir().join("ui/fixtures").join(name);

    // `embedded_profiles!(dir = "bad-store")` reads beside the trybuild project's manifest:
    // put the invalid store there.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is <target>/tmp");
    let store = target.join("tests/trybuild/memtune-tests/bad-store");
    std::fs::create_dir_all(&store).expect("create the bad store");
    for entry in std::fs::read_dir(dir().join("ui/bad_store")).expect("ui/bad_store") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, store.join(path.file_name().expect("a file"))).expect("copy");
    }

    let k80 = dir().join("fixtures/k80.json");
    compile_fail("ui/errors/*.rs", &[("MEMTUNE_PROFILE", &k80)], cache.path());
    let env_cases: [(&str, &str, PathBuf); 6] = [
        ("bad_digest", "MEMTUNE_PROFILE", fixture("bad_digest.json")),
        (
            "wrong_schema",
            "MEMTUNE_PROFILE",
            fixture("wrong_schema.json"),
        ),
        ("not_json", "MEMTUNE_PROFILE", fixture("not_json.json")),
        ("missing_file", "MEMTUNE_PROFILE", fixture("missing.json")),
        ("offline_empty", "MEMTUNE_OFFLINE", PathBuf::from("1")),
        ("bad_device", "MEMTUNE_DEVICE", PathBuf::from("GPU-0")),
    ];
    for (case, var, value) in &env_cases {
        compile_fail(&format!("ui/env/{case}.rs"), &[(var, value)], cache.path());
    }
    compile_fail("ui/env/builtin_default.rs", &[], cache.path());
}
