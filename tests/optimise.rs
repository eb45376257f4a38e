//! End-to-end tests of `alpinist optimise` (loop unrolling): every example in
//! `examples/loop_unroll/` is unrolled and reverifies (exit 0); every input in
//! `tests/data/unroll/` is refused (exit 1) with its reason; the unrolled programs compute
//! what the originals compute (the reference interpreter, on a few inputs and on random loops
//! within the template, `while` and `for`: proptest).
use alpinist::syntax;
use alpinist::transform::{Optimisation, Refusal};
use proptest::prelude::*;

use crate::common::{
    apply_loop_gpuopts, assert_loop_optimisation_keeps_meaning, assert_same_meaning,
    optimise_applies, optimise_to_file, pvl_files, relative, run, stderr, stdout, template_loop,
    Runs,
};

#[test]
fn every_loop_unroll_example_optimises_and_reverifies() {
    let files = pvl_files("examples/loop_unroll");
    assert!(files.len() >= 3, "the loop_unroll examples are missing");
    for file in files {
        optimise_applies(&relative(&file), "loop_unroll", "unrolled the loop over");
    }
}

#[test]
fn unroll_flag_with_loop_and_output_file() {
    let (_, text) = optimise_to_file(
        &["--unroll", "2", "--loop", "i"],
        "examples/loop_unroll/multiply.pvl",
    );
    assert!(text.contains("loop_invariant 2 <= i && i <= M;"), "{text}");
    assert_eq!(text.matches("acc = acc + tid;").count(), 3, "{text}");
}

#[test]
fn refused_inputs_exit_1_with_their_reason() {
    let cases = [
        (
            "tests/data/unroll/bound_too_small.pvl",
            "E0905",
            "cannot show that the loop runs at least 3 times: the guard `i < n` may be false on iteration 3, e.g. when i = 0 and n = 2",
        ),
        (
            "tests/data/unroll/writes_guard_variable.pvl",
            "E0904",
            "the loop body assigns `n`, a variable of the guard",
        ),
        (
            "tests/data/unroll/non_constant_step.pvl",
            "E0903",
            "the step is not a constant",
        ),
        (
            "tests/data/unroll/conditional_update.pvl",
            "E0903",
            "a conditional or nested assignment",
        ),
        (
            "tests/data/unroll/for_bound_too_small.pvl",
            "E0905",
            "cannot show that the loop runs at least 2 times: the guard `i < n` may be false on iteration 2, e.g. when i = 0 and n = 1",
        ),
    ];
    assert_eq!(cases.len(), pvl_files("tests/data/unroll").len());
    for (file, code, message) in cases {
        for extra in [&[][..], &["--no-verify"][..]] {
            let mut args = vec!["optimise"];
            args.extend_from_slice(extra);
            args.push(file);
            crate::common::assert_refused(&args, code, message);
        }
    }
}

