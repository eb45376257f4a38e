//! End-to-end tests of `alpinist optimise` for kernel fusion: the examples in
//! `examples/kernel_fusion/` (exit 0, a snapshot of the fused PVL), the inputs in
//! `tests/data/fuse/` that must be refused (exit 1 with their code and message, snapshot), a
//! partial fusion (`tests/data/fuse_partial/`: exit 0 with a note), the `--fuse` flag, and a
//! property: for random kernel pairs whose second kernel reads its own
//! cell, the mirror cell or a shifted one, the fused program computes what the original
//! computes, with a barrier exactly where another thread's cell is read, race-free and never
//! divergent.

use alpinist::interp::{self, Memory, Value};
use alpinist::syntax::{self, StmtKind};
use alpinist::transform::{self, Optimisation, Refusal};
use alpinist::verify::Limits;
use proptest::prelude::*;

use crate::common::{pvl_files, relative, run, snapshot_name, stderr, stdout};

#[test]
fn every_fusion_example_optimises_and_reverifies() {
    let files = pvl_files("examples/kernel_fusion");
    assert!(files.len() >= 8, "the kernel fusion examples are missing");
    for file in files {
        let path = relative(&file);
        let out = run(&["optimise", &path]);
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{path}: {err}");
        assert!(err.contains("fused "), "{path}: {err}");
        assert!(!err.contains("error"), "{path}: {err}");
        assert!(
            !text.contains("gpuopt"),
            "{path}: applied gpuopt kept:\n{text}"
        );
        let parsed = syntax::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        alpinist::check::check(&parsed.program).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let mut pars = 0;
        parsed.program.visit_stmts(&mut |s| {
            pars += usize::from(matches!(s.kind, StmtKind::Par(_)));
        });
        // One kernel: one par block, or one of work-groups whose body is the group's threads.
        let groups = usize::from(text.contains("(int grp = 0 .. "));
        assert_eq!(pars, 1 + groups, "{path}: not one kernel:\n{text}");
        insta::with_settings!({
            snapshot_path => "snapshots/fuse",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => path.clone(),
        }, {
            insta::assert_snapshot!(snapshot_name(&file, "examples/kernel_fusion"), text);
        });
    }
}

#[test]
fn a_dependence_between_threads_gets_a_barrier_and_none_other_does() {
    for (file, barrier) in [
        ("examples/kernel_fusion/mirror_barrier.pvl", true),
        ("examples/kernel_fusion/four_stages.pvl", true),
        ("examples/kernel_fusion/three_stages.pvl", false),
        ("examples/kernel_fusion/shared_input.pvl", false),
        ("examples/kernel_fusion/fractions.pvl", false),
    ] {
        let text = stdout(&run(&["optimise", file]));
        assert_eq!(
            text.matches("barrier(").count(),
            usize::from(barrier),
            "{file}:\n{text}"
        );
    }
}

