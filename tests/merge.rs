//! End-to-end tests of `alpinist optimise` for iteration merging: every example in
//! `examples/iteration_merging/` is merged and reverifies (exit 0; the optimised PVL is
//! snapshot-tested); every input in `tests/data/merge/` (header `//:: expect CODE line:col`) is
//! refused (exit 1) with its reason (snapshot); merged programs compute what the originals
//! compute (the reference interpreter), on the examples and on random loops (proptest).

use alpinist::syntax;
use alpinist::transform::{Optimisation, Refusal};
use proptest::prelude::*;

use crate::common::{
    apply_loop_gpuopts, assert_loop_optimisation_keeps_meaning, assert_same_meaning, expectation,
    optimise_applies, optimise_to_file, pvl_files, relative, run, snapshot_name, stderr, stdout,
    template_loop, Runs,
};

fn snapshot(name: &str, description: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => "snapshots/merge",
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => description.to_string(),
    }, {
        insta::assert_snapshot!(name.to_string(), text);
    });
}

#[test]
fn every_iteration_merging_example_optimises_and_reverifies() {
    let files = pvl_files("examples/iteration_merging");
    assert!(
        files.len() >= 5,
        "the iteration_merging examples are missing"
    );
    for file in files {
        let path = relative(&file);
        let text = optimise_applies(
            &path,
            "iter_merge",
            "merged the iterations of the loop over",
        );
        assert!(
            text.contains("ghost int g"),
            "{path}: no ghost counter:\n{text}"
        );
        snapshot(
            &format!(
                "applied__{}",
                snapshot_name(&file, "examples/iteration_merging")
            ),
            &path,
            &text,
        );
    }
}

#[test]
fn refused_inputs_exit_1_with_their_reason() {
    let files = pvl_files("tests/data/merge");
    assert!(files.len() >= 3, "the refused merge inputs are missing");
    let mut codes = std::collections::BTreeSet::new();
    for file in &files {
        let path = relative(file);
        let source = std::fs::read_to_string(file).unwrap();
        let expected = expectation(&source)
            .unwrap_or_else(|| panic!("{path}: no `//:: expect CODE line:col` header"));
        let mut first = None;
        for extra in [&[][..], &["--no-verify"][..]] {
            let mut args = vec!["optimise"];
            args.extend_from_slice(extra);
            args.push(&path);
            let out = run(&args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{path} {extra:?}: {err}");
            assert!(err.contains(&expected.kind), "{path}: {err}");
            let position = format!("{path}:{}:{}", expected.line, expected.column);
            assert!(
                err.contains(&position),
                "{path}: expected {position}\n{err}"
            );
            assert!(err.contains("cannot merge iterations"), "{path}: {err}");
            assert!(
                stdout(&out).is_empty(),
                "{path}: refused but printed a program"
            );
            first.get_or_insert(err);
        }
        codes.insert(expected.kind);
        snapshot(
            &format!("refused__{}", snapshot_name(file, "tests/data/merge")),
            &path,
            &first.unwrap_or_default(),
        );
    }
    assert!(codes.len() >= 4, "too few distinct refusals: {codes:?}");
}

#[test]
fn merge_flag_with_loop_and_output_file() {
    let (err, text) = optimise_to_file(
        &["--merge", "3", "--loop", "i"],
        "examples/iteration_merging/scale_ten.pvl",
    );
    assert!(
        err.contains("merged the iterations of the loop over `i` by 3"),
        "{err}"
    );
    // 10 = 3 * 3 + 1: one peeled copy, three in the loop.
    assert_eq!(
        text.matches("a[tid] = a[tid] + b[tid];").count(),
        4,
        "{text}"
    );
    assert!(text.contains("loop_invariant g % 3 == 1;"), "{text}");
    assert!(text.contains("loop_invariant 0 <= g && g <= 10;"), "{text}");
}

/// The span of the first `while` loop.
#[test]
fn merged_examples_compute_what_the_originals_compute() {
    // (file, method, runs: the int parameters before the arrays, the arrays)
    type Case = (&'static str, &'static str, Runs);
    let cases: Vec<Case> = vec![
        (
            "scale_ten.pvl",
            "addTen",
            vec![
                (vec![3], vec![vec![1, 2, 3], vec![4, 5, -6]]),
                (vec![1], vec![vec![0], vec![7]]),
            ],
        ),
        (
            "countdown.pvl",
            "steps",
            vec![(vec![3, 20], vec![vec![0; 3]])],
        ),
        (
            "doubling.pvl",
            "ceilPow2",
            vec![(vec![2, 100], vec![vec![0; 2]])],
        ),
        ("halving.pvl", "halvings", vec![(vec![], vec![])]),
        ("fill_length.pvl", "fill", vec![(vec![], vec![vec![1; 12]])]),
        ("nested_rows.pvl", "run", vec![(vec![], vec![])]),
        (
            "repeated_add_fixed.pvl",
            "repeat",
            vec![(vec![3], vec![vec![1, -2, 3], vec![4, 5, 0]])],
        ),
        (
            "for_countdown_fill.pvl",
            "fill",
            vec![(vec![], vec![vec![0, 3, 0, 3, 0, 3, 0, 3, 0, 3]])],
        ),
    ];
    // Every example but even_sum.pvl, whose method takes a `seq<int>` (a ghost mirror of the
    // array); its merged loop is covered by reverification.
    assert_eq!(
        cases.len() + 1,
        pvl_files("examples/iteration_merging").len()
    );
    for (file, method, runs) in cases {
        let path = format!("examples/iteration_merging/{file}");
        let text = std::fs::read_to_string(crate::common::repo_root().join(&path)).unwrap();
        let original = syntax::parse(&text).unwrap().program;
        assert_same_meaning(
            &original,
            &apply_loop_gpuopts(&original),
            method,
            &runs,
            &path,
        );
    }
}

proptest! {
    // Each case runs the applicability check (two small Z3 runs) and the interpreter twice:
    // about 0.1 s. 24 cases whatever PROPTEST_CASES says (CI sets 256 for the cheap front-end
    // properties), so this property stays a few seconds on a 2-core machine.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn merging_keeps_the_final_state_and_introduces_no_race(
        shape in template_loop(),
        factor in 2u32..5,
        threads in 1i128..4,
        as_for in any::<bool>(),
        cells in proptest::collection::vec(0i128..100, 3),
    ) {
        // Fewer iterations than the factor: a refusal the template asks for.
        assert_loop_optimisation_keeps_meaning(
            (shape, threads, as_for),
            &cells,
            &Optimisation::Merge { var: "i".into(), factor },
            |r| matches!(r, Refusal::MergeFactorExceedsCount { .. }),
        )?;
    }
}
