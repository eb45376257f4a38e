//! End-to-end tests of `alpinist optimise` (loop unrolling): every example in
//! `examples/loop_unroll/` is unrolled and reverifies (exit 0); every input in
//! `tests/data/unroll/` is refused (exit 1) with its reason; the unrolled programs compute
//! what the originals compute (the reference interpreter, on a few inputs).

use alpinist::interp::{self, Memory, Value};
use alpinist::syntax::{self, Program, StmtKind};
use alpinist::transform::{self, unroll};
use alpinist::verify::Limits;

use crate::common::{pvl_files, relative, run, stderr, stdout};

#[test]
fn every_loop_unroll_example_optimises_and_reverifies() {
    let files = pvl_files("examples/loop_unroll");
    assert!(files.len() >= 3, "the loop_unroll examples are missing");
    for file in files {
        let path = relative(&file);
        let out = run(&["optimise", &path]);
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{path}: {err}");
        assert!(
            !text.contains("gpuopt loop_unroll"),
            "{path}: applied gpuopt kept:\n{text}"
        );
        assert!(text.contains("while"), "{path}: the loop is gone:\n{text}");
        assert!(err.contains("unrolled the loop over"), "{path}: {err}");
        assert!(err.contains("applicability check:"), "{path}: {err}");
        assert!(err.contains("verification: before"), "{path}: {err}");
        // The output is a PVL program that parses and type-checks.
        let parsed = syntax::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        alpinist::check::check(&parsed.program).unwrap_or_else(|e| panic!("{path}: {e:?}"));
    }
}

#[test]
fn unroll_flag_with_loop_and_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.pvl");
    let out_str = out_path.to_string_lossy().into_owned();
    let out = run(&[
        "optimise",
        "--unroll",
        "2",
        "--loop",
        "i",
        "-o",
        &out_str,
        "examples/loop_unroll/multiply.pvl",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let text = std::fs::read_to_string(&out_path).unwrap();
    assert!(text.contains("loop_invariant 2 <= i && i <= M;"), "{text}");
    assert_eq!(text.matches("acc = acc + tid;").count(), 3, "{text}");
}

#[test]
fn refused_inputs_exit_1_with_their_reason() {
    let cases = [
        (
            "tests/data/unroll/bound_too_small.pvl",
            "E0905",
            "cannot show that the loop runs at least 3 times: the guard `i < n` may be false on iteration 3",
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

#[test]
fn unimplemented_optimisations_are_exit_2_never_ignored() {
    for (args, what) in [
        (
            &["optimise", "examples/data_prefetching/pair_accumulate.pvl"][..],
            "not implemented yet: `gpuopt glob_to_reg`",
        ),
        (
            &["optimise", "examples/kernel_fusion/add_then_double.pvl"][..],
            "not implemented yet: `gpuopt fuse`",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
    }
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
}

/// The program with every `gpuopt loop_unroll` applied through the library.
fn unrolled(program: &Program) -> Program {
    let mut targets = Vec::new();
    let mut copy = program.clone();
    transform::visit_stmt_lists_mut(&mut copy, &mut |stmts| {
        for pair in stmts.windows(2) {
            if let StmtKind::GpuOpt(g) = &pair[0].kind {
                if let syntax::GpuOptKind::LoopUnroll { var, factor } = &g.kind {
                    let syntax::ExprKind::IntLit(k) = &factor.kind else {
                        panic!()
                    };
                    targets.push((pair[1].span, var.name.clone(), u32::try_from(k).unwrap()));
                }
            }
        }
    });
    assert!(!targets.is_empty());
    let mut current = program.clone();
    for (span, var, k) in targets {
        current = unroll::unroll(&current, span, &var, k, &Limits::default())
            .unwrap_or_else(|r| panic!("refused: {r}"))
            .0;
    }
    current
}

/// Runs `method` on (N, bound, arrays...) and returns the arrays' final contents.
fn final_arrays(
    program: &Program,
    method: &str,
    ints: &[i128],
    arrays: &[Vec<i128>],
) -> Vec<Vec<i128>> {
    let mut memory = Memory::new();
    let refs: Vec<_> = arrays.iter().map(|a| memory.alloc_ints(a)).collect();
    let mut args: Vec<Value> = ints.iter().map(|&v| Value::Int(v)).collect();
    args.extend(refs.iter().map(|&r| Value::Array(r)));
    let outcome = interp::run(program, method, &args, memory, &interp::Limits::default())
        .unwrap_or_else(|e| panic!("{method} on {ints:?}: {e}"));
    refs.iter()
        .map(|&r| outcome.memory.ints(r).unwrap())
        .collect()
}

#[test]
fn unrolled_examples_compute_what_the_originals_compute() {
    let read = |name: &str| {
        let text = std::fs::read_to_string(crate::common::repo_root().join(name)).unwrap();
        syntax::parse(&text).unwrap().program
    };
    // (file, method, the int parameters before the arrays for each run, the arrays)
    type Case = (&'static str, &'static str, Vec<(Vec<i128>, Vec<Vec<i128>>)>);
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
        let optimised = unrolled(&original);
        assert_ne!(original, optimised, "{file}: nothing changed");
        for (ints, arrays) in runs {
            let before = final_arrays(&original, method, &ints, &arrays);
            let after = final_arrays(&optimised, method, &ints, &arrays);
            assert_eq!(before, after, "{file} on {ints:?} {arrays:?}");
            assert_ne!(
                before, arrays,
                "{file}: the run changed nothing, so it compares nothing"
            );
        }
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
