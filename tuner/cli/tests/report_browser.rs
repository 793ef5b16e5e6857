//! `cargo tune report` of the real H100 profile and its benchmarks, loaded in headless
//! Chromium: the page renders with no console error, shows every section, and its
//! screenshot is saved as `<target>/report-screenshot.png`. Without Chromium the test
//! prints SKIPPED, except on CI (`CI=true`), where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUN: &str = "tests/fixtures/h100/bench-b9cd8c3b";
const SECTIONS: [&str; 9] = [
    "device",
    "tlb",
    "random-access",
    "caches",
    "staging",
    "bandwidth",
    "plans",
    "decisions",
    "bench",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chromium() -> Option<PathBuf> {
    let names = ["chromium", "chromium-browser", "google-chrome"];
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|p| p.is_file())
}

/// Runs Chromium headless on `url` with `args`, killed after a minute; (stdout, stderr).
fn headless(browser: &Path, args: &[&str], url: &str) -> (String, String) {
    let profile = tempfile::tempdir().expect("a fresh user-data-dir");
    let (stdout, stderr) = (profile.path().join("out"), profile.path().join("err"));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("data").display()
        ))
        .args(args)
        .arg(url)
        // Files, not pipes: a page's DOM is larger than a pipe holds while we wait.
        .stdout(Stdio::from(
            std::fs::File::create(&stdout).expect("stdout file"),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(&stderr).expect("stderr file"),
        ))
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(90) {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (read(&stdout), read(&stderr))
}

/// Records script errors, failed loads and `console.error` into the DOM for `--dump-dom`.
const RECORDER: &str = "<script>window.__errors=[];\
addEventListener('error',function(e){__errors.push(String(e.message||(e.target&&(e.target.src||e.target.href))||'error'))},true);\
var __ce=console.error;console.error=function(){__errors.push([].join.call(arguments,' '));__ce.apply(console,arguments)};\
addEventListener('load',function(){document.body.setAttribute('data-errors',JSON.stringify(__errors));\
document.body.setAttribute('data-sections',String(document.querySelectorAll('section').length));\
document.body.setAttribute('data-svgs',String(document.querySelectorAll('svg').length))});</script>";

#[test]
fn the_report_renders_in_chromium_without_console_errors() {
    let run = repo().join(RUN);
    // The run's profile is a fixture (tests read it).
    let profile = repo().join("tests/fixtures/h100/GPU-b9cd8c3b-46b0-8568-1f4e-2b6244305dff.json");
    let work = tempfile::tempdir().expect("temp dir");
    let html = work.path().join("report.html");
    let cache = work.path().join("cache");
    let out = Command::new(memtune_tests::cargo_tune_bin(env!(
        "CARGO_BIN_EXE_cargo-tune"
    )))
    .current_dir(work.path())
    .env("MEMTUNE_CACHE_DIR", &cache)
    .arg("report")
    .arg("--path")
    .arg(&profile)
    .arg("--bench")
    .arg(&run)
    .arg("-o")
    .arg(&html)
    .output()
    .expect("cargo-tune runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).expect("the report");
    for id in SECTIONS {
        assert!(
            page.contains(&format!("<section id=\"{id}\">")),
            "no section {id}"
        );
    }
    // Self-contained: nothing to fetch, no script.
    for bad in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(!page.contains(bad), "the page holds `{bad}`");
    }
    let outside = page.replace("http://www.w3.org/2000/svg", "");
    assert!(!outside.contains("http://") && !outside.contains("https://"));
    assert!(!page.contains("0.0 G/s"), "a rate printed as 0.0 G/s");

    let Some(browser) = chromium() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium not found: CI must install it (.ci/run)"
        );
        println!(
            "SKIPPED the_report_renders_in_chromium_without_console_errors: chromium not found"
        );
        return;
    };
    let checked = work.path().join("checked.html");
    let instrumented = page.replacen("<head>", &format!("<head>{RECORDER}"), 1);
    std::fs::write(&checked, instrumented).expect("instrumented copy");
    let url = format!("file://{}", checked.display());
    let (dom, log) = headless(
        &browser,
        &["--dump-dom", "--virtual-time-budget=5000"],
        &url,
    );
    assert!(
        dom.contains("data-errors=\"[]\""),
        "console errors: {}\n{log}",
        {
            dom.split("data-errors=")
                .nth(1)
                .unwrap_or("(none recorded)")
                .chars()
                .take(400)
                .collect::<String>()
        }
    );
    assert!(
        dom.contains(&format!("data-sections=\"{}\"", SECTIONS.len())),
        "sections missing"
    );
    let svgs: usize = dom
        .split("data-svgs=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(svgs >= 12, "only {svgs} plots rendered");
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("rror")))
        .collect();
    assert!(console.is_empty(), "console errors: {console:?}");

    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf);
    let shot = target
        .unwrap_or_else(|| work.path().to_path_buf())
        .join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    let url = format!("file://{}", html.display());
    let (_, log) = headless(
        &browser,
        &[&arg, "--window-size=1280,4000", "--hide-scrollbars"],
        &url,
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}): {log}"));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    println!("screenshot: {}", shot.display());
}
