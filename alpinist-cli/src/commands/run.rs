//! `alpinist run`: the differential test. Runs each kernel method of FILE on inputs that
//! satisfy its precondition — the original on the interpreter (the reference) and on every
//! OpenCL device, and the optimised version (from `--against OPT.pvl`, or from the file's
//! `gpuopt` annotations and the optimisation flags) on the interpreter and on every device —
//! and compares every output array and the result with the reference
//! ([`alpinist_core::differential`]).
//!
//! Exit codes: 0 when every run gives the reference's results; 1 for a mismatch (with the
//! first differing location, the seed and the sizes to replay it), a run that fails, or a
//! refused optimisation; 2 for bad input (the front end, a kernel code generation refuses,
//! an input that cannot be drawn, nothing to run); 4 for the environment (a platform named
//! with `--platform` missing, generated code that does not compile, a launch the device
//! refuses). Without an OpenCL platform (or without the `opencl` feature) only the
//! interpreter runs, and the output says so.

use std::path::PathBuf;
use std::time::Duration;

use alpinist_core::differential::{self, Case, CaseError, Input, Layout, Sizes};
use alpinist_core::interp::{self, InterpError, Limits, Outcome};
use alpinist_core::opencl::codegen::{self, IntWidth};
use alpinist_core::pipeline::{self, Stop};
use alpinist_core::syntax::{Param, Program, TypeKind};
use alpinist_core::transform::{Optimisation, Refusal};

use super::{front_end, optimise};
use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::Source;

/// The arguments of `alpinist run`.
#[derive(clap::Args)]
pub struct RunArgs {
    pub file: PathBuf,
    /// Compare with this version of the program (hand-written or optimised elsewhere) instead
    /// of the one the annotations and flags produce.
    #[arg(long, value_name = "OPT.pvl")]
    pub against: Option<PathBuf>,
    #[command(flatten)]
    pub inputs: Inputs,
    /// The OpenCL platforms: a name (case-insensitive substring) or `all`; default: the first
    /// platform with a device.
    #[arg(long, value_name = "P|all")]
    pub platform: Option<String>,
    #[command(flatten)]
    pub flags: optimise::Flags,
}

/// What a run runs on, shared by `run`, `bench` and `tune`: the methods, the sizes, the seed
/// of the drawn contents and the integer width.
#[derive(clap::Args, Clone)]
pub struct Inputs {
    /// Run only this method (`name` or `Class.name`); default: every method (those that
    /// cannot run and have no par block are listed as skipped).
    #[arg(long, value_name = "M")]
    pub method: Option<String>,
    /// An integer input or a length: `n=128`, `a.length=100`, `m[0].length=8` (a matrix's
    /// columns) (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// The seed of the drawn array contents (printed with every mismatch).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// PVL's `int` as OpenCL `long` (64 bits) instead of `int`.
    #[arg(long)]
    pub int64: bool,
}

/// The arguments of `alpinist bench`: `run`'s, and how many timed runs each version gets on
/// each device.
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Timed runs per version and device, after one untimed warm-up run (1 to 10,000).
    #[arg(long, value_name = "R", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub reps: u32,
    /// One JSON document on stdout (`schema_version` 1: per method its input, per version and
    /// device the timings in milliseconds, the speed-ups); the lines go to stderr.
    #[arg(long)]
    pub json: bool,
}

/// What `bench` (and `tune`) add to `run`.
#[derive(Clone, Copy)]
pub(crate) struct Timing {
    pub(crate) reps: u32,
    /// `bench --json`: the document on stdout.
    pub(crate) json: bool,
    /// The result lines on stderr (stdout holds `bench --json`'s document, or `tune`'s
    /// program).
    pub(crate) lines_to_stderr: bool,
}

/// Where the result lines go: stdout, or stderr where stdout is `bench --json`'s document or
/// `tune`'s program.
#[derive(Clone, Copy)]
struct Text {
    to_stderr: bool,
}

