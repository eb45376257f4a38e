//! Reduce-then-scan throughput against a device-to-device copy (issue 5):
//! `cargo bench --features opencl --bench scan_throughput -- [--min-log2 A] [--max-log2 B]
//! [--reps R] [--items L] [--chunk C] [--platform NAME] [--kernel FILE --kind KIND]
//! [--max-block B]`.
//!
//! For every n = 2^A … 2^B (default 2^20 … 2^24; `ALPINIST_SCAN_MAX_LOG2` also sets B, 2^28 is
//! a 1 GiB buffer — never run in CI) on every device of the selected platform, in one run:
//! the best of R (default 10) device-to-device copies of n `uint` (`clEnqueueCopyBuffer` and a
//! copy kernel; the faster one is the baseline), R reduce-then-scans of n random `uint` with the
//! *fast, hand-written* block scan of `alpinist_core::opencl::throughput` (not the verified
//! path: no verdict uses it), and a comparison of the scan's output with a host scan, in full.
//! Prints n, both copies, the scan's best and median, GB/s as 2n·4 bytes over the time, and the
//! best scan's percentage of the copy (the scheme's ceiling is 2n/3n ≈ 67%). Times are OpenCL
//! profiling times: compiles and host transfers are excluded.
//!
//! With `--kernel FILE` it also times the *verified* path — the same reduce and totals scan,
//! then the kernel generated from FILE on every block (`Harness::scan_once`, as `scan-test`
//! runs it, with the same plan: blocks of at most B elements, by default the device's
//! `Harness::max_block`) — at the sizes its precondition allows, checks its output the same
//! way, and prints its best time as a percentage of the same n's copy.
//!
//! Exit 0; 1 if a scan's output differs from the host scan; 2 for bad arguments; 4 without an
//! OpenCL platform (it says so; it never panics for want of one) or on an OpenCL error.

use std::process::ExitCode;

use alpinist::opencl::codegen;
use alpinist::opencl::harness::{host_scan, random_words, Harness, Monoid, ScanKind, SEED};
use alpinist::opencl::platform;
use alpinist::opencl::throughput::FastPlan;

