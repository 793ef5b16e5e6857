//! With the `bindgen` feature, regenerates the Rust mirror of `include/memtune_params.h`
//! into OUT_DIR; the test `bindings` then checks that the committed `src/params_ffi.rs`
//! equals it (and rewrites it with MEMTUNE_BLESS=1). Default builds use the committed file,
//! so users need no libclang (as prost-build users need no protoc for checked-in code).

#[cfg(feature = "bindgen")]
fn main() {
    const HEADER: &str = "include/memtune_params.h";
    println!("cargo:rerun-if-changed={HEADER}");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bindings = bindgen::Builder::default()
        .header(HEADER)
        .allowlist_item("memtune_.*|MEMTUNE_.*")
        .derive_default(true)
        .derive_eq(true)
        .formatter(bindgen::Formatter::Rustfmt)
        .generate()
        .unwrap_or_else(|e| {
            panic!("bindgen on {HEADER} failed: {e} (is libclang installed? apt-get install -y libclang-dev)")
        });
    bindings
        .write_to_file(out.join("memtune_params.rs"))
        .unwrap_or_else(|e| panic!("writing bindings to {}: {e}", out.display()));
}

#[cfg(not(feature = "bindgen"))]
fn main() {}