impl Text {
    fn say(self, line: std::fmt::Arguments) {
        if self.to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// One program under test: the original or the optimised version.
pub(crate) struct Version {
    pub(crate) label: String,
    pub(crate) source: Source,
    pub(crate) program: Program,
    /// The matrices of the original this version stores as one array (matrix
    /// linearisation), compared through their layout.
    pub(crate) layouts: Vec<Layout>,
}

pub fn run(args: &RunArgs) -> Exit {
    run_timed(args, None)
}

/// `alpinist bench`: [`run`], and every device run that gives the reference's results is
/// timed `reps` times. Without an OpenCL device there is nothing to time: exit 4.
pub fn bench(args: &BenchArgs) -> Exit {
    run_timed(
        &args.run,
        Some(Timing {
            reps: args.reps,
            json: args.json,
            lines_to_stderr: args.json,
        }),
    )
}

/// [`run`], timing each device run where `timing` says.
fn run_timed(args: &RunArgs, timing: Option<Timing>) -> Exit {
    let (source, parsed) = match front_end_of_runs(&args.file) {
        Ok(x) => x,
        Err(exit) => return exit,
    };
    // Reported before any optimisation runs.
    if let Err(message) = parse_sets(&args.inputs.set) {
        emit_plain(message);
        return Exit::BadInput;
    }
    let original = Version {
        label: "original".into(),
        source: source.clone(),
        program: named_apart(parsed.program.clone()),
        layouts: Vec::new(),
    };
    let optimised = match optimised_version(args, &source, &parsed) {
        Ok(v) => v,
        Err(exit) => return exit,
    };
    let devices = match devices::select(args.platform.as_deref()) {
        Ok(d) => d,
        Err(exit) => return exit,
    };
    if timing.is_some() && devices.is_empty() {
        emit_plain("`bench` times kernels on OpenCL devices, and there is none here");
        return Exit::Environment;
    }
    let mut records = Vec::new();
    let exit = run_versions(
        args,
        &original,
        optimised.as_slice(),
        &devices,
        timing,
        &mut records,
        &mut Vec::new(),
    );
    if let Some(Timing {
        reps, json: true, ..
    }) = timing
    {
        let doc = serde_json::json!({
            "schema_version": 1,
            "command": "bench",
            "file": source.name,
            "reps": reps,
            "methods": records,
            "exit": exit as u8,
        });
        println!("{doc:#}");
    }
    exit
}

/// The front end of the commands that run programs (`run`, `bench`, `tune`): a misplaced or
/// malformed `gpuopt` line is bad input here, as for `optimise`.
pub(crate) fn front_end_of_runs(
    file: &std::path::Path,
) -> Result<(Source, alpinist_core::syntax::Parsed), Exit> {
    let (source, parsed, checked) = front_end(file)?;
    if !checked.gpuopt_errors.is_empty() {
        for e in checked.gpuopt_errors {
            emit(&source, e);
        }
        return Err(Exit::BadInput);
    }
    Ok((source, parsed))
}

/// `tune`'s timing: [`run_versions`] with the timings of every version that gave the
/// reference's results appended to `timed`, the lines on stderr when `timing` says so.
pub(crate) fn time_versions(
    args: &RunArgs,
    original: &Version,
    others: &[Version],
    devices: &[devices::Device],
    timing: Timing,
    timed: &mut Vec<TimedRun>,
) -> Exit {
    run_versions(
        args,
        original,
        others,
        devices,
        Some(timing),
        &mut Vec::new(),
        timed,
    )
}

/// Runs (and with `timing`, times) every method `args` selects — `--method`, else every
/// runnable one — in the original and the other versions on the interpreter and `devices`.
fn run_versions(
    args: &RunArgs,
    original: &Version,
    others: &[Version],
    devices: &[devices::Device],
    timing: Option<Timing>,
    records: &mut Vec<serde_json::Value>,
    timed: &mut Vec<TimedRun>,
) -> Exit {
    let sizes = match parse_sets(&args.inputs.set) {
        Ok(set) => Sizes {
            set,
            ..Sizes::default()
        },
        Err(message) => {
            emit_plain(message);
            return Exit::BadInput;
        }
    };
    // A named method and every kernel must run; another method that cannot is listed as
    // skipped, with the reason.
    let methods: Vec<(String, bool)> = match &args.inputs.method {
        Some(m) => vec![(m.clone(), true)],
        None => differential::runnable_methods(&original.program)
            .into_iter()
            .map(|r| (r.name, r.kernel))
            .collect(),
    };
    if methods.is_empty() {
        emit_plain(format_args!("{}: no method to run", original.source.name));
        return Exit::BadInput;
    }
    let width = if args.inputs.int64 {
        IntWidth::Bits64
    } else {
        IntWidth::Bits32
    };
    let mut exit = Exit::Success;
    for (method, strict) in &methods {
        let outcome = run_method(
            method, *strict, original, others, &sizes, args, width, devices, timing, records, timed,
        );
        exit = exit.max(outcome);
        if outcome == Exit::BadInput || outcome == Exit::Environment {
            break;
        }
    }
    exit
}

/// `NAME=VALUE` → (NAME, VALUE).
fn parse_sets(sets: &[String]) -> Result<Vec<(String, i128)>, String> {
    sets.iter()
        .map(|s| {
            let (name, value) = s
                .split_once('=')
                .ok_or_else(|| format!("`--set {s}`: expected NAME=VALUE, e.g. `n=128`"))?;
            let value = value
                .trim()
                .parse::<i128>()
                .map_err(|_| format!("`--set {s}`: `{value}` is not an integer"))?;
            Ok((name.trim().to_string(), value))
        })
        .collect()
}

/// The optimised version: `--against`, else the annotations and flags through the pipeline
/// (without reverification: `optimise` proves; `run` tests), else none.
fn optimised_version(
    args: &RunArgs,
    source: &Source,
    parsed: &alpinist_core::syntax::Parsed,
) -> Result<Option<Version>, Exit> {
    let flags = optimise::flag_optimisations(&args.flags).map_err(|message| {
        emit_plain(message);
        Exit::BadInput
    })?;
    if let Some(path) = &args.against {
        if !flags.is_empty() {
            emit_plain("`--against` compares with a given version: give no optimisation flags");
            return Err(Exit::BadInput);
        }
        let (source, parsed, _) = front_end(path)?;
        return Ok(Some(Version {
            label: "optimised".into(),
            source,
            program: named_apart(parsed.program),
            layouts: Vec::new(),
        }));
    }
    let requests = match pipeline::plan(&parsed.program, flags, args.flags.var.as_deref()) {
        Ok(requests) => requests,
        // No annotation and no flag: the original alone is run.
        Err(pipeline::PlanError::Nothing) => return Ok(None),
        Err(e) => {
            emit_plain(e.message(&|span| {
                let (l, c) = alpinist_core::syntax::line_col(&source.text, span.start as usize);
                format!("{l}:{c}")
            }));
            return Err(Exit::BadInput);
        }
    };
    let settings = pipeline::Settings {
        verify: false,
        verify_input: true,
        limits: Default::default(),
        jobs: 1,
        cache: None,
        int32: None,
    };
    let layouts = layouts_of(&requests);
    match pipeline::run(&parsed.program, &parsed.trivia, &requests, &settings) {
        Ok(done) => {
            let optimised = Source::single(format!("{} (optimised)", source.name), done.text);
            match alpinist_core::syntax::parse(&optimised.text) {
                Ok(p) => Ok(Some(Version {
                    label: "optimised".into(),
                    source: optimised,
                    program: named_apart(p.program),
                    layouts,
                })),
                Err(_) => {
                    emit_plain("the optimised program does not parse (a bug of alpinist)");
                    Err(Exit::Environment)
                }
            }
        }
        Err(Stop::Refused { refusal, .. }) => {
            let exit = if matches!(*refusal, Refusal::NotImplemented { .. }) {
                Exit::BadInput
            } else {
                Exit::Negative
            };
            emit(source, *refusal);
            Err(exit)
        }
        Err(other) => {
            emit_plain(format_args!(
                "the optimisation did not produce a program (a bug of alpinist): {other:?}"
            ));
            Err(Exit::Environment)
        }
    }
}

/// The case of `method` with the original's run on `device` as its reference, for sizes
/// beyond the interpreter's limits (`bits`: `width`'s integers): a method with par blocks
/// only, whose host code — and with it the entry precondition that admits the input — runs
/// on the interpreter.
#[allow(clippy::too_many_arguments)]
fn reference_on_device(
    original: &Version,
    method: &str,
    sizes: &Sizes,
    args: &RunArgs,
    width: IntWidth,
    bits: u32,
    device: &devices::Device,
    limits: &Limits,
) -> Result<Case, CaseError> {
    let kernels = codegen::generate_method(&original.program, method, width).map_err(|e| {
        CaseError::NotRunnable {
            error: e.to_string(),
        }
    })?;
    if kernels.launches.iter().any(|l| {
        matches!(
            l.shape,
            alpinist_core::opencl::codegen::ThreadShape::Single { .. }
        )
    }) {
        return Err(CaseError::BeyondLimits {
            error: "a method without a par block runs as one work-item, where nothing checks \
                    its precondition: give smaller sizes"
                .into(),
        });
    }
    differential::admitted_case_with(
        &original.program,
        method,
        sizes,
        args.inputs.seed,
        bits,
        limits,
        &mut |input, checked| {
            // The precondition on the interpreter; the run with its par blocks on the device
            // (a run that launches checks no specifications).
            let ghosts = input.ghost_values();
            let memory = input.memory.clone();
            interp::admits(
                &original.program,
                method,
                &input.args,
                &ghosts,
                memory,
                checked,
            )?;
            let unchecked = Limits {
                check_specs: false,
                ..checked.clone()
            };
            match devices::run(device, &kernels, &original.program, input, &unchecked) {
                Ok(outcome) => Ok(outcome),
                Err(DeviceFailure::Run(e)) => Err(e),
                Err(DeviceFailure::Environment(message)) => Err(InterpError::Launch {
                    message,
                    span: original.program.span,
                }),
            }
        },
    )
}

/// The matrices `requests` store as one array (matrix linearisation), with their layouts.
pub(crate) fn layouts_of(requests: &[pipeline::Request]) -> Vec<Layout> {
    requests
        .iter()
        .filter_map(|r| match &r.optimisation {
            Optimisation::Linearise { matrix, order, .. } => Some(Layout {
                param: matrix.clone(),
                order: *order,
            }),
            _ => None,
        })
        .collect()
}

/// Runs one method everywhere. Not `strict`: what stops it before a comparison (an input
/// that cannot be drawn, a construct the interpreter or the generator does not take) is a
/// `skipped` line, not an error.
#[allow(clippy::too_many_arguments)]
fn run_method(
    method: &str,
    strict: bool,
    original: &Version,
    others: &[Version],
    sizes: &Sizes,
    args: &RunArgs,
    width: IntWidth,
    devices: &[devices::Device],
    timing: Option<Timing>,
    records: &mut Vec<serde_json::Value>,
    timed_out: &mut Vec<TimedRun>,
) -> Exit {
    let text = Text {
        to_stderr: timing.is_some_and(|t| t.lines_to_stderr),
    };
    let mut limits = Limits::default();
    let bits = match width {
        IntWidth::Bits32 => 32,
        IntWidth::Bits64 => 64,
    };
    // The reference: the original on the interpreter, or where that is beyond its limits,
    // the original on the first device (its host code still on the interpreter).
    let mut reference_device: Option<&devices::Device> = None;
    let admitted = match differential::admitted_case(
        &original.program,
        method,
        sizes,
        args.inputs.seed,
        bits,
        &limits,
    ) {
        Err(CaseError::BeyondLimits { .. }) if !devices.is_empty() => {
            limits = limits.beyond_the_interpreter();
            reference_device = Some(&devices[0]);
            reference_on_device(
                original,
                method,
                sizes,
                args,
                width,
                bits,
                &devices[0],
                &limits,
            )
        }
        other => other,
    };
    let case = match admitted {
        Ok(case) => case,
        Err(e @ CaseError::OriginalFails { .. }) => {
            emit_plain(format_args!("{method}: {e}"));
            return Exit::Negative;
        }
        Err(e) => return stopped(text, method, strict, &e.to_string()),
    };
    let Some((_, m)) = differential::find_method(&original.program, method) else {
        return Exit::BadInput;
    };
    let params = m.params.clone();
    let mut versions = vec![original];
    for v in others {
        let Some((_, om)) = differential::find_method(&v.program, method) else {
            return stopped(
                text,
                method,
                strict,
                &format!("the {} version has no such method", v.label),
            );
        };
        if !same_signature(&params, &om.params, &v.layouts) {
            return stopped(
                text,
                method,
                strict,
                &format!(
                    "the {} version's parameters differ from the original's (other than a \
                     matrix the file's linearisation stores as one array)",
                    v.label
                ),
            );
        }
        versions.push(v);
    }
    let line = Line {
        label: versions
            .iter()
            .map(|v| v.label.len())
            .max()
            .unwrap_or(0)
            .max(10),
        column: devices
            .iter()
            .map(|d| d.name().len())
            .chain([INTERPRETER.len()])
            .max()
            .unwrap_or(0),
        replay: replay_command(args, method, &case),
        text,
    };
    let input = differential::show_input(&case.input);
    text.say(format_args!("{method} ({input})"));
    let reference_on = reference_device.map_or(INTERPRETER.to_string(), |d| d.name());
    text.say(format_args!(
        "  {:<l$} {:<w$}  reference",
        "original",
        reference_on,
        l = line.label,
        w = line.column
    ));
    let mut exit = Exit::Success;
    // (version, device, timings) of each timed run, for the speed-ups.
    let mut timed: Vec<(&str, String, Timings)> = Vec::new();
    for version in versions {
        let (version_args, memory) = differential::lay_out(&params, &case.input, &version.layouts);
        let run_case = differential::Case {
            input: differential::Input {
                args: version_args,
                memory,
                ..case.input.clone()
            },
            reference: case.reference.clone(),
        };
        let compared = Compared {
            params: &params,
            case: &case,
            args: &run_case.input.args,
            layouts: &version.layouts,
        };
        if version.label != original.label && reference_device.is_some() {
            // Verified versions (`tune`'s) are free of out-of-bounds accesses; any other is
            // run on the devices without the interpreter's screening at these sizes.
            text.say(format_args!(
                "  {:<l$} {INTERPRETER:<w$}  skipped: beyond its limits",
                version.label,
                l = line.label,
                w = line.column
            ));
        } else if version.label != original.label {
            let run = interp::run(
                &version.program,
                method,
                &run_case.input.args,
                run_case.input.memory.clone(),
                &limits,
            );
            let failed = run.is_err();
            exit = exit.max(line.report(version, INTERPRETER, run, &compared));
            if failed {
                // An out-of-bounds access or a division by zero the interpreter stopped at
                // is undefined behaviour on a device: it is not run there.
                line.skipped(
                    version,
                    devices,
                    "it did not run to its end on the interpreter",
                );
                continue;
            }
        }
        if let Some(why) = host_only_param(&version.program, method) {
            line.skipped(version, devices, &why);
            continue;
        }
        // Generated even without a device, so that a kernel the generator refuses is
        // reported wherever `run` runs.
        let kernels = match codegen::generate_method(&version.program, method, width) {
            Ok(k) => k,
            Err(e) if strict => {
                emit(&version.source, e);
                return Exit::BadInput;
            }
            Err(e) => {
                line.skipped(version, devices, &e.to_string());
                continue;
            }
        };
        for device in devices {
            let run =
                match devices::run(device, &kernels, &version.program, &run_case.input, &limits) {
                    Ok(outcome) => Ok(outcome),
                    Err(DeviceFailure::Environment(message)) => {
                        emit_plain(format_args!("{}: {message}", device.name()));
                        return Exit::Environment;
                    }
                    Err(DeviceFailure::Run(e)) => Err(e),
                };
            let reported = line.report(version, &device.name(), run, &compared);
            exit = exit.max(reported);
            let Some(Timing { reps, .. }) = timing.filter(|_| reported == Exit::Success) else {
                continue;
            };
            let bar = crate::progress::bar(
                u64::from(reps) + 1,
                format!("timing {} on {}", version.label, device.name()),
            );
            let timed_runs = devices::time(
                device,
                &kernels,
                &version.program,
                &run_case.input,
                &limits,
                reps,
                &|| bar.inc(1),
            );
            bar.finish_and_clear();
            match timed_runs {
                Ok(samples) => {
                    let timings = Timings::of(&samples);
                    line.timing(&timings);
                    timed.push((&version.label, device.name(), timings));
                }
                Err(DeviceFailure::Environment(message)) => {
                    emit_plain(format_args!("{}: {message}", device.name()));
                    return Exit::Environment;
                }
                Err(DeviceFailure::Run(e)) => {
                    text.say(format_args!(
                        "  {:<l$} {:<w$}  fails when timed",
                        version.label,
                        device.name(),
                        l = line.label,
                        w = line.column
                    ));
                    emit(&version.source, e);
                    exit = exit.max(Exit::Negative);
                }
            }
        }
    }
    let mut speed_ups = Vec::new();
    let originals = timed.iter().filter(|(label, ..)| *label == original.label);
    for (_, device, before) in originals {
        let others = timed
            .iter()
            .filter(|(label, d, _)| *label != original.label && d == device);
        for (label, _, after) in others {
            let kernel = ratio(before.kernel.median, after.kernel.median);
            let end_to_end = ratio(before.end_to_end.median, after.end_to_end.median);
            text.say(format_args!(
                "  {:<l$} {device:<w$}  kernel {kernel:.2}x, end to end {end_to_end:.2}x (original / {label}, medians)",
                "speed-up",
                l = line.label,
                w = line.column
            ));
            speed_ups.push(serde_json::json!({
                "device": device,
                "version": label,
                "kernel": finite(kernel),
                "end_to_end": finite(end_to_end),
            }));
        }
    }
    for (version, device, t) in &timed {
        timed_out.push(TimedRun {
            method: method.to_string(),
            version: version.to_string(),
            device: device.clone(),
            kernel: t.kernel.median,
        });
    }
    if exit != Exit::Success {
        text.say(format_args!("  replay: {}", line.replay));
    }
    if timing.is_some() {
        let runs: Vec<serde_json::Value> = timed
            .iter()
            .map(|(version, device, t)| {
                serde_json::json!({
                    "version": version,
                    "device": device,
                    "runs": t.runs,
                    "kernel_ms": t.kernel.json(),
                    "end_to_end_ms": t.end_to_end.json(),
                })
            })
            .collect();
        records.push(serde_json::json!({
            "method": method,
            "input": input,
            "timed": runs,
            "speed_ups": speed_ups,
            "exit": exit as u8,
        }));
    }
    exit
}

/// One version of one method timed on one device: the median of its kernel times.
pub(crate) struct TimedRun {
    pub(crate) method: String,
    pub(crate) version: String,
    pub(crate) device: String,
    pub(crate) kernel: Duration,
}

/// A ratio for JSON: `null` where there is none (NaN).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

const INTERPRETER: &str = "interpreter";

/// One timed run: the device's time in the kernels (profiling) and the whole run (host code
/// on the interpreter, copies to and from the device, the kernels).
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub kernel: Duration,
    pub end_to_end: Duration,
}

/// Median, fastest and slowest of a series.
#[derive(Clone, Copy, Debug)]
struct Spread {
    median: Duration,
    min: Duration,
    max: Duration,
}

impl Spread {
    /// `{"median", "min", "max"}` in milliseconds.
    fn json(&self) -> serde_json::Value {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        serde_json::json!({
            "median": ms(self.median),
            "min": ms(self.min),
            "max": ms(self.max),
        })
    }