struct Args {
    min_log2: u32,
    max_log2: u32,
    reps: usize,
    /// Work-items per group and elements per work-item; `None`: the device's default.
    shape: (Option<usize>, Option<u32>),
    platform: Option<String>,
    kernel: Option<String>,
    kind: ScanKind,
    /// The verified path's block limit; `None`: the device's default.
    max_block: Option<u32>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        min_log2: 20,
        max_log2: match std::env::var("ALPINIST_SCAN_MAX_LOG2") {
            Ok(v) => v
                .parse()
                .map_err(|_| format!("ALPINIST_SCAN_MAX_LOG2={v}: not a number"))?,
            Err(_) => 24,
        },
        reps: 10,
        shape: (None, None),
        platform: None,
        kernel: None,
        kind: ScanKind::Inclusive,
        max_block: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--bench" {
            continue; // cargo bench passes it
        }
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} {v}: not a number"))
        };
        match flag.as_str() {
            "--min-log2" => args.min_log2 = number(value()?)? as u32,
            "--max-log2" => args.max_log2 = number(value()?)? as u32,
            "--reps" => args.reps = number(value()?)? as usize,
            "--items" => args.shape.0 = Some(number(value()?)? as usize),
            "--chunk" => args.shape.1 = Some(number(value()?)? as u32),
            "--platform" => args.platform = Some(value()?),
            "--kernel" => args.kernel = Some(value()?),
            "--max-block" => {
                args.max_block = Some(number(value()?)?.min(u64::from(u32::MAX)) as u32)
            }
            "--kind" => {
                args.kind = match value()?.as_str() {
                    "inclusive" => ScanKind::Inclusive,
                    "exclusive" => ScanKind::Exclusive,
                    other => return Err(format!("--kind {other}: inclusive or exclusive")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.max_log2 > 28 || args.min_log2 > args.max_log2 {
        return Err(format!(
            "sizes 2^{}..2^{}: need min ≤ max ≤ 28",
            args.min_log2, args.max_log2
        ));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("scan_throughput: {e}");
            return ExitCode::from(2);
        }
    };
    let kernel = match &args.kernel {
        None => None,
        Some(file) => match load_kernel(file) {
            Ok(kernel) => Some(kernel),
            Err(e) => {
                eprintln!("scan_throughput: {file}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let devices = match platform::select(args.platform.as_deref()) {
        Ok(devices) => devices,
        Err(e) => {
            eprintln!("scan_throughput: {e}");
            return ExitCode::from(4);
        }
    };
    let mut wrong = false;
    for device in &devices {
        match run_device(device, &args, kernel.as_ref()) {
            Ok(correct) => wrong |= !correct,
            Err(e) => {
                eprintln!("scan_throughput: {}: {e}", device.device_name);
                return ExitCode::from(4);
            }
        }
    }
    if wrong {
        eprintln!("scan_throughput: a scan's output differs from the host scan (BAD above)");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// The kernel generated from a PVL file.
fn load_kernel(file: &str) -> Result<codegen::Kernel, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let parsed = alpinist::syntax::parse(&text).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    codegen::generate(&parsed.program).map_err(|e| e.to_string())
}

fn run_device(
    device: &platform::DeviceInfo,
    args: &Args,
    kernel: Option<&codegen::Kernel>,
) -> Result<bool, Box<dyn std::error::Error>> {
    let mut correct = true;
    let mut harness = Harness::new(device)?;
    harness.set_max_block(args.max_block);
    // The faster copy of each n, the verified path's baseline too.
    let mut copies = Vec::new();
    println!(
        "{} / {}: fast path (hand-written block scan, not the verified kernel), \
         best of {} reps, GB/s = 2n·4 bytes / time, work-groups of {} work-item(s) × {} elements",
        device.platform_name,
        device.device_name,
        args.reps,
        FastPlan::for_device(&harness, 1 << args.max_log2)?.items,
        FastPlan::for_device(&harness, 1 << args.max_log2)?.chunk,
    );
    println!(
        "{:>7} {:>7} {:>11} {:>11} {:>9} {:>9} {:>10} {:>7} {:>6} {:>22}",
        "n",
        "groups",
        "copyBuffer",
        "copy kernel",
        "scan best",
        "median",
        "scan",
        "of copy",
        "check",
        "reduce/totals/block ms"
    );
    for log2 in args.min_log2..=args.max_log2 {
        let n = 1u32 << log2;
        let default = FastPlan::for_device(&harness, n)?;
        let plan = match args.shape {
            (None, None) => default,
            (items, chunk) => FastPlan::new(
                &harness,
                n,
                items.unwrap_or(default.items),
                chunk.unwrap_or(default.chunk),
            )?,
        };
        let m = harness.measure_throughput(&plan, args.reps)?;
        correct &= m.mismatches == 0;
        copies.push((n, m.copy_ns()));
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "{:>7} {:>7} {:>6.2} GB/s {:>6.2} GB/s {:>6.2} ms {:>6.2} ms {:>5.2} GB/s {:>6.1}% {:>6} {:>22}",
            format!("2^{log2}"),
            plan.groups,
            m.gbps(m.copy_buffer_ns),
            m.gbps(m.copy_kernel_ns),
            ms(m.best_scan_ns()),
            ms(m.median_scan_ns()),
            m.gbps(m.best_scan_ns()),
            m.percent_of_copy(),
            if m.mismatches == 0 {
                "ok".to_string()
            } else {
                format!("{} BAD", m.mismatches)
            },
            format!(
                "{:.2}/{:.2}/{:.2}",
                ms(m.phases.reduce),
                ms(m.phases.totals),
                ms(m.phases.block)
            ),
        );
    }
    if let Some(kernel) = kernel {
        correct &= verified_path(&harness, kernel, args, &copies)?;
    }
    Ok(correct)
}

/// The verified path: `scan_once` with the generated kernel, summed kernel times, best of reps,
/// against the copy of the same n (`copies`: n and the faster copy's time).
/// Returns whether every output was right.
fn verified_path(
    harness: &Harness,
    kernel: &codegen::Kernel,
    args: &Args,
    copies: &[(u32, u64)],
) -> Result<bool, Box<dyn std::error::Error>> {
    let mut correct = true;
    println!(
        "verified path (kernel `{}` generated from the PVL, source {:016x}), sum of the \
         launches' device times, best of {} reps; upload before each rep (not timed); \
         blocks of at most {} elements",
        kernel.method,
        kernel.source_hash(),
        args.reps,
        harness.max_block()
    );
    let program = harness.compile(kernel, Monoid::IntAdd)?;
    for log2 in args.min_log2..=args.max_log2 {
        let n = 1u32 << log2;
        // The proof covers the sizes the precondition allows: measure only those.
        if let Err(e) = kernel.check_size(i64::from(n)) {
            println!("{:>10} not measured: {e}", format!("2^{log2}"));
            continue;
        }
        let plan = harness.plan(kernel, n)?;
        let input = random_words(n as usize, SEED ^ u64::from(n));
        let mut times = Vec::new();
        let mut got = vec![0u32; n as usize];
        for _ in 0..args.reps.max(1) {
            let (output, ns) =
                harness.scan_once(&program, kernel, &plan, args.kind, &input, 0xDEAD_BEEF)?;
            times.push(ns);
            output.read(&mut got).enq()?;
        }
        let want = host_scan(&input, args.kind, u32::wrapping_add);
        let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        correct &= bad == 0;
        times.sort_unstable();
        let (best, median) = (times[0], times[times.len() / 2]);
        let copy_ns = copies.iter().find(|(m, _)| *m == n).map_or(0, |c| c.1);
        println!(
            "{:>10} {:>7} groups of {:>5} ({:>4} work-items): best {:>8.2} ms {:>6.2} GB/s \
             {:>6.1}% of copy, median {:>8.2} ms  check {}",
            format!("2^{log2}"),
            plan.groups,
            plan.block,
            plan.work_items,
            best as f64 / 1e6,
            2.0 * f64::from(n) * 4.0 / best.max(1) as f64,
            100.0 * copy_ns as f64 / best.max(1) as f64,
            median as f64 / 1e6,
            if bad == 0 {
                "ok".to_string()
            } else {
                format!("{bad} BAD")
            },
        );
    }
    Ok(correct)
}
