//! `alpinist scan-test` and `alpinist devices`: they need the `opencl` cargo feature.
//!
//! Exit codes of `scan-test`: 0 when both halves pass — the checker proves the kernel
//! race-free with its integer arithmetic free of 32-bit overflow and of negative `/` `%`
//! operands (`verify --int32`, the scan operator's element combinations exempt), and the
//! interval test passes on every selected device and n; 1 when the interval test (or the
//! integer sanity run) fails, or the checker refutes the kernel (refused, with the reason and
//! which half failed); 2 for bad input, including a size the kernel's precondition excludes
//! (the proof would not cover it); 3 when the checker could not decide or some size was not
//! tested; 4 for environment errors (no platform, a compile error in generated code, a
//! self-check that could not see the swapped scan fail).

use std::path::PathBuf;

use crate::exit::Exit;
use crate::{Baseline, ScanKind};

/// The arguments of `alpinist scan-test`.
#[derive(clap::Args)]
pub struct ScanTestArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "inclusive")]
    pub kind: ScanKind,
    /// A size to test; repeat for several (default 64). The checker's half runs once for all.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "n_range",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(i32::MAX))
    )]
    pub n: Vec<u32>,
    /// Every power of two from A to B inclusive.
    #[arg(long, value_name = "A..B")]
    pub n_range: Option<String>,
    /// A platform whose name contains NAME (case-insensitive), or `all`; default: the first
    /// platform.
    #[arg(long, value_name = "NAME|all")]
    pub platform: Option<String>,
    /// Split a power-of-two n above B elements into blocks of at most B (reduce-then-scan);
    /// default: 65536 on a CPU device, else only where n exceeds one work-group. Each block
    /// size must satisfy the kernel's precondition: the kernel runs at N := block.
    #[arg(
        long,
        value_name = "B",
        value_parser = clap::value_parser!(u32).range(2..)
    )]
    pub max_block: Option<u32>,
    /// Also run a baseline and report its time.
    #[arg(long, value_enum)]
    pub baseline: Option<Baseline>,
    /// One JSON document on standard output.
    #[arg(long)]
    pub json: bool,
}

#[cfg(not(feature = "opencl"))]
fn without_feature(subcommand: &str) -> Exit {
    crate::diagnostics::emit_plain(format_args!(
        "`alpinist {subcommand}` needs OpenCL, and this binary was built without it; rebuild with \
         `cargo build --release --features opencl` (needs an OpenCL ICD loader, e.g. Debian's \
         `ocl-icd-opencl-dev` and `pocl-opencl-icd`)"
    ));
    Exit::Environment
}

pub fn scan_test(args: &ScanTestArgs) -> Exit {
    #[cfg(not(feature = "opencl"))]
    {
        let _ = (
            &args.file,
            args.kind,
            &args.n,
            &args.n_range,
            &args.platform,
            args.max_block,
            args.baseline,
            args.json,
        );
        without_feature("scan-test")
    }
    #[cfg(feature = "opencl")]
    {
        enabled::scan_test(args)
    }
}

pub fn devices() -> Exit {
    #[cfg(not(feature = "opencl"))]
    {
        without_feature("devices")
    }
    #[cfg(feature = "opencl")]
    {
        enabled::devices()
    }
}

/// Every power of two in [a, b], from `A..B`.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
fn parse_range(text: &str) -> Result<Vec<u32>, String> {
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| format!("`--n-range {text}`: expected A..B"))?;
    let parse = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| format!("`--n-range {text}`: `{s}` is not a size"))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    // Sizes reach the kernel as OpenCL `int`.
    let sizes: Vec<u32> = (0..31)
        .map(|k| 1u32 << k)
        .filter(|&n| a <= n && n <= b)
        .collect();
    if sizes.is_empty() {
        return Err(format!("`--n-range {text}` contains no power of two"));
    }
    Ok(sizes)
}