    fn of(mut xs: Vec<Duration>) -> Spread {
        xs.sort();
        let median = match xs.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => xs[n / 2],
            n => (xs[n / 2 - 1] + xs[n / 2]) / 2,
        };
        Spread {
            median,
            min: xs.first().copied().unwrap_or_default(),
            max: xs.last().copied().unwrap_or_default(),
        }
    }
}

/// The timings of one version on one device.
#[derive(Clone, Copy, Debug)]
struct Timings {
    runs: usize,
    kernel: Spread,
    end_to_end: Spread,
}

impl Timings {
    fn of(samples: &[Sample]) -> Timings {
        Timings {
            runs: samples.len(),
            kernel: Spread::of(samples.iter().map(|s| s.kernel).collect()),
            end_to_end: Spread::of(samples.iter().map(|s| s.end_to_end).collect()),
        }
    }
}

/// `a / b`, with a zero time (a kernel too short for the profiling clock) as no ratio.
fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        f64::NAN
    } else {
        a.as_secs_f64() / b.as_secs_f64()
    }
}

/// A duration in milliseconds, three decimals.
pub(crate) fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// How result lines are laid out, and the replay command they print.
struct Line {
    /// The width of the version column.
    label: usize,
    /// The width of the "where it ran" column.
    column: usize,
    replay: String,
    text: Text,
}

