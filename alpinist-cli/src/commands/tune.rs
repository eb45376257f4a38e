//! `alpinist tune`: autotuning over verified variants. Enumerates the variants the flags'
//! lists describe (every combination of one value per flag, on top of the file's `gpuopt`
//! annotations), optimises and reverifies each through [`alpinist_core::pipeline`] (on
//! `--jobs` threads), drops those refused or not reverified, runs and times the rest with the
//! original through `bench`'s machinery on one OpenCL device, and writes the fastest verified
//! version — the original when nothing is faster — with a table of every candidate.
//!
//! Exit codes: 0 when a version was chosen; 1 when the input does not verify, or a verified
//! variant gives other results than the original (a bug of alpinist); 2 for bad input (the
//! front end, a flag, nothing to tune, too many variants); 3 when the input's verification is
//! inconclusive; 4 without an OpenCL device, or when the output cannot be written.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use alpinist_core::pipeline::{self, PlanError, Stop};
use alpinist_core::syntax::{line_col, Span};
use alpinist_core::verify::{Limits, Outcome};

use super::optimise::{self, Flags};
use super::run::{self, Inputs, RunArgs, TimedRun, Timing, Version};
use crate::diagnostics::emit_plain;
use crate::exit::Exit;
use crate::input::Source;

/// Why a reverified variant was not timed.
const NOT_TIMED: &str = "it did not give the original's results";

/// The most variants one run enumerates: each is optimised, reverified and timed.
const MAX_VARIANTS: usize = 64;

/// The arguments of `alpinist tune`.
#[derive(clap::Args)]
pub struct TuneArgs {
    pub file: PathBuf,
    /// Unrolling factors to try: `2,4,8`.
    #[arg(long, value_name = "K,..", value_delimiter = ',')]
    pub unroll: Vec<u32>,
    /// Iteration-merging factors to try: `2,4`.
    #[arg(long, value_name = "M,..", value_delimiter = ',')]
    pub merge: Vec<u32>,
    /// Tilings to try: `inter:16,32` or `intra:8` (repeatable: `--tile inter:32 --tile intra:32`).
    #[arg(long, value_name = "inter|intra:T,..")]
    pub tile: Vec<String>,
    /// Fusions to try: `2,2:4` (F consecutive kernels, on B work-groups).
    #[arg(long, value_name = "F[:B],..", value_delimiter = ',')]
    pub fuse: Vec<String>,
    /// The iteration variable of the loop `--unroll` and `--merge` target.
    #[arg(long = "loop", value_name = "VAR")]
    pub var: Option<String>,
    #[command(flatten)]
    pub inputs: Inputs,
    /// Timed runs per version, after one untimed warm-up run (1 to 10,000).
    #[arg(long, value_name = "R", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub reps: u32,
    /// Variants optimised and reverified at once (default: the number of cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: Option<u32>,
    /// The OpenCL platform whose first device times the versions (a case-insensitive
    /// substring of its name); default: the first platform with a device.
    #[arg(long, value_name = "P")]
    pub platform: Option<String>,
    /// Write the chosen version here instead of standard output.
    #[arg(short = 'o', value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// One JSON document on standard output: every candidate (its verdict, reverification
    /// and kernel times, speed-up), the chosen one and its program (the table stays on
    /// stderr; `-o` still writes the program).
    #[arg(long)]
    pub json: bool,
    /// Memory Z3 may use, in MB, for the whole run.
    #[arg(long, value_name = "MB", default_value_t = alpinist_core::verify::DEFAULT_MEMORY_MB,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub memory: u32,
    /// Prove every routine again, ignoring and not filling the verified-method cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Without model-based quantifier instantiation: the retry after libz3 crashed.
    #[arg(long, hide = true)]
    pub no_mbqi: bool,
}

/// One combination of the flags' values.
struct Variant {
    /// `unroll 4, tile inter:32`; `annotations` for the file's `gpuopt` lines alone.
    label: String,
    flags: Flags,
}

/// What became of a variant before timing.
enum Verdict {
    /// Optimised and reverified: the printed program, and the reverification's time.
    Verified { text: String, time: Duration },
    /// Refused (its applicability check, a plan that does not fit the program) or not
    /// reverified: why, in words.
    Dropped(String),
}

pub fn tune(args: &TuneArgs) -> Exit {
    // As `optimise`: the proofs run in a worker process bounded in memory, so that a libz3
    // out-of-memory abort reads as a crash of the worker, not of this process.
    if crate::worker::is_worker() {
        crate::worker::watch_parent();
    } else if let Ok(exe) = std::env::current_exe() {
        return crate::worker::supervise_with_mbqi_fallback(&exe, "tuning", args.memory);
    }
    tune_here(args)
}

