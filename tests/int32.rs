//! `alpinist verify --int32`: executable integer arithmetic proved free of 32-bit overflow
//! (E0623) and of negative `/` `%` operands (E0624). Every file of `tests/data/int32/` fails
//! under `--int32` where its `//:: expect <kind> <line>:<col>` header says, and verifies
//! without it (so the 32-bit check is what catches it); every file of `tests/data/int32_ok/`
//! and every prefix-sum example verifies under `--int32`.

use crate::common::{expectation, pvl_files, relative, run, stderr, SCAN_KERNELS};
use crate::verify::{unverified, verify_json, verify_json_with};

#[test]
fn broken_variants_fail_the_32_bit_check_where_expected() {
    let files = pvl_files("tests/data/int32");
    assert!(files.len() >= 6, "tests/data/int32/ went missing");
    let mut problems = Vec::new();
    for path in &files {
        let file = relative(path);
        let source = std::fs::read_to_string(path).expect("readable test data");
        let Some(expect) = expectation(&source) else {
            problems.push(format!("{file}: no `//:: expect` header"));
            continue;
        };
        let (code, doc, err) = verify_json_with(&file, &["--int32"]);
        let found = unverified(&doc);
        let hit = found.iter().any(|(kind, line, column, status)| {
            *kind == expect.kind
                && *line == expect.line as u64
                && *column == expect.column as u64
                && status == "failed"
        });
        if code != Some(1) || !hit {
            problems.push(format!(
                "{file}: exit {code:?}, expected {} failed at {}:{}; unverified: {found:?}\n{err}",
                expect.kind, expect.line, expect.column
            ));
        }
        let (code, doc, err) = verify_json(&file);
        if code != Some(0) {
            problems.push(format!(
                "{file}: should verify without --int32, exit {code:?}: {:?}\n{err}",
                unverified(&doc)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn bounded_programs_and_the_scan_examples_pass_the_32_bit_check() {
    let mut files: Vec<String> = pvl_files("tests/data/int32_ok")
        .iter()
        .map(|p| relative(p))
        .collect();
    assert!(!files.is_empty(), "tests/data/int32_ok/ went missing");
    for scan in SCAN_KERNELS {
        files.push(format!("examples/prefix-sum/{scan}.pvl"));
    }
    let mut problems = Vec::new();
    for file in &files {
        let (code, doc, err) = verify_json_with(file, &["--int32"]);
        if code != Some(0) {
            problems.push(format!(
                "{file}: exit {code:?}; unverified: {:?}\n{err}",
                unverified(&doc)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_overflow_names_the_operation_the_place_and_z3_values() {
    let out = run(&[
        "verify",
        "--int32",
        "tests/data/int32/doubling_unbounded.pvl",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("E0623"), "{err}");
    assert!(err.contains("`*` may overflow 32 bits"), "{err}");
    assert!(err.contains("doubling_unbounded.pvl:18:18"), "{err}");
    assert!(err.contains("a counterexample: N = "), "{err}");
    assert!(err.contains("offset = "), "{err}");
}

#[test]
fn a_scan_example_without_its_bound_fails_the_32_bit_check() {
    // Sklansky's `v + x[tid]` is the scan operator (OpenCL `OP`) and exempt, its index and
    // stride arithmetic is not: without `N <= 2^28` the stride `offset * 2` is not proved.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let source = std::fs::read_to_string("examples/prefix-sum/sklansky.pvl").expect("example");
    let bound = "  requires N <= 268435456;\n";
    assert!(source.contains(bound), "sklansky: the bound moved");
    let unbounded = source.replace(bound, "");
    let path = dir.path().join("sklansky_unbounded.pvl");
    std::fs::write(&path, unbounded).expect("writable");
    let (code, doc, err) = verify_json_with(path.to_str().expect("UTF-8"), &["--int32"]);
    assert_ne!(code, Some(0), "without its bound: {err}");
    assert!(
        unverified(&doc)
            .iter()
            .any(|(kind, _, _, _)| kind == "int32_overflow"),
        "{:?}",
        unverified(&doc)
    );
}
