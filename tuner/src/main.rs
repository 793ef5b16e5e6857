//! `cargo-tune`: run as `cargo tune ...` (cargo passes `tune` as the first argument) or as
//! `cargo-tune tune ...` / `cargo-tune ...`.

fn main() {
    std::process::exit(memtune_tuner::cli::run(std::env::args_os()));
}