#[cfg(feature = "opencl")]
mod enabled {
    use alpinist_core::opencl::codegen::{self, Kernel};
    use alpinist_core::opencl::harness::{
        BaselineReport, Harness, HarnessError, ScanKind as Kind, ScanReport,
    };
    use alpinist_core::opencl::interval;
    use alpinist_core::opencl::platform::{self, DeviceInfo};
    use alpinist_core::opencl::verdict::{self, RaceFreedom, Verdict};
    use serde_json::{json, Value};

    use super::{parse_range, ScanTestArgs};
    use crate::diagnostics::{emit, emit_plain};
    use crate::exit::Exit;
    use crate::input::Source;
    use crate::{Baseline, ScanKind};
    use alpinist_core::syntax::Program;

    pub fn devices() -> Exit {
        match platform::list() {
            Ok(devices) if devices.is_empty() => {
                emit_plain("OpenCL platforms exist, but none has a device");
                Exit::Environment
            }
            Ok(devices) => {
                let mut current = None;
                for d in &devices {
                    if current != Some(&d.platform_name) {
                        println!("platform: {}", d.platform_name);
                        current = Some(&d.platform_name);
                    }
                    println!(
                        "  device: {} (max work-group {}, local memory {} bytes)",
                        d.device_name, d.max_work_group_size, d.local_mem_bytes
                    );
                }
                Exit::Success
            }
            Err(e) => {
                emit_plain(&e);
                Exit::Environment
            }
        }
    }

    /// What happened for one device and n.
    enum Outcome {
        Tested(Box<ScanReport>, Option<BaselineReport>),
        /// The size does not fit this device's single work-group (not a verdict).
        Skipped(String),
    }

