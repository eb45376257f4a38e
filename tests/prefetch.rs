//! End-to-end tests of data prefetching (`gpuopt glob_to_reg`): the examples in
//! `examples/data_prefetching/` optimise and reverify (exit 0, snapshot of the optimised PVL);
//! the inputs in `tests/data/prefetch/` are refused (exit 1, one per refusal code, snapshot of
//! the diagnostic); and the prefetched examples compute what the originals compute on random
//! inputs (the interpreter, which also reports races).

use std::sync::LazyLock;

use alpinist::syntax::{self, Program};
use proptest::prelude::*;

use crate::common::{outcome, pvl_files, relative, run, snapshot_name, stderr, stdout};

#[test]
fn every_prefetching_example_optimises_and_reverifies() {
    let files = pvl_files("examples/data_prefetching");
    assert!(
        files.len() >= 6,
        "the data prefetching examples are missing"
    );
    for file in files {
        let path = relative(&file);
        let out = run(&["optimise", &path]);
        let (text, err) = (stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{path}: {err}");
        assert!(err.contains("into a register"), "{path}: {err}");
        assert!(
            err.contains("after") && err.contains("(verified)"),
            "{path}: {err}"
        );
        assert!(
            !text.contains("gpuopt glob_to_reg"),
            "{path}: applied gpuopt kept"
        );
        assert!(text.contains("_reg"), "{path}: no register:\n{text}");
        let parsed = syntax::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        alpinist::check::check(&parsed.program).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        insta::with_settings!({
            snapshot_path => "snapshots/prefetch",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => path.clone(),
        }, {
            insta::assert_snapshot!(snapshot_name(&file, "examples/data_prefetching"), text);
        });
    }
}

#[test]
fn refused_prefetchings_exit_1_with_their_reason() {
    let cases = [
        (
            "tests/data/prefetch/not_accessed.pvl",
            "E0940",
            "cannot prefetch `a[tid + 1]`: no par block of the method accesses it in code",
        ),
        (
            "tests/data/prefetch/no_permission_at_start.pvl",
            "E0941",
            "cannot show that the thread may read it where this segment starts",
        ),
        (
            "tests/data/prefetch/alias_same_array.pvl",
            "E0942",
            "cannot prefetch `a[tid]`: `a[i]` may be the same cell",
        ),
        (
            "tests/data/prefetch/index_assigned.pvl",
            "E0943",
            "`j`, a variable of its index, is assigned in the segment",
        ),
        (
            "tests/data/prefetch/array_reassigned.pvl",
            "E0946",
            "cannot prefetch: assigning `data` in a segment that accesses `data[0]` is not supported",
        ),
        (
            "tests/data/prefetch/index_reads_heap.pvl",
            "E0946",
            "cannot prefetch: an index that reads the heap (`idx[tid]`; only variables and constants) is not supported",
        ),
        (
            "tests/data/prefetch/values_in_the_method.pvl",
            "E0946",
            "cannot prefetch: `\\values` in the method (it reads cells no index names) is not supported",
        ),
        (
            "tests/data/prefetch/unguarded_access.pvl",
            "E0948",
            "cannot show that `tid == 1`, the condition under which the register is loaded, holds at this access",
        ),
    ];
    assert_eq!(cases.len(), pvl_files("tests/data/prefetch").len());
    for (file, code, message) in cases {
        let err = crate::common::assert_refused(&["optimise", file], code, message);
        insta::with_settings!({
            snapshot_path => "snapshots/prefetch",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => file.to_string(),
        }, {
            let path = crate::common::repo_root().join(file);
            insta::assert_snapshot!(snapshot_name(&path, "tests/data/prefetch"), err);
        });
    }
}

/// (file, method, the int arguments after the first size N, each array's length minus N; no
/// lengths: the first array has 4 * N cells and the second 4, or N with `nested_groups`).
const RUNS: [(&str, &str, &[i128], &[usize]); 9] = [
    (
        "examples/data_prefetching/call_between.pvl",
        "twice",
        &[],
        &[0],
    ),
    (
        "examples/data_prefetching/nested_groups.pvl",
        "scale",
        &[],
        &[],
    ),
    (
        "examples/data_prefetching/rounds_with_barrier.pvl",
        "rounds",
        &[2],
        &[0, 0],
    ),
    (
        "examples/data_prefetching/pair_accumulate.pvl",
        "accumulate",
        &[3],
        &[1, 0],
    ),
    (
        "examples/data_prefetching/neighbour_guarded.pvl",
        "sums",
        &[],
        &[0, 0],
    ),
    (
        "examples/data_prefetching/scale_in_place.pvl",
        "update",
        &[],
        &[0],
    ),
    (
        "examples/data_prefetching/two_arrays.pvl",
        "axpy",
        &[2, -3],
        &[0, 0],
    ),
    (
        "examples/data_prefetching/two_phases.pvl",
        "phases",
        &[],
        &[0, 0],
    ),
    (
        "examples/data_prefetching/weighted_rows.pvl",
        "weigh",
        &[],
        &[],
    ),
];

static PREFETCHED: LazyLock<Vec<(Program, Program)>> = LazyLock::new(|| {
    RUNS.iter()
        .map(|(file, ..)| crate::common::annotations_applied(file))
        .collect()
});

/// Examples the runs leave out: `field_array` keeps its array in a field, `matrix_cell` has
/// an `int[][]` parameter, and the harness passes one-dimensional arrays as arguments.
const NOT_RUN: [&str; 2] = [
    "examples/data_prefetching/field_array.pvl",
    "examples/data_prefetching/matrix_cell.pvl",
];

#[test]
fn the_runs_cover_every_example() {
    assert_eq!(
        RUNS.len() + NOT_RUN.len(),
        pvl_files("examples/data_prefetching").len()
    );
}

proptest! {
    // Z3 runs once per example (the rewrite is shared); each case is two interpreter runs.
    #![proptest_config(crate::properties::config(64))]

    #[test]
    fn prefetched_examples_compute_what_the_originals_compute(
        which in 0..RUNS.len(),
        n in 1i128..9,
        values in proptest::collection::vec(-20i128..20, 40),
    ) {
        let (file, method, ints, extra) = RUNS[which];
        let (original, optimised) = &PREFETCHED[which];
        let mut args = vec![n];
        args.extend_from_slice(ints);
        let arrays: Vec<Vec<i128>> = if extra.is_empty() {
            // weighted_rows: `out` has 4 * M cells, `w` has 4; nested_groups: `a` has 4 * G,
            // `s` has G.
            let second = if method == "scale" { n as usize } else { 4 };
            vec![values[..4 * n as usize].to_vec(), values[40 - second..40].to_vec()]
        } else {
            extra
                .iter()
                .enumerate()
                .map(|(k, e)| {
                    let len = n as usize + e;
                    values[k * 10..k * 10 + len].to_vec()
                })
                .collect()
        };
        prop_assert_ne!(original, optimised, "{}: nothing changed", file);
        prop_assert_eq!(
            outcome(original, method, &args, &arrays),
            outcome(optimised, method, &args, &arrays),
            "{} on {:?} {:?}", file, args, arrays
        );
    }
}

/// `--prefetch ARRAY:INDEX,..` asks for what `gpuopt glob_to_reg` lines ask for: the same
/// program comes out of the annotated file and of the flag on the file without the line.
#[test]
fn prefetch_flag_does_what_the_annotation_does() {
    let (dir, bare) = crate::common::assert_flag_does_what_the_annotation_does(
        "examples/data_prefetching/pair_accumulate.pvl",
        "  gpuopt glob_to_reg a tid tid + 1;\n",
        "--prefetch",
        "a:tid,tid + 1",
    );
    // The two-dimensional form: a row.
    let text = std::fs::read_to_string(
        crate::common::repo_root().join("examples/data_prefetching/matrix_cell.pvl"),
    )
    .unwrap();
    let matrix = dir.path().join("matrix.pvl");
    std::fs::write(&matrix, text.replace("  gpuopt glob_to_reg m[i] j;\n", "")).unwrap();
    let matrix = matrix.to_string_lossy().into_owned();
    let out = run(&["optimise", "--no-verify", "--prefetch", "m[i]:j", &matrix]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("int m_reg = m[i][j];"),
        "{}",
        stdout(&out)
    );
    // A local array has no global memory to prefetch from; a malformed flag is a usage error.
    let out = run(&["optimise", "--prefetch", "b0:0", &bare]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no method with a par block has a parameter or field `b0`"));
    let out = run(&["optimise", "--prefetch", "a", &bare]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected `ARRAY:INDEX[,INDEX..]`"));
}

/// A random kernel over two array parameters that may be the same array: the par body is a
/// sequence of statements reading and writing `a[tid]`, `b[tid]` and a local; each thread
/// holds `pa` of `a[tid]` and `pb` of `b[tid]` (half or write).
fn random_kernel(statements: &[u8], write_a: bool, write_b: bool) -> String {
    let pool = [
        "x = x + a[tid];",
        "x = x + b[tid];",
        "a[tid] = a[tid] + x;",
        "b[tid] = b[tid] * 2 + x;",
        "if (x > 0) { a[tid] = x - a[tid]; }",
        "if (b[tid] > x) { x = b[tid]; }",
        "a[tid] = b[tid] + a[tid];",
        "x = x * a[tid] - b[tid];",
    ];
    let share = |w: bool| if w { "write" } else { "1\\2" };
    let (pa, pb) = (share(write_a), share(write_b));
    let body: Vec<&str> = statements
        .iter()
        .map(|&k| pool[k as usize % pool.len()])
        .collect();
    format!(
        "class K {{
  context_everywhere a != null && b != null && a.length == N && b.length == N;
  context (\\forall* int k; 0 <= k && k < N; Perm(a[k], {pa}));
  context (\\forall* int k; 0 <= k && k < N; Perm(b[k], {pb}));
  void m(int N, int[] a, int[] b) {{
    par p(int tid = 0 .. N)
      context Perm(a[tid], {pa}) ** Perm(b[tid], {pb});
    {{
      int x = tid;
      {}
    }}
  }}
}}",
        body.join("\n      ")
    )
}

/// The final contents of `a` and `b` after `m(N, a, b)`; with `alias`, one array passed twice.
fn final_arrays(program: &Program, a: &[i128], b: &[i128], alias: bool) -> Vec<Vec<i128>> {
    use alpinist::interp::{self, Memory, Value};
    let mut memory = Memory::new();
    let ra = memory.alloc_ints(a);
    let rb = if alias { ra } else { memory.alloc_ints(b) };
    let args = [
        Value::Int(a.len() as i128),
        Value::Array(ra),
        Value::Array(rb),
    ];
    let out = interp::run(program, "m", &args, memory, &interp::Limits::default())
        .unwrap_or_else(|e| panic!("{e}"));
    vec![out.memory.ints(ra).unwrap(), out.memory.ints(rb).unwrap()]
}

proptest! {
    // Each case verifies the kernel, checks and applies the prefetch, and reverifies (Z3, about
    // half a second), so the count stays small.
    #![proptest_config(crate::properties::config(24))]

    /// Whenever prefetching applies to a random kernel, the output verifies and computes what
    /// the input computes — also with both parameters the same array wherever the contract
    /// admits that (both shares halves, so neither array is written).
    #[test]
    fn prefetching_random_kernels_keeps_meaning_also_under_aliasing(
        statements in proptest::collection::vec(0u8..8, 1..6),
        write_a in any::<bool>(),
        write_b in any::<bool>(),
        on_b in any::<bool>(),
        values in proptest::collection::vec(-9i128..9, 8),
        n in 1usize..5,
    ) {
        let text = random_kernel(&statements, write_a, write_b);
        let parsed = syntax::parse(&text).unwrap();
        let cell = if on_b { "b" } else { "a" };
        let requests = alpinist::pipeline::plan(
            &parsed.program,
            vec![alpinist::transform::Optimisation::Prefetch {
                array: cell.into(),
                index: "tid".into(),
            }],
            None,
        );
        let Ok(requests) = requests else {
            return Ok(()); // the cell is not accessed in code
        };
        let settings = crate::common::pipeline_settings(true);
        let done = match alpinist::pipeline::run(&parsed.program, &parsed.trivia, &requests, &settings) {
            Ok(done) => done,
            // A kernel that writes without write permission does not verify; a refusal is
            // an answer too.
            Err(_) => return Ok(()),
        };
        let after = done.after.as_ref().unwrap().outcome();
        prop_assert_eq!(after, alpinist::verify::Outcome::Verified, "{}\n{}", text, done.text);
        let optimised = syntax::parse(&done.text).unwrap().program;
        let (a, b) = (&values[..n], &values[4..4 + n]);
        prop_assert_eq!(
            final_arrays(&parsed.program, a, b, false),
            final_arrays(&optimised, a, b, false),
            "{}\n{}", text, done.text
        );
        if !write_a && !write_b {
            prop_assert_eq!(
                final_arrays(&parsed.program, a, b, true),
                final_arrays(&optimised, a, b, true),
                "{}\n{}", text, done.text
            );
        }
    }
}

/// A ghost declaration keeps its scope (it is not wrapped in a block, which would end it),
/// and the output of `optimise` always type-checks, `--no-verify` too.
#[test]
fn ghost_declarations_keep_their_scope() {
    let kernel = "class C {
  gpuopt glob_to_reg a tid;
  context_everywhere a != null && a.length == N;
  context (\\forall* int k; 0 <= k && k < N; Perm(a[k], write));
  void m(int N, int[] a) {
    par p(int tid = 0 .. N)
      context Perm(a[tid], write);
    {
      a[tid] = a[tid] + 1;
      ghost int g = a[tid];
      assert g == a[tid];
    }
  }
}
";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ghost.pvl");
    std::fs::write(&path, kernel).unwrap();
    for flags in [&[][..], &["--no-verify"][..]] {
        let mut args = vec!["optimise"];
        args.extend_from_slice(flags);
        let path = path.to_string_lossy().into_owned();
        args.push(&path);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("ghost int g = a_reg;"), "{text}");
        assert!(text.contains("assert g == a_reg;"), "{text}");
    }
}