fn tune_here(args: &TuneArgs) -> Exit {
    alpinist_core::verify::set_memory_limit(args.memory);
    let (source, parsed) = match run::front_end_of_runs(&args.file) {
        Ok(x) => x,
        Err(exit) => return exit,
    };
    let variants = match variants(args) {
        Ok(v) => v,
        Err(message) => {
            emit_plain(message);
            return Exit::BadInput;
        }
    };
    let at = |span: Span| {
        let (l, c) = line_col(&source.text, span.start as usize);
        format!("{l}:{c}")
    };
    // Each variant's requests: the annotations and its flags.
    let mut planned = Vec::new();
    for variant in variants {
        let optimisations = match optimise::flag_optimisations(&variant.flags) {
            Ok(o) => o,
            Err(message) => {
                emit_plain(format_args!("{}: {message}", variant.label));
                return Exit::BadInput;
            }
        };
        let requests = pipeline::plan(&parsed.program, optimisations, args.var.as_deref());
        planned.push((variant, requests));
    }
    // A plan no variant can have (`--loop` naming no loop, say) is a usage error.
    if planned.iter().all(|(_, requests)| requests.is_err()) {
        if let Some((_, Err(e))) = planned
            .iter()
            .find(|(_, requests)| !matches!(requests, Err(PlanError::Nothing)))
        {
            emit_plain(e.message(&at));
            return Exit::BadInput;
        }
        emit_plain(
            "nothing to tune: give lists of values (`--unroll 2,4`, `--merge 2`, `--tile \
             inter:16,32`, `--fuse 2`) or `gpuopt` annotations",
        );
        return Exit::BadInput;
    }
    // The device before the proofs: without one, no proof time is spent.
    let device = match run::devices::select(args.platform.as_deref()) {
        Ok(devices) => match devices.into_iter().next() {
            Some(d) => d,
            None => {
                emit_plain("`tune` times kernels on an OpenCL device, and there is none here");
                return Exit::Environment;
            }
        },
        Err(exit) => return exit,
    };

    // Optimise and reverify every variant, `--jobs` at once.
    let settings = pipeline::Settings {
        verify: true,
        verify_input: true,
        limits: Limits {
            timeout_ms: super::timeout_ms(super::OBLIGATION_TIMEOUT_S),
            mbqi: !args.no_mbqi,
            ..Limits::default()
        },
        jobs: 1,
        cache: (!args.no_cache)
            .then(alpinist_core::cache::MethodCache::from_env)
            .flatten(),
        int32: None,
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |j| j as usize,
    );
    let bar = crate::progress::bar(
        planned.len() as u64,
        format!("optimising and reverifying {} variants", planned.len()),
    );
    let next = AtomicUsize::new(0);
    let verdicts: Mutex<Vec<Option<Result<Verdict, Stop>>>> =
        Mutex::new((0..planned.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(planned.len()) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, requests)) = planned.get(k) else {
                    break;
                };
                let verdict = verdict_of(requests, &parsed, &settings, &at);
                verdicts.lock().unwrap_or_else(|e| e.into_inner())[k] = Some(verdict);
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let verdicts: Vec<Result<Verdict, Stop>> = verdicts
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|v| v.unwrap_or_else(|| Ok(Verdict::Dropped("not optimised".into()))))
        .collect();
    // The input does not verify: nothing is tuned (every variant says so; one message).
    if let Some(Err(Stop::InputNotVerified { before })) = verdicts
        .iter()
        .find(|v| matches!(v, Err(Stop::InputNotVerified { .. })))
    {
        let outcome = before.outcome();
        emit_plain(format_args!(
            "{}: the input does not verify ({}), so it is not tuned; run `alpinist verify {}`",
            source.name,
            if outcome == Outcome::Unknown {
                "unknown"
            } else {
                "failed"
            },
            source.name
        ));
        return if outcome == Outcome::Unknown {
            Exit::Inconclusive
        } else {
            Exit::Negative
        };
    }

    // The versions to time: the original and every reverified variant.
    let original = Version {
        label: "original".into(),
        source: source.clone(),
        program: run::named_apart(parsed.program.clone()),
        layouts: Vec::new(),
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut others: Vec<Version> = Vec::new();
    for ((variant, requests), verdict) in planned.iter().zip(verdicts) {
        let verdict = match verdict {
            Ok(v) => v,
            Err(stop) => Verdict::Dropped(stopped(stop, &source)),
        };
        if let Verdict::Verified { text, .. } = &verdict {
            match alpinist_core::syntax::parse(text) {
                Ok(p) => others.push(Version {
                    label: variant.label.clone(),
                    source: Source::single(
                        format!("{} ({})", source.name, variant.label),
                        text.clone(),
                    ),
                    program: run::named_apart(p.program),
                    layouts: run::layouts_of(requests.as_deref().unwrap_or(&[])),
                }),
                Err(_) => {
                    emit_plain("a reverified variant does not parse (a bug of alpinist)");
                    return Exit::Environment;
                }
            }
        }
        rows.push(Row {
            label: variant.label.clone(),
            verdict,
        });
    }

    // Time them on the device.
    let run_args = RunArgs {
        file: args.file.clone(),
        against: None,
        inputs: args.inputs.clone(),
        platform: args.platform.clone(),
        flags: Flags::default(),
    };
    let timing = Timing {
        reps: args.reps,
        json: false,
        lines_to_stderr: true,
    };
    let mut timed: Vec<TimedRun> = Vec::new();
    let exit = run::time_versions(&run_args, &original, &others, &[device], timing, &mut timed);
    if exit == Exit::BadInput || exit == Exit::Environment {
        return exit;
    }

    // Score: the kernel time summed over the methods every timed version ran.
    let methods: Vec<&str> = timed
        .iter()
        .filter(|t| t.version == original.label)
        .map(|t| t.method.as_str())
        .collect();
    let score = |label: &str| -> Option<Duration> {
        methods
            .iter()
            .map(|m| {
                timed
                    .iter()
                    .find(|t| t.version == label && t.method == *m)
                    .map(|t| t.kernel)
            })
            .sum()
    };
    if methods.is_empty() {
        emit_plain("no method of the file ran on the device: nothing was timed");
        return exit.max(Exit::BadInput);
    }
    let base = score(&original.label);
    let device_name = timed.first().map_or(String::new(), |t| t.device.clone());
    let mut best: (String, Duration) = (original.label.clone(), base.unwrap_or_default());
    for row in &rows {
        if let (Verdict::Verified { .. }, Some(s)) = (&row.verdict, score(&row.label)) {
            if s < best.1 {
                best = (row.label.clone(), s);
            }
        }
    }

    // The table.
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .chain([original.label.len()])
        .max()
        .unwrap_or(0);
    eprintln!(
        "tune: {} on {device_name}: kernel time, median of {} runs, summed over {} ({})",
        source.name,
        args.reps,
        if methods.len() == 1 {
            "1 method".to_string()
        } else {
            format!("{} methods", methods.len())
        },
        methods.join(", ")
    );
    let mark = |label: &str| if label == best.0 { "  <- chosen" } else { "" };
    let ratio = |s: Duration| {
        base.filter(|_| !s.is_zero())
            .map(|b| b.as_secs_f64() / s.as_secs_f64())
    };
    let speed_up = |s: Duration| match ratio(s) {
        Some(r) => format!("{r:.2}x"),
        None => "-".to_string(),
    };
    // Each candidate once: its line of the table, and its entry of `--json`'s document.
    let ms_of = |d: Duration| d.as_secs_f64() * 1e3;
    let mut candidates = Vec::new();
    if let Some(b) = base {
        eprintln!(
            "  {:<width$}  {:<28}  {:>10}  {:>6}{}",
            original.label,
            "the input, verified",
            run::ms(b),
            speed_up(b),
            mark(&original.label)
        );
        candidates.push(serde_json::json!({
            "variant": original.label,
            "status": "input",
            "kernel_ms": ms_of(b),
            "speed_up": 1.0,
        }));
    }
    for row in &rows {
        let candidate = match (&row.verdict, score(&row.label)) {
            (Verdict::Verified { time, .. }, Some(s)) => {
                eprintln!(
                    "  {:<width$}  {:<28}  {:>10}  {:>6}{}",
                    row.label,
                    format!("reverified in {}", seconds(*time)),
                    run::ms(s),
                    speed_up(s),
                    mark(&row.label)
                );
                serde_json::json!({
                    "variant": row.label,
                    "status": "timed",
                    "reverified_ms": ms_of(*time),
                    "kernel_ms": ms_of(s),
                    "speed_up": ratio(s),
                })
            }
            (Verdict::Verified { time, .. }, None) => {
                eprintln!(
                    "  {:<width$}  {:<28}  not timed: {NOT_TIMED}",
                    row.label,
                    format!("reverified in {}", seconds(*time)),
                );
                serde_json::json!({
                    "variant": row.label,
                    "status": "not timed",
                    "reverified_ms": ms_of(*time),
                    "reason": NOT_TIMED,
                })
            }
            (Verdict::Dropped(why), _) => {
                eprintln!("  {:<width$}  dropped: {why}", row.label);
                serde_json::json!({
                    "variant": row.label,
                    "status": "dropped",
                    "reason": why,
                })
            }
        };
        candidates.push(candidate);
    }

    // The chosen version.
    let text = match rows.iter().find(|r| r.label == best.0).map(|r| &r.verdict) {
        Some(Verdict::Verified { text, .. }) => text.clone(),
        _ => source.text.clone(),
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &text) {
                emit_plain(format_args!("cannot write {}: {e}", path.display()));
                return Exit::Environment;
            }
            eprintln!("tune: `{}` written to {}", best.0, path.display());
        }
        None if args.json => {}
        None => print!("{text}"),
    }
    if args.json {
        let doc = serde_json::json!({
            "schema_version": 1,
            "command": "tune",
            "file": source.name,
            "device": device_name,
            "reps": args.reps,
            "methods": methods,
            "candidates": candidates,
            "chosen": best.0,
            "text": text,
            "exit": exit as u8,
        });
        println!("{doc:#}");
    }
    exit
}