impl Line {
    /// Prints the timings of the run reported just before.
    fn timing(&self, t: &Timings) {
        self.text.say(format_args!(
            "  {:<l$} {:<w$}  kernel {} (min {}, max {}), end to end {} (min {}, max {}), {} runs",
            "",
            "",
            ms(t.kernel.median),
            ms(t.kernel.min),
            ms(t.kernel.max),
            ms(t.end_to_end.median),
            ms(t.end_to_end.min),
            ms(t.end_to_end.max),
            t.runs,
            l = self.label,
            w = self.column
        ));
    }

    /// Prints a `skipped` line for each device.
    fn skipped(&self, version: &Version, devices: &[devices::Device], why: &str) {
        for device in devices {
            self.text.say(format_args!(
                "  {:<l$} {:<w$}  skipped: {why}",
                version.label,
                device.name(),
                l = self.label,
                w = self.column
            ));
        }
    }

    /// Prints one run's line.
    fn report(
        &self,
        version: &Version,
        on: &str,
        run: Result<Outcome, InterpError>,
        compared: &Compared,
    ) -> Exit {
        let (l, w) = (self.label, self.column);
        match run {
            Ok(outcome) => match differential::compare(
                compared.params,
                (&compared.case.input.args, &compared.case.reference),
                (compared.args, &outcome),
                compared.layouts,
            ) {
                None => {
                    self.text
                        .say(format_args!("  {:<l$} {on:<w$}  same", version.label));
                    Exit::Success
                }
                Some(m) => {
                    self.text.say(format_args!(
                        "  {:<l$} {on:<w$}  differs: {} is {}, the reference gives {}",
                        version.label, m.location, m.got, m.expected
                    ));
                    Exit::Negative
                }
            },
            Err(e) => {
                // A failure of the program (out of bounds, a race, ...) is a negative; a
                // construct the interpreter does not model is bad input; a launch the device
                // refused is the environment.
                let (word, exit) = if e.is_failure() {
                    ("fails", Exit::Negative)
                } else if matches!(e, InterpError::Launch { .. }) {
                    ("fails", Exit::Environment)
                } else {
                    ("cannot run", Exit::BadInput)
                };
                self.text
                    .say(format_args!("  {:<l$} {on:<w$}  {word}", version.label));
                emit(&version.source, e);
                exit
            }
        }
    }
}

