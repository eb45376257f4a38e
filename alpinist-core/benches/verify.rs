//! Verification time per example kernel: `cargo bench -p alpinist-core --bench verify`.
//!
//! Prints, per file of a fixed list from `examples/`, the verdict and the median and worst of
//! `RUNS` runs of `verify_program` (parse and type check excluded), then the median and worst
//! over all files — the figures the README's table and issue 3's targets (median under 200 ms
//! per file, worst under 5 s) refer to. Wall-clock times: run it on an idle machine.

use std::path::Path;
use std::time::{Duration, Instant};

use alpinist_core::verify::{verify_program, Limits, Outcome};

const RUNS: usize = 3;

const FILES: &[&str] = &[
    "basic/array_copy.pvl",
    "basic/neighbour_stencil.pvl",
    "basic/sum_loop.pvl",
    "basic/vector_add.pvl",
    "basic/zero_array.pvl",
    "data_prefetching/pair_accumulate.pvl",
    "iteration_merging/even_sum.pvl",
    "iteration_merging/scale_ten.pvl",
    "kernel_fusion/add_then_double.pvl",
    "loop_unroll/doubling.pvl",
    "loop_unroll/multiply.pvl",
    "loop_unroll/repeated_add.pvl",
    "prefix-sum/blelloch.pvl",
    "prefix-sum/blelloch_2d.pvl",
    "prefix-sum/brent_kung.pvl",
    "prefix-sum/kogge_stone.pvl",
    "prefix-sum/kogge_stone_16.pvl",
    "prefix-sum/sklansky.pvl",
    "tiling/clamp_intra.pvl",
    "tiling/saxpy_inter.pvl",
    "tiling/square_intra.pvl",
];

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut medians = Vec::new();
    println!(
        "{:<40} {:>10} {:>10} {:>10}",
        "file", "verdict", "median", "worst"
    );
    for file in FILES {
        let text = std::fs::read_to_string(examples.join(file)).expect("example readable");
        let parsed = alpinist_core::syntax::parse(&text).expect("example parses");
        alpinist_core::check::check(&parsed.program).expect("example checks");
        let mut times: Vec<Duration> = Vec::new();
        let mut verdict = Outcome::Verified;
        // The two-dimensional tree layout needs a larger budget (as in the README).
        let limits = if file.ends_with("blelloch_2d.pvl") {
            Limits {
                rlimit: 16_000_000,
                ..Limits::default()
            }
        } else {
            Limits::default()
        };
        for _ in 0..RUNS {
            let start = Instant::now();
            let reports = verify_program(&parsed.program, &limits, jobs);
            times.push(start.elapsed());
            verdict = reports
                .iter()
                .map(|r| r.outcome())
                .max()
                .unwrap_or(Outcome::Verified);
        }
        times.sort();
        let median = times[RUNS / 2];
        medians.push(median);
        println!(
            "{:<40} {:>10} {:>8.0}ms {:>8.0}ms",
            file,
            format!("{verdict:?}").to_lowercase(),
            median.as_secs_f64() * 1e3,
            times[RUNS - 1].as_secs_f64() * 1e3
        );
    }
    medians.sort();
    println!(
        "over {} files: median {:.0} ms, worst {:.0} ms ({} jobs)",
        medians.len(),
        medians[medians.len() / 2].as_secs_f64() * 1e3,
        medians[medians.len() - 1].as_secs_f64() * 1e3,
        jobs
    );
}
