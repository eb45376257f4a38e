//! The OpenCL back end end to end (feature `opencl`), on whatever platform the machine has
//! (pocl in CI). Without a platform these tests skip — unless `ALPINIST_REQUIRE_OPENCL=1`
//! (set by `.ci/run`), where they fail.
//!
//! Today no scan-test verdict is "pass": the race-freedom half needs the checker, which has
//! not landed, so a kernel that passes the interval test everywhere exits 3 (inconclusive).

use serde_json::Value;

use alpinist::opencl::harness::Harness;
use alpinist::opencl::interval::{self, combine, pack, IDENTITY, TOP};
use alpinist::opencl::platform;

use crate::common::{alpinist, expectation, pvl_files, relative, run, stderr, stdout};

/// True when an OpenCL platform is there. Without one: skip (false), or fail when
/// `ALPINIST_REQUIRE_OPENCL=1`.
fn platform_available() -> bool {
    let output = run(&["devices"]);
    if output.status.code() == Some(0) {
        return true;
    }
    let why = stderr(&output);
    assert!(
        std::env::var("ALPINIST_REQUIRE_OPENCL").as_deref() != Ok("1"),
        "ALPINIST_REQUIRE_OPENCL=1 but no OpenCL platform: {why}"
    );
    eprintln!("skipped: no OpenCL platform ({why})");
    false
}

/// Runs `scan-test --json` and returns the exit code and the document.
fn scan_test(file: &str, kind: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let mut args = vec!["scan-test", file, "--kind", kind, "--json"];
    args.extend_from_slice(extra);
    let output = run(&args);
    let document = serde_json::from_str(&stdout(&output)).unwrap_or_else(|e| {
        panic!(
            "{args:?}: no JSON on stdout ({e})\nstdout: {}\nstderr: {}",
            stdout(&output),
            stderr(&output)
        )
    });
    (output.status.code(), document)
}

fn results(document: &Value) -> &Vec<Value> {
    document["results"].as_array().expect("results")
}

/// Asserts the kernel passed the interval test, the integer run and a trusted self-check at
/// every requested n, and that the verdict is inconclusive only for want of the checker.
fn assert_interval_pass(file: &str, kind: &str, range: &str, sizes: &[u64]) {
    let (code, document) = scan_test(file, kind, &["--n-range", range]);
    assert_eq!(code, Some(3), "{file}: {document:#}");
    assert_eq!(document["schema_version"], 1);
    assert_eq!(document["exit_code"], 3);
    assert_eq!(document["verdict"], "inconclusive", "{file}");
    assert_eq!(document["race_freedom"]["status"], "not_checked", "{file}");
    assert_eq!(document["source_hash"].as_str().map(str::len), Some(16));
    let tested: Vec<u64> = results(&document)
        .iter()
        .filter(|r| r["status"] == "tested")
        .map(|r| r["n"].as_u64().unwrap())
        .collect();
    assert_eq!(tested, sizes, "{file}: {document:#}");
    for r in results(&document) {
        if r["status"] != "tested" {
            continue;
        }
        let n = r["n"].as_u64().unwrap();
        let (groups, block) = (r["groups"].as_u64().unwrap(), r["block"].as_u64().unwrap());
        assert_eq!(groups * block, n, "{file}: {r:#}");
        if n >= 65536 {
            assert!(groups > 1, "{file}: 2^16 elements in one work-group? {r:#}");
        }
        assert_eq!(r["interval"]["passed"], true, "{file}: {r:#}");
        assert_eq!(r["interval"]["bad_cells"], 0, "{file}: {r:#}");
        assert_eq!(r["integer"]["passed"], true, "{file}: {r:#}");
        if r["self_check"]["applicable"] == true {
            assert_eq!(r["self_check"]["swapped_failed"], true, "{file}: {r:#}");
        }
    }
}