/// What a run is compared with: the reference, and the arguments the version ran on.
struct Compared<'a> {
    params: &'a [Param],
    case: &'a Case,
    args: &'a [alpinist_core::interp::Value],
    layouts: &'a [Layout],
}

/// The same parameter types, but where a layout stores a matrix of the original as one array.
fn same_signature(a: &[Param], b: &[Param], layouts: &[Layout]) -> bool {
    let ty = |p: &Param| alpinist_core::syntax::print_type(&p.ty);
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let laid_out =
                layouts.iter().any(|l| l.param == x.name.name) && ty(x) == format!("{}[]", ty(y));
            ty(x) == ty(y) || laid_out
        })
}

/// `program` with its overloads named apart as `verify` and the interpreter name them
/// (`C.bump(int, int)`), so that a method is listed, found and compared by one name.
pub(crate) fn named_apart(program: Program) -> Program {
    alpinist_core::check::resolve_overloads(&program).unwrap_or(program)
}

/// Why `method` runs on the interpreter only: a parameter a kernel cannot take — a matrix
/// (OpenCL's buffers are one-dimensional: it runs once linearised) or a sequence.
fn host_only_param(program: &Program, method: &str) -> Option<String> {
    let (_, m) = differential::find_method(program, method)?;
    m.params.iter().find_map(|p| match &p.ty.kind {
        TypeKind::Array { elem, .. } if matches!(elem.kind, TypeKind::Array { .. }) => {
            Some(format!(
                "`{}` is a matrix (linearise it to run it on a device)",
                p.name.name
            ))
        }
        TypeKind::Seq(_) => Some(format!(
            "`{}` is a sequence (a device takes arrays)",
            p.name.name
        )),
        _ => None,
    })
}

