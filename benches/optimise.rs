//! Optimisation times per example: `cargo bench --bench optimise`.
//!
//! Runs the release `alpinist optimise --json --no-cache FILE` over every file of `examples/loop_unroll/`,
//! `examples/iteration_merging/`, `examples/tiling/`, `examples/data_prefetching/`, `examples/kernel_fusion/`, `examples/matrix_linearisation/` and `examples/chains/` (the directories are listed at run time,
//! so new examples are measured without editing this file), `RUNS` times each, and prints the
//! median of each figure the report gives: the rewrite, the Z3 part of the applicability check,
//! and the verification of the program before and after. These are the figures of issue 4's
//! targets (rewrite under 10 ms, applicability under 100 ms) and of the README's before/after
//! table. Wall-clock times, one process per run (so each includes no start-up cost: the JSON
//! figures are measured inside the process): run it on an idle machine.

use std::path::{Path, PathBuf};
use std::process::Command;

const RUNS: usize = 3;
const DIRECTORIES: &[&str] = &[
    "loop_unroll",
    "iteration_merging",
    "tiling",
    "data_prefetching",
    "kernel_fusion",
    "matrix_linearisation",
    "chains",
];

/// The medians of one file's runs, in milliseconds.
struct Row {
    file: String,
    exit: i64,
    rewrite: f64,
    applicability: f64,
    before: f64,
    after: f64,
}

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    println!(
        "{:<42} {:>4} {:>9} {:>9} {:>9} {:>9}",
        "file", "exit", "rewrite", "applic.", "before", "after"
    );
    let mut rows = Vec::new();
    for directory in DIRECTORIES {
        let mut files: Vec<PathBuf> = std::fs::read_dir(examples.join(directory))
            .expect("examples directory readable")
            .map(|entry| entry.expect("directory entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "pvl"))
            .collect();
        files.sort();
        for file in files {
            let label = format!("{directory}/{}", file_name(&file));
            let row = match measure(&file, &label) {
                Ok(row) => row,
                Err(why) => {
                    println!("{label:<42} {why}");
                    continue;
                }
            };
            println!(
                "{:<42} {:>4} {:>7.2}ms {:>7.0}ms {:>7.0}ms {:>7.0}ms",
                row.file, row.exit, row.rewrite, row.applicability, row.before, row.after
            );
            rows.push(row);
        }
    }
    let worst = |f: fn(&Row) -> f64| rows.iter().map(f).fold(0.0, f64::max);
    println!(
        "worst rewrite {:.2} ms (target 10 ms), worst applicability check {:.0} ms (target 100 ms)",
        worst(|r| r.rewrite),
        worst(|r| r.applicability)
    );
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .expect("a file")
        .to_string_lossy()
        .into_owned()
}

/// The medians over `RUNS` runs, or why there are none (no report: the optimisation was
/// refused or is missing).
fn measure(path: &Path, label: &str) -> Result<Row, String> {
    let mut runs: Vec<serde_json::Value> = Vec::new();
    for _ in 0..RUNS {
        // Proof times, not cache lookups: every run proves before and after.
        let output = Command::new(env!("CARGO_BIN_EXE_alpinist"))
            .args(["optimise", "--json", "--no-cache"])
            .arg(path)
            .output()
            .expect("alpinist runs");
        let report = serde_json::from_slice(&output.stdout).map_err(|_| {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let why = stderr
                .lines()
                .find(|l| l.contains('×'))
                .unwrap_or("")
                .trim();
            format!("exit {:?}, no report: {why}", output.status.code())
        })?;
        runs.push(report);
    }
    let median = |pointer: &str| {
        let mut values: Vec<f64> = runs
            .iter()
            .map(|run| {
                run.pointer(pointer)
                    .and_then(|v| v.as_f64())
                    .unwrap_or(f64::NAN)
            })
            .collect();
        values.sort_by(f64::total_cmp);
        values[RUNS / 2]
    };
    Ok(Row {
        file: label.to_string(),
        exit: runs[0]["exit"].as_i64().unwrap_or(-1),
        rewrite: median("/optimisation_ms"),
        applicability: median("/applicability_ms"),
        before: median("/verification_before/time_ms"),
        after: median("/verification_after/time_ms"),
    })
}