    struct Row<'d> {
        device: &'d DeviceInfo,
        n: u32,
        outcome: Outcome,
    }

    pub fn scan_test(args: &ScanTestArgs) -> Exit {
        let (source, parsed, _checked) = match super::super::front_end(&args.file) {
            Ok(x) => x,
            Err(exit) => return exit,
        };
        let kernel = match codegen::generate(&parsed.program) {
            Ok(kernel) => kernel,
            Err(e) => {
                emit(&source, e);
                return Exit::BadInput;
            }
        };
        let sizes = match (args.n.as_slice(), &args.n_range) {
            ([_, ..], _) => args.n.clone(),
            ([], Some(range)) => match parse_range(range) {
                Ok(sizes) => sizes,
                Err(e) => {
                    emit_plain(e);
                    return Exit::BadInput;
                }
            },
            ([], None) => vec![64],
        };
        // The proof covers the sizes the kernel's precondition allows: test only those.
        for &n in &sizes {
            if let Err(e) = kernel.check_size(i64::from(n)) {
                emit_plain(format_args!(
                    "{}:{}: refused: {e}; choose a size the precondition allows",
                    source.name,
                    crate::commands::verify::position(&source, e.span)
                ));
                return Exit::BadInput;
            }
        }
        let kind = match args.kind {
            ScanKind::Inclusive => Kind::Inclusive,
            ScanKind::Exclusive => Kind::Exclusive,
        };
        let devices = match platform::select(args.platform.as_deref()) {
            Ok(devices) => devices,
            Err(e) => {
                emit_plain(&e);
                return Exit::Environment;
            }
        };

        let mut rows = Vec::new();
        for device in &devices {
            let mut harness = match Harness::new(device) {
                Ok(h) => h,
                Err(e) => {
                    emit_plain(format_args!("{}: {e}", device.device_name));
                    return Exit::Environment;
                }
            };
            harness.set_max_block(args.max_block);
            for &n in &sizes {
                match run_one(&harness, &kernel, n, kind, args.baseline) {
                    Ok(outcome) => rows.push(Row { device, n, outcome }),
                    Err(e) => {
                        emit_plain(format_args!("{} (n = {n}): {e}", device.device_name));
                        return Exit::Environment;
                    }
                }
            }
        }

        let race = race_freedom(&source, &parsed.program, &kernel);
        let tested: Vec<&ScanReport> = rows
            .iter()
            .filter_map(|r| match &r.outcome {
                Outcome::Tested(report, _) => Some(report.as_ref()),
                Outcome::Skipped(_) => None,
            })
            .collect();
        let all_passed = tested
            .iter()
            .all(|r| r.interval.passed() && r.integer.mismatches == 0);
        let self_checks_caught = tested.iter().all(|r| r.self_check_caught());
        let skipped = rows.len() - tested.len();
        let verdict = verdict::combine(&race, all_passed);

        let skipped_note = if skipped > 0 {
            format!("; {skipped} of the device/size pairs were not tested (see the table)")
        } else {
            String::new()
        };
        let (exit, message) = if !self_checks_caught {
            (
                Exit::Environment,
                Some(
                    "internal error: the swapped-operand self-check passed the interval test, \
                     so the test cannot be trusted on this device"
                        .to_string(),
                ),
            )
        } else {
            match &verdict {
                Verdict::Fail => (
                    Exit::Negative,
                    Some("scan test failed: the kernel is not a correct prefix scan".into()),
                ),
                _ if tested.is_empty() => (
                    Exit::Environment,
                    Some("no size could be tested on the selected devices".into()),
                ),
                Verdict::Pass if skipped == 0 => (
                    Exit::Success,
                    Some(format!(
                        "pass: the checker proved the kernel race-free and its arithmetic free of \
                         32-bit overflow for every N its precondition allows, and the interval \
                         test passed at all {} device/size pairs",
                        tested.len()
                    )),
                ),
                Verdict::Pass => (
                    Exit::Inconclusive,
                    Some(format!("inconclusive: race-free and passed{skipped_note}")),
                ),
                Verdict::Refused { reason } => (
                    Exit::Negative,
                    Some(format!(
                        "refused: the interval test passed on every tested device and size, \
                         but the checker's half failed: {reason}"
                    )),
                ),
                Verdict::Inconclusive { reason } => (
                    Exit::Inconclusive,
                    Some(format!(
                        "inconclusive: the interval test passed on every tested device and \
                         size, but {reason}{skipped_note}"
                    )),
                ),
            }
        };

        if args.json {
            let mut document = document(args, &kernel, &race, &rows, &verdict);
            document["exit_code"] = json!(exit as u8);
            document["message"] = json!(message);
            println!(
                "{}",
                serde_json::to_string_pretty(&document).unwrap_or_default()
            );
        } else {
            print_table(&args.file, &kernel, kind == Kind::Exclusive, &rows);
        }
        match message {
            Some(message) if matches!(exit, Exit::Success) => eprintln!("{message}"),
            Some(message) => emit_plain(message),
            None => {}
        }
        exit
    }

    /// The checker's half, for every N the kernel's precondition allows (the sizes tested
    /// were checked against it): race freedom and the 32-bit arithmetic of the generated
    /// OpenCL (`verify --int32`, the element combinations code generation emits as `OP`
    /// exempt). A failed obligation refutes the kernel, naming which proof failed, where, and
    /// Z3's values; an unknown or unencoded routine leaves it unproved.
    fn race_freedom(source: &Source, program: &Program, kernel: &Kernel) -> RaceFreedom {
        use alpinist_core::verify::{
            verify_program_with, Int32, Limits, Outcome as Checked, Status,
        };
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let int32 = Int32 {
            exempt: kernel.element_ops.clone(),
        };
        let reports = verify_program_with(program, &Limits::default(), Some(&int32), jobs);
        let mut failed = Vec::new();
        for r in &reports {
            for o in &r.obligations {
                let Status::Failed { model } = &o.status else {
                    continue;
                };
                let half = if crate::commands::verify::is_int32(o) {
                    "32-bit arithmetic"
                } else {
                    "race freedom"
                };
                let what = o
                    .note
                    .clone()
                    .unwrap_or_else(|| o.kind.describe().to_string());
                let values: Vec<String> = model.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                failed.push(format!(
                    "{half}: {} {what} at {}:{}{}",
                    o.kind.code(),
                    source.name,
                    crate::commands::verify::position(source, o.span),
                    if values.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", values.join(", "))
                    }
                ));
            }
        }
        if !failed.is_empty() {
            return RaceFreedom::Refuted {
                reason: format!("{}; run `alpinist verify --int32`", failed.join("; ")),
            };
        }
        let not_verified: Vec<String> = reports
            .iter()
            .filter(|r| r.outcome() != Checked::Verified)
            .map(|r| format!("`{}` {:?}", r.name, r.outcome()).to_lowercase())
            .collect();
        if not_verified.is_empty() {
            RaceFreedom::Proved
        } else {
            RaceFreedom::NotProved {
                reason: format!(
                    "the checker did not verify the kernel ({}); run `alpinist verify --int32`",
                    not_verified.join(", ")
                ),
            }
        }
    }

    fn run_one(
        harness: &Harness,
        kernel: &Kernel,
        n: u32,
        kind: Kind,
        baseline: Option<Baseline>,
    ) -> Result<Outcome, HarnessError> {
        let report = match harness.scan_test(kernel, n, kind) {
            Ok(report) => report,
            Err(
                e @ (HarnessError::TooLarge { .. }
                | HarnessError::LocalMemory { .. }
                | HarnessError::EmptyLaunch { .. }),
            ) => return Ok(Outcome::Skipped(e.to_string())),
            Err(e) => return Err(e),
        };
        let baseline = match baseline {
            None => Ok(None),
            Some(Baseline::Voigtlaender) => harness.voigtlaender(kernel, n, kind).map(Some),
            Some(Baseline::Random) => harness.random(kernel, n, kind).map(Some),
        };
        let baseline = match baseline {
            // The baselines run one work-group per input.
            Err(e @ (HarnessError::TooLarge { .. } | HarnessError::LocalMemory { .. })) => {
                emit_plain(format_args!("baseline not run: {e}"));
                None
            }
            other => other?,
        };
        Ok(Outcome::Tested(Box::new(report), baseline))
    }

    fn ms(ns: u64) -> String {
        format!("{:.3}", ns as f64 / 1e6)
    }

    fn print_table(file: &std::path::Path, kernel: &Kernel, exclusive: bool, rows: &[Row]) {
        println!(
            "{}: kernel `{}`, generated source {:016x}",
            file.display(),
            kernel.method,
            kernel.source_hash()
        );
        println!("device | n | interval | integer | self-check | kernel ms | total ms (incl. compile) | baseline");
        for row in rows {
            let device = &row.device.device_name;
            match &row.outcome {
                Outcome::Skipped(reason) => {
                    println!("{device} | {} | skipped: {reason}", row.n)
                }
                Outcome::Tested(r, baseline) => {
                    let interval = match r.interval.first_bad {
                        None => "pass".to_string(),
                        Some((k, word)) => format!(
                            "FAIL ({} cells; output {k} is {}, expected {})",
                            r.interval.bad_cells,
                            interval::show(word),
                            interval::show(interval::expected(k, exclusive))
                        ),
                    };
                    let integer = if r.integer.mismatches == 0 {
                        "pass".to_string()
                    } else {
                        format!("FAIL ({} cells)", r.integer.mismatches)
                    };
                    let self_check = match r.self_check {
                        None => "n/a (no output combines two inputs)",
                        Some(o) if !o.passed() => "caught",
                        Some(_) if !r.interval.passed() => "passed (moot: the kernel failed)",
                        Some(_) => "NOT CAUGHT",
                    };
                    let baseline = match baseline {
                        None => "-".to_string(),
                        Some(b) => format!(
                            "{} runs, {} failed, kernel {} ms, total {} ms",
                            b.runs,
                            b.failed_runs,
                            ms(b.timing.kernel_ns),
                            ms(b.timing.total_ns)
                        ),
                    };
                    println!(
                        "{device} | {} | {interval} | {integer} | {self_check} | {} | {} | {baseline}",
                        if r.plan.groups > 1 {
                            format!("{} ({} groups of {})", r.n, r.plan.groups, r.plan.block)
                        } else {
                            r.n.to_string()
                        },
                        ms(r.interval_timing.kernel_ns),
                        ms(r.interval_timing.total_ns),
                    );
                }
            }
        }
    }

    fn document(
        args: &ScanTestArgs,
        kernel: &Kernel,
        race: &RaceFreedom,
        rows: &[Row],
        verdict: &Verdict,
    ) -> Value {
        let race = match race {
            RaceFreedom::Proved => json!({ "status": "proved" }),
            RaceFreedom::Refuted { reason } => {
                json!({ "status": "refuted", "reason": reason })
            }
            RaceFreedom::NotProved { reason } => {
                json!({ "status": "not_proved", "reason": reason })
            }
            RaceFreedom::NotChecked { reason } => {
                json!({ "status": "not_checked", "reason": reason })
            }
        };
        let results: Vec<Value> = rows
            .iter()
            .map(|row| {
                let mut v = json!({
                    "platform": row.device.platform_name,
                    "device": row.device.device_name,
                    "n": row.n,
                });
                match &row.outcome {
                    Outcome::Skipped(reason) => {
                        v["status"] = json!("skipped");
                        v["reason"] = json!(reason);
                    }
                    Outcome::Tested(r, baseline) => {
                        v["status"] = json!("tested");
                        v["work_items"] = json!(r.plan.work_items);
                        v["groups"] = json!(r.plan.groups);
                        v["block"] = json!(r.plan.block);
                        v["interval"] = json!({
                            "passed": r.interval.passed(),
                            "bad_cells": r.interval.bad_cells,
                            "first_bad": r.interval.first_bad.map(|(k, w)| json!({
                                "index": k, "found": interval::show(w)
                            })),
                            "kernel_ns": r.interval_timing.kernel_ns,
                            "compile_ns": r.interval_timing.compile_ns,
                            "total_ns": r.interval_timing.total_ns,
                        });
                        v["integer"] = json!({
                            "passed": r.integer.mismatches == 0,
                            "mismatches": r.integer.mismatches,
                            "seed": r.integer.seed,
                        });
                        v["self_check"] = match r.self_check {
                            None => json!({ "applicable": false }),
                            Some(o) => json!({
                                "applicable": true,
                                "swapped_failed": !o.passed(),
                                "trusted": r.self_check_caught(),
                            }),
                        };
                        v["baseline"] = match (baseline, args.baseline) {
                            (Some(b), Some(which)) => json!({
                                "name": match which {
                                    Baseline::Voigtlaender => "voigtlaender",
                                    Baseline::Random => "random",
                                },
                                "runs": b.runs,
                                "failed_runs": b.failed_runs,
                                "kernel_ns": b.timing.kernel_ns,
                                "compile_ns": b.timing.compile_ns,
                                "total_ns": b.timing.total_ns,
                            }),
                            _ => Value::Null,
                        };
                    }
                }
                v
            })
            .collect();
        json!({
            "schema_version": 1,
            "file": args.file.display().to_string(),
            "kernel": kernel.method,
            "source_hash": format!("{:016x}", kernel.source_hash()),
            "kind": match args.kind {
                ScanKind::Inclusive => "inclusive",
                ScanKind::Exclusive => "exclusive",
            },
            "race_freedom": race,
            "results": results,
            "verdict": match verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Refused { .. } => "refused",
                Verdict::Inconclusive { .. } => "inconclusive",
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges_are_the_powers_of_two_inside() {
        assert_eq!(parse_range("2..16").unwrap(), [2, 4, 8, 16]);
        assert_eq!(parse_range("3..9").unwrap(), [4, 8]);
        assert!(parse_range("5..7").is_err());
        assert!(parse_range("8").is_err());
        assert!(parse_range("a..8").is_err());
    }
}
