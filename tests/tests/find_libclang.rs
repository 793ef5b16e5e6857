//! scripts/find-libclang.sh finds libclang by the names bindgen's loader accepts, and never
//! takes libclang-cpp (another library, on stock Debian without libclang) for it.

use std::path::Path;
use std::process::Command;

fn find_in(dir: &Path) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/find-libclang.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(dir)
        .output()
        .expect("run bash");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
    )
}

fn dir_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in files {
        std::fs::write(dir.path().join(f), b"").expect("write");
    }
    dir
}

#[test]
fn libclang_cpp_alone_is_not_libclang() {
    let dir = dir_with(&["libclang-cpp.so.14", "libclang-cpp.so", "libLLVM-14.so.1"]);
    assert_eq!(find_in(dir.path()), (false, String::new()));
}

#[test]
fn every_libclang_name_bindgen_loads_is_found() {
    for name in [
        "libclang.so",
        "libclang-14.so",
        "libclang.so.1",
        "libclang-14.so.1",
    ] {
        let dir = dir_with(&["libclang-cpp.so.14", name]);
        let (found, path) = find_in(dir.path());
        assert!(found, "{name} not found");
        assert!(path.ends_with(name), "{name}: printed {path}");
    }
}

#[test]
fn a_missing_folder_is_not_found() {
    let dir = dir_with(&[]);
    assert!(!find_in(&dir.path().join("nope")).0);
}