/// A proof's time: milliseconds below a second.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// One line of the candidate table.
struct Row {
    label: String,
    verdict: Verdict,
}

/// Every combination of one value of each flag given, with its label; the file's
/// annotations alone when no flag gives a list.
fn variants(args: &TuneArgs) -> Result<Vec<Variant>, String> {
    fn options<T: Clone>(values: &[T]) -> Vec<Option<T>> {
        if values.is_empty() {
            vec![None]
        } else {
            values.iter().cloned().map(Some).collect()
        }
    }
    // `--tile inter:16,32` is two tilings.
    let mut tiles = Vec::new();
    for spec in &args.tile {
        let (layout, sizes) = spec
            .split_once(':')
            .ok_or_else(|| format!("`--tile {spec}`: expected `inter:T,..` or `intra:T,..`"))?;
        for size in sizes.split(',') {
            tiles.push(format!("{layout}:{}", size.trim()));
        }
    }
    let mut out = Vec::new();
    for unroll in options(&args.unroll) {
        for merge in options(&args.merge) {
            for tile in options(&tiles) {
                for fuse in options(&args.fuse) {
                    let mut parts = Vec::new();
                    if let Some(k) = unroll {
                        parts.push(format!("unroll {k}"));
                    }
                    if let Some(m) = merge {
                        parts.push(format!("merge {m}"));
                    }
                    if let Some(t) = &tile {
                        parts.push(format!("tile {t}"));
                    }
                    if let Some(f) = &fuse {
                        parts.push(format!("fuse {f}"));
                    }
                    let label = if parts.is_empty() {
                        "annotations".to_string()
                    } else {
                        parts.join(", ")
                    };
                    out.push(Variant {
                        label,
                        flags: Flags {
                            unroll,
                            merge,
                            tile: tile.clone(),
                            fuse: fuse.clone(),
                            var: args.var.clone(),
                            ..Flags::default()
                        },
                    });
                }
            }
        }
    }
    if out.len() > MAX_VARIANTS {
        return Err(format!(
            "{} variants: at most {MAX_VARIANTS} are tuned in one run (give fewer values)",
            out.len()
        ));
    }
    Ok(out)
}