#[test]
fn the_fuse_flag_designates_the_run_of_par_blocks() {
    // The flag replaces the annotation of its kind on the same par blocks.
    let annotated = run(&["optimise", "examples/kernel_fusion/three_stages.pvl"]);
    let flagged = run(&[
        "optimise",
        "--fuse",
        "3",
        "examples/kernel_fusion/three_stages.pvl",
    ]);
    assert_eq!(flagged.status.code(), Some(0), "{}", stderr(&flagged));
    assert_eq!(stdout(&annotated), stdout(&flagged));
    // Fewer kernels than the run: the first two are fused, the third stays.
    let two = run(&[
        "optimise",
        "--fuse",
        "2",
        "examples/kernel_fusion/three_stages.pvl",
    ]);
    assert_eq!(two.status.code(), Some(0), "{}", stderr(&two));
    assert_eq!(stdout(&two).matches("par ").count(), 2, "{}", stdout(&two));
    for bad in ["1", "2:0", "x", "2:y"] {
        let out = run(&["optimise", "--fuse", bad, "examples/basic/zero_array.pvl"]);
        assert_eq!(out.status.code(), Some(2), "--fuse {bad}");
        assert!(stderr(&out).contains("`--fuse"), "{}", stderr(&out));
    }
    let none = run(&["optimise", "--fuse", "2", "examples/basic/zero_array.pvl"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("no 2 consecutive par blocks"));
}

#[test]
fn refused_fusions_exit_1_with_their_reason() {
    let cases = [
        (
            "tests/data/fuse/different_ranges.pvl",
            "E0966",
            "cannot show that the range `0 .. m` equals the first par block's `0 .. n`",
        ),
        (
            "tests/data/fuse/statement_between.pvl",
            "E0963",
            "a statement stands between par blocks 1 and 2",
        ),
        (
            "tests/data/fuse/across_groups.pvl",
            "E0969",
            "cannot fuse kernels 1 and 2 on 2 work-groups: a thread may write `a[tid]` in one and a thread of another work-group touch it as `a[n - 1 - tid]`",
        ),
        (
            "tests/data/fuse/groups_not_dividing.pvl",
            "E0967",
            "cannot show that 4 divides the number of threads `n`: n may be",
        ),
        (
            "tests/data/fuse/overlapping_writes.pvl",
            "E0968",
            "a thread's permissions to `a[0]` and `a[k]` may be to the same location",
        ),
        (
            "tests/data/fuse/incomparable_shares.pvl",
            "E0970",
            "the fused thread's share of `b[tid]`: cannot tell whether p or 1\\2 is larger (Z3 proves neither in the state before the first par block)",
        ),
        (
            "tests/data/fuse/old_of_a_written_cell.pvl",
            "E0970",
            "`\\old(b[tid])` in par block 2 reads what an earlier par block writes",
        ),
        (
            "tests/data/fuse/two_iterators.pvl",
            "E0964",
            "a par block with 2 iterators is not supported",
        ),
    ];
    assert_eq!(cases.len(), pvl_files("tests/data/fuse").len());
    for (file, code, message) in cases {
        // Every refused input verifies: the refusal is fusion's, not the checker's.
        let verified = run(&["verify", file]);
        assert_eq!(
            verified.status.code(),
            Some(0),
            "{file}: {}",
            stderr(&verified)
        );
        let err = crate::common::assert_refused(&["optimise", file], code, message);
        insta::with_settings!({
            snapshot_path => "snapshots/fuse",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => file.to_string(),
        }, {
            let path = crate::common::repo_root().join(file);
            insta::assert_snapshot!(snapshot_name(&path, "tests/data/fuse"), err);
        });
    }
}

#[test]
fn a_dependence_across_work_groups_stops_fusion_before_that_kernel() {
    let file = "tests/data/fuse_partial/third_reads_across_groups.pvl";
    let out = run(&["optimise", file]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The step says what was done (two kernels), not what was asked (three).
    assert!(err.contains("fused 2 par blocks into one kernel"), "{err}");
    assert!(
        err.contains("only the first 2 were fused: par block 3 is not, as a thread may write `b[tid]` in par block 2 and a thread of another of the 2 work-groups touch it as `b[n - 1 - tid]` in par block 3"),
        "{err}"
    );
    assert_eq!(text.matches("par ").count(), 2, "{text}");
    assert!(!text.contains("barrier("), "{text}");
    let json = run(&["optimise", "--json", file]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let note = doc["steps"][0]["note"].as_str().unwrap_or_default();
    assert!(note.starts_with("only the first 2 were fused"), "{doc}");
    insta::with_settings!({
        snapshot_path => "snapshots/fuse",
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => file.to_string(),
    }, {
        insta::assert_snapshot!("partial_third_reads_across_groups", text);
    });
}

#[test]
fn fusion_renames_an_iterator_in_the_prefetch_line_of_a_later_step() {
    let file = "tests/data/chains/fuse_renames_the_prefetched_cell.pvl";
    let out = run(&["optimise", file]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("prefetched `a[size - 1 - tid]`"), "{err}");
    assert!(text.contains("a_reg = a[size - 1 - tid];"), "{text}");
    assert!(!text.contains(" i "), "{text}");
}

/// Two kernels: the first updates a[tid], the second reads `a[INDEX]` into b[tid].
fn kernel_pair(index: &str, scale: i64, add: i64, groups: u32) -> String {
    format!(
        "class K {{
  context_everywhere a != null && b != null && a.length == n && b.length == n && n > 0;
  context_everywhere n % {pairs} == 0;
  context (\\forall* int i; 0 <= i && i < n; Perm(a[i], write) ** Perm(b[i], write));
  void m(int n, int[] a, int[] b) {{
    par p(int tid = 0 .. n)
      context Perm(a[tid], write);
    {{
      a[tid] = a[tid] * {scale} + tid;
    }}
    par q(int tid = 0 .. n)
      context Perm(a[{index}], 1\\2) ** Perm(b[tid], write);
    {{
      b[tid] = a[{index}] + {add};
    }}
  }}
}}",
        pairs = 2 * groups
    )
}

fn final_heap(program: &syntax::Program, input: &[i128]) -> Result<(Vec<i128>, Vec<i128>), String> {
    let mut memory = Memory::new();
    let a = memory.alloc_ints(input);
    let b = memory.alloc_ints(&vec![0; input.len()]);
    let args = [
        Value::Int(input.len() as i128),
        Value::Array(a),
        Value::Array(b),
    ];
    let outcome = interp::run(program, "m", &args, memory, &interp::Limits::default())
        .map_err(|e| e.to_string())?;
    Ok((
        outcome.memory.ints(a).unwrap(),
        outcome.memory.ints(b).unwrap(),
    ))
}

fn text_has_barrier(program: &syntax::Program) -> bool {
    syntax::print(program, &Default::default()).contains("barrier(")
}

proptest! {
    // Z3 decides each pair's dependence (about 0.1 s): few cases.
    #![proptest_config(crate::properties::config(24))]

    #[test]
    fn fusion_preserves_meaning_with_barriers_where_needed(
        which in 0usize..5,
        shift in 1i64..4,
        scale in -2i64..3,
        add in -3i64..4,
        groups in 1u32..3,
        quarter in proptest::collection::vec(-20i128..20, 1..4),
    ) {
        // A multiple of four threads, so that two work-groups split them into whole pairs.
        let half: Vec<i128> = quarter.iter().chain(quarter.iter().rev()).copied().collect();
        let input: Vec<i128> = half.iter().chain(half.iter().rev()).copied().collect();
        let n = input.len() as i64;
        let (index, reads): (String, Box<dyn Fn(i64) -> i64>) = match which {
            0 => ("tid".to_string(), Box::new(|t| t)),
            1 => ("n - 1 - tid".to_string(), Box::new(move |t| n - 1 - t)),
            2 => (format!("(tid + {shift}) % n"), Box::new(move |t| (t + shift) % n)),
            3 => (format!("tid / {}", shift + 1), Box::new(move |t| t / (shift + 1))),
            // The partner, inside one work-group: a barrier in the group's inner par block.
            _ => (
                "tid % 2 == 0 ? tid + 1 : tid - 1".to_string(),
                Box::new(|t| if t % 2 == 0 { t + 1 } else { t - 1 }),
            ),
        };
        let original = syntax::parse(&kernel_pair(&index, scale, add, groups)).unwrap().program;
        let mut first = None;
        original.visit_stmts(&mut |s| {
            if matches!(s.kind, StmtKind::Par(_)) && first.is_none() {
                first = Some(s.span);
            }
        });
        let fuse = Optimisation::Fuse { count: 2, groups };
        let group = |t: i64| t / (n / i64::from(groups));
        let other_thread = (0..n).any(|t| reads(t) != t);
        let other_group = (0..n).any(|t| group(reads(t)) != group(t));
        let fused = match transform::apply(&original, first.unwrap(), &fuse, &Limits::default()) {
            Ok(applied) => applied.program,
            Err(Refusal::FuseAcrossGroups { .. }) if groups > 1 => return Ok(()),
            Err(r) => return Err(TestCaseError::fail(format!("{index}: {r}"))),
        };
        // Fused without a barrier only where no thread reads another's cell (for every n).
        prop_assert!(text_has_barrier(&fused) || !other_thread, "{index}: no barrier");
        let text = syntax::print(&fused, &Default::default());
        // Only the thread's own cell needs no barrier.
        prop_assert_eq!(text.contains("barrier("), which != 0, "{}", text);
        // On two work-groups, a barrier only inside a group, in the inner par block of a
        // par block over the groups.
        if groups > 1 && which != 0 {
            prop_assert!(!other_group, "{index}: fused across work-groups");
            prop_assert!(text.contains("par p_groups(int grp = 0 .. 2)"), "{}", text);
            prop_assert!(text.contains("par p(int tid = grp * (n / 2) .. (grp + 1) * (n / 2))"), "{}", text);
        }
        let reparsed = syntax::parse(&text).unwrap().program;
        let expected = final_heap(&original, &input);
        prop_assert!(expected.is_ok(), "{:?}", expected);
        prop_assert_eq!(final_heap(&reparsed, &input), expected, "{}", text);
    }
}
