//! End-to-end tests of `alpinist optimise` for tiling: the examples in `examples/tiling/`
//! (exit 0, with a snapshot of the optimised PVL), the inputs in `tests/data/tile/` that must
//! be refused (exit 1 with their code and message, snapshot), and a property: for random N,
//! T < N and both layouts, the tiled program computes what the original computes, race-free.

use alpinist::interp::{self, Memory, Value};
use alpinist::syntax::{self, StmtKind, TileLayout};
use alpinist::transform::tile;
use proptest::prelude::*;

use crate::common::{pvl_files, relative, run, snapshot_name, stderr, stdout};

#[test]
fn every_tiling_example_optimises_and_reverifies() {
    let files = pvl_files("examples/tiling");
    assert!(files.len() >= 5, "the tiling examples are missing");
    for file in files {
        let path = relative(&file);
        let out = run(&["optimise", &path]);
        let (text, err) = (stdout(&out), stderr(&out));
        assert!(err.contains("tiled the par block"), "{path}: {err}");
        assert!(!text.contains("gpuopt tile"), "{path}: applied gpuopt kept");
        assert!(text.contains("while"), "{path}: no tile loop:\n{text}");
        let parsed = syntax::parse(&text).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        alpinist::check::check(&parsed.program).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        assert_eq!(out.status.code(), Some(0), "{path}: {err}");
        insta::with_settings!({
            snapshot_path => "snapshots/tile",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => path.clone(),
        }, {
            insta::assert_snapshot!(snapshot_name(&file, "examples/tiling"), text);
        });
    }
}

#[test]
fn refused_tilings_exit_1_with_their_reason() {
    let cases = [
        (
            "tests/data/tile/tile_too_large.pvl",
            "E0930",
            "cannot tile: cannot show that the tile size 4 is smaller than the number of threads `N`: N may be 3",
        ),
        (
            "tests/data/tile/barrier.pvl",
            "E0932",
            "cannot tile: the par block has a barrier",
        ),
        (
            "tests/data/tile/two_iterators.pvl",
            "E0933",
            "cannot tile: a par block with 2 iterators is not supported",
        ),
        (
            "tests/data/tile/shared_permission.pvl",
            "E0934",
            "the permission `Perm(a[0], 1\\32)` does not depend on the thread id `tid`",
        ),
    ];
    assert_eq!(cases.len(), pvl_files("tests/data/tile").len());
    for (file, code, message) in cases {
        let err = crate::common::assert_refused(&["optimise", file], code, message);
        insta::with_settings!({
            snapshot_path => "snapshots/tile",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => file.to_string(),
        }, {
            let path = crate::common::repo_root().join(file);
            insta::assert_snapshot!(snapshot_name(&path, "tests/data/tile"), err);
        });
    }
}

const KERNEL: &str = "class K {
  void m(int N, int c, int[] a, int[] b) {
    par p(int tid = 0 .. N)
      context Perm(a[tid], write);
      context Perm(b[tid], 1\\2);
      ensures a[tid] == \\old(a[tid]) * c + b[tid] + tid;
    {
      a[tid] = a[tid] * c + b[tid] + tid;
    }
  }
}";

fn final_a(program: &syntax::Program, n: usize, c: i128) -> Vec<i128> {
    let mut memory = Memory::new();
    let a = memory.alloc_ints(&(0..n as i128).map(|x| x * 3 - 7).collect::<Vec<_>>());
    let b = memory.alloc_ints(&(0..n as i128).map(|x| 11 - x).collect::<Vec<_>>());
    let args = [
        Value::Int(n as i128),
        Value::Int(c),
        Value::Array(a),
        Value::Array(b),
    ];
    let outcome = interp::run(program, "m", &args, memory, &interp::Limits::default())
        .unwrap_or_else(|e| panic!("N = {n}: {e}"));
    outcome.memory.ints(a).unwrap()
}

proptest! {
    // The rewrite only (no Z3: the generator guarantees T < N) and two interpreter runs per
    // case: 256 cases take under a second.
    #![proptest_config(crate::properties::config(256))]

    #[test]
    fn tiling_preserves_meaning_without_races(
        n in 2usize..40,
        t_frac in 0.0f64..1.0,
        inter in any::<bool>(),
        c in -3i128..4,
    ) {
        let size = 1 + ((n - 1) as f64 * t_frac) as u32;
        let size = size.min(n as u32 - 1).max(1);
        let layout = if inter { TileLayout::Inter } else { TileLayout::Intra };
        let original = syntax::parse(KERNEL).unwrap().program;
        let mut par = None;
        original.visit_stmts(&mut |s| {
            if matches!(s.kind, StmtKind::Par(_)) {
                par = Some(s.span);
            }
        });
        let plan = tile::plan(&original, par.unwrap(), layout, size).unwrap();
        let tiled = tile::apply(&original, &plan).unwrap();
        prop_assert_ne!(&original, &tiled);
        prop_assert_eq!(final_a(&original, n, c), final_a(&tiled, n, c));
    }
}