/// A method stopped before any comparison: an error (exit 2) when `strict`, else a
/// `skipped` line.
fn stopped(text: Text, method: &str, strict: bool, reason: &str) -> Exit {
    if strict {
        emit_plain(format_args!("{method}: {reason}"));
        Exit::BadInput
    } else {
        text.say(format_args!("{method}: skipped: {reason}"));
        Exit::Success
    }
}

/// The command line that replays this case (method, seed and every size).
fn replay_command(args: &RunArgs, method: &str, case: &Case) -> String {
    let mut parts = vec![
        "alpinist run".to_string(),
        args.file.display().to_string(),
        format!("--method {method}"),
        format!("--seed {}", case.input.seed),
    ];
    for size in &case.input.sizes {
        parts.push(format!("--set {}", size.replace(" = ", "=")));
    }
    if let Some(against) = &args.against {
        parts.push(format!("--against {}", against.display()));
    }
    if args.inputs.int64 {
        parts.push("--int64".into());
    }
    parts.join(" ")
}

/// Why a device run gave no outcome to compare.
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
enum DeviceFailure {
    /// The device or its compiler: exit 4.
    Environment(String),
    /// The run itself failed (in host code, or a launch): reported with its span.
    Run(InterpError),
}

#[cfg(feature = "opencl")]
pub(crate) mod devices {
    use alpinist_core::interp::{Limits, Outcome};
    use alpinist_core::opencl::codegen::MethodKernels;
    use alpinist_core::opencl::device_run::DeviceLauncher;
    use alpinist_core::opencl::platform::{self, DeviceInfo, PlatformError};
    use alpinist_core::syntax::Program;