/// Optimises and reverifies one variant.
fn verdict_of(
    requests: &Result<Vec<pipeline::Request>, PlanError>,
    parsed: &alpinist_core::syntax::Parsed,
    settings: &pipeline::Settings,
    at: &(dyn Fn(Span) -> String + Sync),
) -> Result<Verdict, Stop> {
    let requests = match requests {
        Ok(r) => r,
        Err(PlanError::Nothing) => {
            return Ok(Verdict::Dropped(
                "nothing to apply: no flag and no `gpuopt` annotation".into(),
            ))
        }
        Err(e) => return Ok(Verdict::Dropped(e.message(at))),
    };
    let done = pipeline::run(&parsed.program, &parsed.trivia, requests, settings)?;
    Ok(match &done.after {
        Some(after) if after.outcome() == Outcome::Verified => Verdict::Verified {
            time: after.time,
            text: done.text,
        },
        Some(after) => Verdict::Dropped(format!(
            "its output is {} on reverification",
            if after.outcome() == Outcome::Unknown {
                "unknown"
            } else {
                "refuted (a bug of alpinist)"
            }
        )),
        None => Verdict::Dropped("not reverified".into()),
    })
}

/// A stop other than an input that does not verify, in words.
fn stopped(stop: Stop, source: &Source) -> String {
    match stop {
        Stop::Refused { refusal, .. } => {
            let code =
                miette::Diagnostic::code(&*refusal).map_or(String::new(), |c| format!("{c} "));
            let (l, c) = line_col(&source.text, refusal.span().start as usize);
            format!("{code}{refusal} (at {l}:{c})")
        }
        Stop::InputNotVerified { .. } => "the input does not verify".into(),
        Stop::OutputDoesNotParse { .. } => "its output does not parse (a bug of alpinist)".into(),
        Stop::OutputDoesNotCheck { .. } => {
            "its output does not type-check (a bug of alpinist)".into()
        }
    }
}