/// An applicability probe never succeeds vacuously: with `--no-verify`, a probe whose prefix
/// fails (a field written without permission) or whose statement is unreachable is refused
/// as "cannot check" (exit 1) by every optimisation — unrolling the 3-iteration loop by 6
/// used to apply. The twin: with the permission, unrolling by 3 applies.
#[test]
fn applicability_probes_never_succeed_vacuously() {
    let cases = [
        (
            "tests/data/vacuous/unroll_after_failing_write.pvl",
            "E0906",
            "the code before it does not verify: `m` fails there",
        ),
        (
            "tests/data/vacuous/unroll_unreachable.pvl",
            "E0906",
            "it is unreachable: the facts before it contradict each other",
        ),
        (
            "tests/data/vacuous/merge_after_failing_write.pvl",
            "E0924",
            "the code before it does not verify: `m` fails there",
        ),
        (
            "tests/data/vacuous/prefetch_after_failing_write.pvl",
            "E0947",
            "the method does not verify (there may be insufficient permission to write this",
        ),
        (
            "tests/data/vacuous/prefetch_unreachable.pvl",
            "E0947",
            "every access of the cell is unreachable",
        ),
        (
            "tests/data/vacuous/linearise_unreachable.pvl",
            "E0957",
            "the code before it does not verify: `zero` fails there (the precondition is unsatisfiable",
        ),
        (
            "tests/data/vacuous/tile_unreachable.pvl",
            "E0935",
            "the code before it does not verify: `zero` fails there (the precondition is unsatisfiable",
        ),
    ];
    assert_eq!(cases.len(), pvl_files("tests/data/vacuous").len());
    for (file, code, message) in cases {
        crate::common::assert_refused(&["optimise", "--no-verify", file], code, message);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixed.pvl");
    let text = std::fs::read_to_string(
        crate::common::repo_root().join("tests/data/vacuous/unroll_after_failing_write.pvl"),
    )
    .unwrap()
    .replace("  void m() {", "  context Perm(f, write);\n  void m() {")
    .replace("loop_unroll i 6", "loop_unroll i 3");
    std::fs::write(&path, text).unwrap();
    let out = run(&["optimise", "--no-verify", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unrolled the loop over `i` by 3"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_input_that_does_not_verify_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong.pvl");
    let text = std::fs::read_to_string(
        crate::common::repo_root().join("examples/loop_unroll/multiply.pvl"),
    )
    .unwrap()
    .replace(
        "ensures a[tid] == tid * M;",
        "ensures a[tid] == tid * M + 1;",
    );
    std::fs::write(&path, text).unwrap();
    let out = run(&["optimise", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not verify"), "{}", stderr(&out));

    let out = run(&["optimise", "--json", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("a JSON report");
    assert_eq!(doc["exit"], 1);
    assert_eq!(doc["applied"], serde_json::json!([]));
    assert_eq!(
        doc["refused"]["message"],
        "the input does not verify (failed)"
    );
    assert_eq!(
        doc["verification_before"]["methods"][0]["outcome"],
        "failed"
    );
}

/// A broken input on which libz3 4.8.12 crashes building a model (with two unfoldings of
/// `seg` per application, its checker run segfaults under model-based quantifier
/// instantiation) is still a refused input, exit 1: the optimisation runs again without it,
/// never reports an internal error (exit 4) for the user's mistake.
#[test]
fn an_input_libz3_crashes_on_is_refused_not_an_internal_error() {
    let file = "tests/data/scan/inclusive_exclusive_mixup_kogge_stone_16.pvl";
    let out = run(&["optimise", "--no-cache", "--unroll", "2", file]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not verify"), "{}", stderr(&out));
}

/// An input Z3 cannot decide but a concrete run refutes (a Blelloch scan without the barrier
/// between its sweeps: `tests/data/verify/blelloch_removed_barrier.pvl`, marked `concrete`)
/// is a failed input, exit 1, as under `verify` — not inconclusive.
#[test]
fn an_input_a_concrete_run_refutes_is_not_optimised() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("removed_barrier.pvl");
    let text = std::fs::read_to_string(
        crate::common::repo_root().join("tests/data/verify/blelloch_removed_barrier.pvl"),
    )
    .unwrap()
    .replacen(
        "      int offset = 1;\n",
        "      int offset = 1;\n      gpuopt loop_unroll offset 2;\n",
        1,
    );
    assert!(text.contains("gpuopt"), "the test file changed shape");
    std::fs::write(&path, text).unwrap();
    let out = run(&["optimise", "--no-cache", &path.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the input does not verify (failed)"),
        "{}",
        stderr(&out)
    );
}

/// `--json` users get a document on a refusal too: code, message, help and position.
#[test]
fn a_refusal_with_json_is_a_json_document() {
    let out = run(&[
        "optimise",
        "--json",
        "tests/data/unroll/bound_too_small.pvl",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("a JSON report");
    assert_eq!(doc["exit"], 1);
    assert_eq!(doc["refused"]["code"], "E0905");
    assert_eq!(doc["refused"]["span"]["line"], 14);
    assert_eq!(doc["refused"]["span"]["column"], 7);
    assert!(
        doc["refused"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("runs at least 3 times")),
        "{doc}"
    );
    assert_eq!(
        doc["verification_before"]["methods"][0]["outcome"],
        "verified"
    );
    assert!(doc.get("pvl").is_none(), "no program on a refusal: {doc}");
}

#[test]
fn unrolled_examples_compute_what_the_originals_compute() {
    let read = |name: &str| {
        let text = std::fs::read_to_string(crate::common::repo_root().join(name)).unwrap();
        syntax::parse(&text).unwrap().program
    };
    // (file, method, the int parameters before the arrays for each run, the arrays)
    type Case = (&'static str, &'static str, Runs);
    let cases: Vec<Case> = vec![
        (
            "examples/loop_unroll/multiply.pvl",
            "table",
            vec![
                (vec![4, 2], vec![vec![0; 4]]),
                (vec![5, 7], vec![vec![9; 5]]),
                (vec![3, 3], vec![vec![-1, 2, 5]]),
            ],
        ),
        (
            "examples/loop_unroll/repeated_add.pvl",
            "repeat",
            vec![
                (vec![3, 3], vec![vec![1, 2, 3], vec![10, 20, 30]]),
                (vec![4, 6], vec![vec![-2, 0, 5, 7], vec![1, 1, 1, 1]]),
            ],
        ),
        (
            "examples/loop_unroll/countdown.pvl",
            "steps",
            vec![
                (vec![2, 6], vec![vec![0, 0]]),
                (vec![3, 11], vec![vec![1, 2, 3]]),
            ],
        ),
        (
            "examples/loop_unroll/halving.pvl",
            "halvings",
            vec![
                (vec![2, 4], vec![vec![0, 0]]),
                (vec![1, 1000], vec![vec![7]]),
            ],
        ),
        (
            "examples/loop_unroll/for_prefix_copy.pvl",
            "copy",
            vec![
                (vec![3, 2], vec![vec![4, 5, 6], vec![0, 0, 0]]),
                (vec![4, 4], vec![vec![-1, 2, -3, 4], vec![9, 9, 9, 9]]),
            ],
        ),
        (
            "examples/loop_unroll/doubling.pvl",
            "ceilPow2",
            vec![
                (vec![2, 3], vec![vec![0, 0]]),
                (vec![3, 17], vec![vec![5, 5, 5]]),
                (vec![1, 64], vec![vec![0]]),
            ],
        ),
    ];
    assert_eq!(cases.len(), pvl_files("examples/loop_unroll").len());
    for (file, method, runs) in cases {
        let original = read(file);
        assert_same_meaning(
            &original,
            &apply_loop_gpuopts(&original),
            method,
            &runs,
            file,
        );
    }
}

#[test]
fn unroll_flag_picks_the_loop_variable_or_lists_the_candidates() {
    // One loop: the variable is the guard variable the body updates.
    let out = run(&[
        "optimise",
        "--unroll",
        "2",
        "--no-verify",
        "examples/loop_unroll/repeated_add.pvl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unrolled the loop over `i`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("verification: skipped"),
        "{}",
        stderr(&out)
    );
    // Two loops over `i`: both are listed with their positions, exit 2.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.pvl");
    std::fs::write(
        &path,
        "class C {\n  requires n > 2;\n  void m(int n) {\n    int i = 0;\n    while (i < n) {\n      i = i + 1;\n    }\n    i = 0;\n    while (i < n) {\n      i = i + 1;\n    }\n  }\n}\n",
    )
    .unwrap();
    let out = run(&[
        "optimise",
        "--unroll",
        "2",
        "--loop",
        "i",
        &path.to_string_lossy(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("2 loops over `i` match"), "{err}");
    assert!(
        err.contains("the loop at 5:5") && err.contains("the loop at 9:5"),
        "{err}"
    );
}

proptest! {
    // Each case runs the applicability check (one small Z3 run) and the interpreter twice.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn unrolling_keeps_the_final_state_and_introduces_no_race(
        shape in template_loop(),
        factor in 1u32..5,
        threads in 1i128..4,
        as_for in any::<bool>(),
        cells in proptest::collection::vec(0i128..100, 3),
    ) {
        // Fewer iterations than the factor: a refusal the template asks for.
        assert_loop_optimisation_keeps_meaning(
            (shape, threads, as_for),
            &cells,
            &Optimisation::Unroll { var: "i".into(), factor },
            |r| matches!(r, Refusal::TooFewIterations { .. }),
        )?;
    }
}

/// Factors above `transform::MAX_FACTOR` are refused at once (E0910, exit 1), from a flag and
/// from a `gpuopt` line, for every optimisation that takes one; the limit itself is accepted.
#[test]
fn factors_above_the_limit_are_refused_at_once() {
    use alpinist::transform::MAX_FACTOR;
    let dir = tempfile::tempdir().unwrap();
    let loop_file = dir.path().join("loop.pvl");
    std::fs::write(
        &loop_file,
        "class C {\n  requires n >= 5000;\n  void m(int n) {\n    int i = 0;\n    \
         gpuopt loop_unroll i 100000;\n    loop_invariant 0 <= i && i <= n;\n    \
         while (i < n) { i = i + 1; }\n  }\n}\n",
    )
    .unwrap();
    let path = loop_file.to_str().unwrap();
    let over = (MAX_FACTOR + 1).to_string();
    for args in [
        vec!["optimise", path],
        vec!["optimise", "--unroll", &over, path],
        vec!["optimise", "--merge", &over, path],
        vec![
            "optimise",
            "--tile",
            "inter:100000",
            "examples/tiling/saxpy_inter.pvl",
        ],
    ] {
        let output = run(&args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}\n{}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("E0910"),
            "{args:?}\n{}",
            stderr(&output)
        );
    }
    // The library refuses too, whatever calls it.
    let parsed = syntax::parse(&std::fs::read_to_string(&loop_file).unwrap()).unwrap();
    let target = crate::common::first_loop(&parsed.program);
    let refusal = alpinist::transform::apply(
        &parsed.program,
        target,
        &Optimisation::Unroll {
            var: "i".into(),
            factor: MAX_FACTOR + 1,
        },
        &alpinist::verify::Limits::default(),
    )
    .unwrap_err();
    assert!(
        matches!(refusal, Refusal::FactorTooLarge { .. }),
        "{refusal:?}"
    );
    // At the limit the loop is unrolled (the probe is linear in the factor).
    let limit = MAX_FACTOR.to_string();
    let output = run(&["optimise", "--no-verify", "--unroll", &limit, path]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A chain in one run: every annotation of the file, by kind (prefetching before unrolling),
/// each step's output verified before the next, one report entry per step (`--json`
/// `schema_version` 2).
#[test]
fn a_chain_applies_by_kind_and_verifies_every_step() {
    let out = run(&[
        "optimise",
        "--json",
        "examples/chains/prefetch_then_unroll.pvl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("a JSON report");
    assert_eq!(doc["schema_version"], 2);
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{doc}");
    assert!(steps[0]["applied"]
        .as_str()
        .unwrap()
        .starts_with("prefetched `a[tid]`"));
    assert!(steps[1]["applied"]
        .as_str()
        .unwrap()
        .starts_with("unrolled the loop over `i` by 2"));
    for step in steps {
        let methods = step["verification"]["methods"]
            .as_array()
            .expect("verified");
        assert!(methods.iter().all(|m| m["outcome"] == "verified"), "{step}");
    }
    let pvl = doc["pvl"].as_str().unwrap();
    assert!(
        pvl.contains("int a_reg = a[tid];") && !pvl.contains("gpuopt"),
        "{pvl}"
    );
    // Both applied: the unrolled copy reads the register.
    assert_eq!(pvl.matches("b[tid] = b[tid] + a_reg;").count(), 3, "{pvl}");
}

/// A later request whose target an earlier step copied is refused with both spans (E0911),
/// never applied to one of the copies.
#[test]
fn a_target_an_earlier_step_copied_is_refused() {
    let err = crate::common::assert_refused(
        &["optimise", "tests/data/chains/merge_copies_unrolled_loop.pvl"],
        "E0911",
        "the earlier step that merged the iterations of the loop over `i` by 2 rewrote the loop this optimisation targets (2 copies of it now)",
    );
    assert!(err.contains("rewritten by this earlier step"), "{err}");
}