    use std::time::Instant;

    use super::{DeviceFailure, Input, Sample};
    use crate::diagnostics::emit_plain;
    use crate::exit::Exit;

    pub struct Device(DeviceInfo);

    impl Device {
        pub fn name(&self) -> String {
            format!("{} / {}", self.0.platform_name, self.0.device_name)
        }
    }

    /// The devices `--platform` selects. Without a platform at all: none (the interpreter
    /// runs alone, said on stderr), unless `--platform` named one (exit 4).
    pub fn select(platform: Option<&str>) -> Result<Vec<Device>, Exit> {
        match platform::select(platform) {
            Ok(d) => Ok(d.into_iter().map(Device).collect()),
            Err(e @ (PlatformError::NoPlatform(_) | PlatformError::NoDevice))
                if platform.is_none() =>
            {
                eprintln!("note: {e}: only the interpreter runs");
                Ok(Vec::new())
            }
            Err(e) => {
                emit_plain(e);
                Err(Exit::Environment)
            }
        }
    }

    pub(super) fn run(
        device: &Device,
        kernels: &MethodKernels,
        program: &Program,
        input: &Input,
        limits: &Limits,
    ) -> Result<Outcome, DeviceFailure> {
        let mut launcher = DeviceLauncher::new(kernels, &device.0)
            .map_err(|e| DeviceFailure::Environment(e.to_string()))?;
        launcher
            .run(program, &input.args, input.memory.clone(), limits)
            .map_err(DeviceFailure::Run)
    }