#[test]
fn the_four_classic_scans_pass_the_interval_test_at_several_sizes() {
    if !platform_available() {
        return;
    }
    let all = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
    assert_interval_pass(
        "examples/prefix-sum/kogge_stone.pvl",
        "inclusive",
        "1..1024",
        &all,
    );
    assert_interval_pass(
        "examples/prefix-sum/sklansky.pvl",
        "inclusive",
        "1..1024",
        &all,
    );
    // N / 2 threads and the N >= 2 precondition: n = 1 launches nothing and is skipped.
    assert_interval_pass(
        "examples/prefix-sum/brent_kung.pvl",
        "inclusive",
        "1..2048",
        &[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
    );
    assert_interval_pass(
        "examples/prefix-sum/blelloch.pvl",
        "exclusive",
        "2..2048",
        &[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
    );
    // Beyond one work-group: reduce-then-scan with the generated kernel scanning each block.
    for (file, kind) in [
        ("examples/prefix-sum/kogge_stone.pvl", "inclusive"),
        ("examples/prefix-sum/sklansky.pvl", "inclusive"),
        ("examples/prefix-sum/brent_kung.pvl", "inclusive"),
        ("examples/prefix-sum/blelloch.pvl", "exclusive"),
    ] {
        assert_interval_pass(file, kind, "32768..65536", &[32768, 65536]);
    }
    // The fixed-size variant stages through __local memory with two __global arrays.
    assert_interval_pass(
        "examples/prefix-sum/kogge_stone_16.pvl",
        "inclusive",
        "16..16",
        &[16],
    );
}

#[test]
fn broken_scans_fail_across_work_groups_too() {
    if !platform_available() {
        return;
    }
    for (file, kind) in [
        (
            "tests/data/scan/swapped_operands_kogge_stone.pvl",
            "inclusive",
        ),
        (
            "tests/data/scan/off_by_one_bound_kogge_stone.pvl",
            "inclusive",
        ),
        (
            "tests/data/scan/missing_root_clear_blelloch.pvl",
            "exclusive",
        ),
    ] {
        let (code, document) = scan_test(file, kind, &["--n", "65536"]);
        assert_eq!(code, Some(1), "{file}: {document:#}");
        let r = &results(&document)[0];
        assert!(r["groups"].as_u64() > Some(1), "{file}: {r:#}");
        assert_eq!(r["interval"]["passed"], false, "{file}");
    }
}

#[test]
fn a_scan_run_with_the_wrong_kind_fails() {
    if !platform_available() {
        return;
    }
    let (code, document) = scan_test(
        "examples/prefix-sum/blelloch.pvl",
        "inclusive",
        &["--n", "8"],
    );
    assert_eq!(code, Some(1), "{document:#}");
    assert_eq!(document["verdict"], "fail");
    assert_eq!(results(&document)[0]["interval"]["first_bad"]["index"], 0);
}

/// The header of a broken scan: what must catch it, its kind, the sizes to run.
struct Broken {
    file: String,
    expect: String,
    kind: String,
    sizes: Vec<String>,
}

fn broken_scans() -> Vec<Broken> {
    pvl_files("tests/data/scan")
        .iter()
        .map(|path| {
            let file = relative(path);
            let source = std::fs::read_to_string(path).unwrap();
            let header = |key: &str| {
                source
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("//:: {key} ")))
                    .map(str::to_string)
            };
            Broken {
                expect: expectation(&source)
                    .unwrap_or_else(|| panic!("{file}: no `//:: expect` header"))
                    .kind,
                kind: header("kind").unwrap_or_else(|| panic!("{file}: no `//:: kind`")),
                sizes: header("sizes")
                    .unwrap_or_else(|| "4 8 16 32".into())
                    .split_whitespace()
                    .map(str::to_string)
                    .collect(),
                file,
            }
        })
        .collect()
}

#[test]
fn broken_scans_are_caught_and_the_report_says_by_what() {
    if !platform_available() {
        return;
    }
    let broken = broken_scans();
    let by_interval = broken
        .iter()
        .filter(|b| b.expect == "interval-fail")
        .count();
    assert!(
        by_interval >= 6,
        "only {by_interval} broken scans for the interval test"
    );
    for b in &broken {
        match b.expect.as_str() {
            "interval-fail" => {
                for n in &b.sizes {
                    let (code, document) = scan_test(&b.file, &b.kind, &["--n", n]);
                    assert_eq!(code, Some(1), "{} at n = {n}: {document:#}", b.file);
                    assert_eq!(document["verdict"], "fail", "{}", b.file);
                    let r = &results(&document)[0];
                    assert_eq!(r["interval"]["passed"], false, "{} at n = {n}", b.file);
                    assert!(r["interval"]["bad_cells"].as_u64() > Some(0));
                }
            }
            "race" => {
                // A data race is the checker's to catch: the interval test alone is not
                // required to see it, the checker must, and the verdict is never a pass.
                for n in &b.sizes {
                    let (code, document) = scan_test(&b.file, &b.kind, &["--n", n]);
                    assert_ne!(code, Some(0), "{} at n = {n}", b.file);
                    assert_ne!(document["verdict"], "pass", "{}", b.file);
                    assert_eq!(
                        document["race_freedom"]["status"], "not_proved",
                        "{} at n = {n}: the checker must reject the race",
                        b.file
                    );
                    eprintln!(
                        "{} at n = {n}: interval test {}, race found by the checker",
                        b.file,
                        if results(&document)[0]["interval"]["passed"] == true {
                            "passed"
                        } else {
                            "failed"
                        }
                    );
                }
            }
            code if code.starts_with("E08") => {
                let output = run(&["scan-test", &b.file, "--kind", &b.kind]);
                assert_eq!(output.status.code(), Some(2), "{}", b.file);
                let err = stderr(&output);
                assert!(err.contains(code), "{}: {err}", b.file);
                let position = expectation(&std::fs::read_to_string(&b.file).unwrap()).unwrap();
                let at = format!("{}:{}:{}", b.file, position.line, position.column);
                assert!(err.contains(&at), "{}: expected {at}\n{err}", b.file);
            }
            other => panic!("{}: unknown expectation `{other}`", b.file),
        }
    }
}

