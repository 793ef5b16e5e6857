//! The committed `src/params_ffi.rs` must be what bindgen makes of the header today.
//! Run with `--features bindgen` (needs libclang); `MEMTUNE_BLESS=1` rewrites the file.

#[cfg(feature = "bindgen")]
#[test]
fn committed_bindings_match_the_header() {
    let fresh = include_str!(concat!(env!("OUT_DIR"), "/memtune_params.rs"));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/params_ffi.rs");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if std::env::var("MEMTUNE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(path, fresh).expect("write src/params_ffi.rs");
        return;
    }
    assert!(
        committed == fresh,
        "src/params_ffi.rs is stale: include/memtune_params.h changed. Regenerate with \
         MEMTUNE_BLESS=1 cargo test -p memtune-kernels --features bindgen --test bindings"
    );
}

#[cfg(not(feature = "bindgen"))]
#[test]
fn committed_bindings_match_the_header() {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED committed_bindings_match_the_header: needs --features bindgen (and libclang); .ci/run runs it"
    );
}