    /// `reps` timed runs of the case after one untimed one (the program compiled once);
    /// `ran` after each run.
    pub(super) fn time(
        device: &Device,
        kernels: &MethodKernels,
        program: &Program,
        input: &Input,
        limits: &Limits,
        reps: u32,
        ran: &dyn Fn(),
    ) -> Result<Vec<Sample>, DeviceFailure> {
        let mut launcher = DeviceLauncher::new(kernels, &device.0)
            .map_err(|e| DeviceFailure::Environment(e.to_string()))?;
        let mut samples = Vec::new();
        for rep in 0..=reps {
            let kernel_before = launcher.kernel_time;
            let started = Instant::now();
            launcher
                .run(program, &input.args, input.memory.clone(), limits)
                .map_err(DeviceFailure::Run)?;
            ran();
            if rep > 0 {
                samples.push(Sample {
                    kernel: launcher.kernel_time - kernel_before,
                    end_to_end: started.elapsed(),
                });
            }
        }
        Ok(samples)
    }
}

#[cfg(not(feature = "opencl"))]
pub(crate) mod devices {
    use alpinist_core::interp::{Limits, Outcome};
    use alpinist_core::opencl::codegen::MethodKernels;
    use alpinist_core::syntax::Program;

    use super::{DeviceFailure, Input, Sample};
    use crate::exit::Exit;

    pub enum Device {}

    impl Device {
        pub fn name(&self) -> String {
            match *self {}
        }
    }

    /// Built without OpenCL: no device (said on stderr), unless `--platform` asked for one.
    pub fn select(platform: Option<&str>) -> Result<Vec<Device>, Exit> {
        eprintln!(
            "note: this alpinist was built without the `opencl` feature: only the interpreter \
             runs (rebuild with `cargo build --release --features opencl`)"
        );
        match platform {
            Some(_) => Err(Exit::Environment),
            None => Ok(Vec::new()),
        }
    }

    pub(super) fn run(
        device: &Device,
        _: &MethodKernels,
        _: &Program,
        _: &Input,
        _: &Limits,
    ) -> Result<Outcome, DeviceFailure> {
        match *device {}
    }

    pub(super) fn time(
        device: &Device,
        _: &MethodKernels,
        _: &Program,
        _: &Input,
        _: &Limits,
        _: u32,
        _: &dyn Fn(),
    ) -> Result<Vec<Sample>, DeviceFailure> {
        match *device {}
    }
}