#[test]
fn voigtlaender_baseline_runs_its_set_and_can_fail() {
    if !platform_available() {
        return;
    }
    for n in [8u64, 32] {
        let (code, document) = scan_test(
            "examples/prefix-sum/kogge_stone.pvl",
            "inclusive",
            &["--n", &n.to_string(), "--baseline", "voigtlaender"],
        );
        assert_eq!(code, Some(3));
        let baseline = &results(&document)[0]["baseline"];
        assert_eq!(baseline["name"], "voigtlaender");
        assert_eq!(baseline["runs"].as_u64(), Some(n * (n + 1) / 2 + n - 1));
        assert_eq!(baseline["failed_runs"], 0, "{baseline:#}");
    }
    // Swapped operands: saturating addition commutes, "last non-zero wins" does not.
    let (_, document) = scan_test(
        "tests/data/scan/swapped_operands_kogge_stone.pvl",
        "inclusive",
        &["--n", "8", "--baseline", "voigtlaender"],
    );
    let baseline = &results(&document)[0]["baseline"];
    assert!(baseline["failed_runs"].as_u64() > Some(0), "{baseline:#}");
}

#[test]
fn random_baseline_runs_and_can_fail() {
    if !platform_available() {
        return;
    }
    let (_, document) = scan_test(
        "examples/prefix-sum/sklansky.pvl",
        "inclusive",
        &["--n", "32", "--baseline", "random"],
    );
    let baseline = &results(&document)[0]["baseline"];
    assert_eq!(baseline["name"], "random");
    assert_eq!(baseline["runs"], 64);
    assert_eq!(baseline["failed_runs"], 0);
    let (_, document) = scan_test(
        "tests/data/scan/wrong_offset_sklansky.pvl",
        "inclusive",
        &["--n", "32", "--baseline", "random"],
    );
    assert!(results(&document)[0]["baseline"]["failed_runs"].as_u64() > Some(0));
}

#[test]
fn the_device_operator_is_the_host_operator() {
    if !platform_available() {
        return;
    }
    let device = platform::select(None).unwrap().remove(0);
    let harness = Harness::new(&device).unwrap();
    let words = [
        IDENTITY,
        TOP,
        interval::input(0),
        interval::input(1),
        interval::input(2),
        pack(0, 1),
        pack(1, 2),
        pack(2, 3),
        pack(0, 3),
        pack(4, 9),
        pack(0, u32::MAX - 1),
        interval::input(u32::MAX),
    ];
    let pairs: Vec<(u64, u64)> = words
        .iter()
        .flat_map(|&a| words.iter().map(move |&b| (a, b)))
        .collect();
    let device_results = harness.device_interval_op(&pairs).unwrap();
    for (&(a, b), &got) in pairs.iter().zip(&device_results) {
        assert_eq!(
            got,
            combine(a, b),
            "{} ⊕ {}",
            interval::show(a),
            interval::show(b)
        );
    }
}

#[test]
fn without_a_platform_the_commands_exit_4_with_a_message() {
    // An empty vendor directory: the ICD loader finds no platform (no GPU or pocl needed).
    let empty = tempfile::tempdir().unwrap();
    for args in [
        vec!["devices"],
        vec!["scan-test", "examples/prefix-sum/sklansky.pvl", "--n", "4"],
    ] {
        let output = alpinist()
            .args(&args)
            .env("OCL_ICD_VENDORS", empty.path())
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains("no OpenCL platform"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn an_unknown_platform_is_exit_4_naming_the_platforms_there_are() {
    if !platform_available() {
        return;
    }
    let output = run(&[
        "scan-test",
        "examples/prefix-sum/sklansky.pvl",
        "--n",
        "4",
        "--platform",
        "no-such-platform",
    ]);
    assert_eq!(output.status.code(), Some(4));
    assert!(stderr(&output).contains("no OpenCL platform is named `no-such-platform`"));
    let output = run(&[
        "scan-test",
        "examples/prefix-sum/sklansky.pvl",
        "--n",
        "4",
        "--platform",
        "all",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
}

#[test]
fn usage_errors_of_scan_test_exit_2() {
    for args in [
        vec![
            "scan-test",
            "examples/prefix-sum/sklansky.pvl",
            "--n-range",
            "5..7",
        ],
        vec!["scan-test", "examples/prefix-sum/sklansky.pvl", "--n", "0"],
        vec![
            "scan-test",
            "examples/prefix-sum/sklansky.pvl",
            "--n",
            "2147483648",
        ],
        vec![
            "scan-test",
            "examples/prefix-sum/sklansky.pvl",
            "--n",
            "4",
            "--n-range",
            "2..8",
        ],
    ] {
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
    }
}
