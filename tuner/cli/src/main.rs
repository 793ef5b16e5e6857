//! `cargo-tune`: run as `cargo tune ...` (cargo passes `tune` as the first argument) or as
//! `cargo-tune tune ...` / `cargo-tune ...`.

fn main() {
    restore_sigpipe();
    std::process::exit(cargo_tune::cli::run(std::env::args_os()));
}

/// Rust ignores SIGPIPE, so `cargo tune plan ... | head -1` would panic on the closed pipe;
/// like other command-line tools, end quietly instead.
#[cfg(unix)]
fn restore_sigpipe() {
    extern "C" {
        fn signal(signum: i32, handler: usize) -> usize;
    }
    const SIGPIPE: i32 = 13;
    const SIG_DFL: usize = 0;
    // SAFETY: resets one signal's disposition to the default before any thread starts.
    unsafe {
        signal(SIGPIPE, SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
