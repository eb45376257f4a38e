//! `alpinist verify FILE... [--json] [--timeout S] [--jobs N]`: the separation-logic checker.
//!
//! Human output: one line per method on standard output, every failed or unknown obligation as
//! a diagnostic (file:line:column, the source line, a caret) on standard error, then what the
//! verdict trusts and the warnings. `--json`: one document on standard output.

use std::path::PathBuf;
use std::time::Instant;

use alpinist_core::syntax::Span;
use alpinist_core::verify::{self, EncodeError, Limits, MethodReport, Obligation, Outcome, Status};
use serde_json::{json, Value};

use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::Source;
use crate::worker;

pub struct Options {
    pub json: bool,
    /// `--timeout`: seconds per obligation (0: no limit).
    pub timeout: f64,
    pub jobs: Option<usize>,
    pub rlimit: Option<u32>,
    /// `--int32`: the 32-bit obligations too.
    pub int32: bool,
    /// `--memory`: Z3's memory limit in MB for the whole run.
    pub memory: u32,
    /// Use the verified-method cache (`--no-cache`: false).
    pub cache: bool,
    pub mbqi: bool,
}

/// Runs the verification in a worker process (this same binary, see `worker.rs`: it dies with
/// this process and its address space is bounded) and relays its output, so a crash inside
/// libz3 (4.8.12 segfaults while building some models) cannot take the report with it: after
/// a crash the worker is run again without model-based quantifier instantiation, and only if
/// that crashes too is it an internal error (exit 4). A worker that ran out of memory is
/// unknown (exit 3), not a crash.
pub fn run(files: &[PathBuf], options: &Options) -> Exit {
    let reads_stdin = files.iter().any(|f| f.as_os_str() == "-");
    let exe = std::env::current_exe();
    if worker::is_worker() {
        worker::watch_parent();
    }
    match exe {
        Ok(exe) if !worker::is_worker() && !reads_stdin && options.mbqi => supervise(&exe, options),
        _ => run_here(files, options),
    }
}

fn supervise(exe: &std::path::Path, options: &Options) -> Exit {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match worker::run_with_mbqi_fallback(exe, &args, "verification", options.memory, jobs(options))
    {
        Ok(exit) => exit,
        Err(worker::TwiceCrashed) => isolate_crashes(exe, &args, options),
    }
}

/// [`worker::run_and_relay`]; a worker that could not start or could not allocate is the
/// run's end (`Err`, with its exit, said on stderr).
fn relay(
    exe: &std::path::Path,
    args: &[std::ffi::OsString],
    envs: &[(&str, String)],
    options: &Options,
    jobs: usize,
) -> Result<worker::Ended, Exit> {
    match worker::run_and_relay(exe, args, envs, options.memory, jobs) {
        Err(e) => {
            emit_plain(format_args!("cannot start the verification worker: {e}"));
            Err(Exit::Environment)
        }
        Ok(worker::Ended::OutOfMemory) => {
            emit_plain(out_of_memory(options.memory));
            Err(Exit::Inconclusive)
        }
        Ok(ended) => Ok(ended),
    }
}

/// libz3 crashed twice: find the routines it crashes on — one worker thread, each routine
/// announcing itself as it starts, so the last one announced is the one that crashed — and
/// verify again without them until the worker finishes; they are reported unknown with the
/// reason, every other routine gets its verdict.
fn isolate_crashes(exe: &std::path::Path, args: &[std::ffi::OsString], options: &Options) -> Exit {
    let mut skipped: Vec<String> = Vec::new();
    // Each round either ends or adds a routine; a file has finitely many.
    for _ in 0..MAX_CRASHED_ROUTINES {
        let envs = [
            (worker::PROGRESS_ENV, "1".to_string()),
            (worker::JOBS_ENV, "1".to_string()),
            (worker::SKIP_ENV, skipped.join("\n")),
        ];
        match relay(exe, args, &envs, options, 1) {
            Err(exit) => return exit,
            Ok(worker::Ended::Exited(code)) => {
                eprintln!(
                    "note: libz3 crashed while verifying {} routine(s); they are reported \
                     unknown, the others were verified without them",
                    skipped.len()
                );
                return Exit::from_code(code);
            }
            Ok(worker::Ended::Crashed { stderr }) => match worker::last_routine(&stderr) {
                Some(routine) if !skipped.contains(&routine) => skipped.push(routine),
                _ => break,
            },
            // `relay` ends the run on it already.
            Ok(worker::Ended::OutOfMemory) => return Exit::Inconclusive,
        }
    }
    emit_plain(
        "internal error: the Z3 library crashed while verifying (libz3 4.8.12), also \
         without model-based quantifier instantiation and outside any one routine; please \
         report this input",
    );
    Exit::Environment
}

/// What a worker that could not allocate means: unknown, with the limit.
pub(crate) fn out_of_memory(memory_mb: u32) -> String {
    format!(
        "unknown: {} (the verification worker could not allocate); raise `--memory` to decide",
        verify::memory_reason(memory_mb)
    )
}

/// How many routines of one run [`isolate_crashes`] gives up after.
const MAX_CRASHED_ROUTINES: usize = 8;

/// `--jobs`, or one per core (in a worker isolating crashes: one).
fn jobs(options: &Options) -> usize {
    if let Some(n) = std::env::var(worker::JOBS_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1);
    }
    options.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// A failed or unknown obligation as a diagnostic (its code depends on the obligation's kind,
/// so `Diagnostic` is implemented by hand).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct ObligationDiagnostic {
    message: String,
    code: String,
    span: Span,
    label: String,
    help: Option<String>,
}

impl miette::Diagnostic for ObligationDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_primary_with_span(Some(self.label.clone()), self.span),
        )))
    }
}

fn run_here(files: &[PathBuf], options: &Options) -> Exit {
    let limits = Limits {
        timeout_ms: super::timeout_ms(options.timeout),
        rlimit: options.rlimit.unwrap_or(Limits::DEFAULT_RLIMIT),
        mbqi: options.mbqi,
    };
    verify::set_memory_limit(options.memory);
    let jobs = jobs(options);
    let cache = options
        .cache
        .then(alpinist_core::cache::MethodCache::from_env)
        .flatten();
    // Several files are one program, as VerCors reads them.
    let (source, parsed, _) = match super::front_end_program(files) {
        Ok(x) => x,
        Err(exit) => {
            if options.json {
                let name = files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ");
                let doc = json!({ "schema_version": 1,
                    "files": [{ "file": name, "outcome": "bad_input" }] });
                println!(
                    "{}",
                    serde_json::to_string_pretty(&doc).expect("JSON values always serialise")
                );
            }
            return exit;
        }
    };
    let start = Instant::now();
    let int32 = options.int32.then(|| int32_mode(&parsed.program));
    // In a worker isolating libz3 crashes: announce each routine as it starts, and leave out
    // the ones it crashed on before.
    let name = source.name.clone();
    let skipped: Vec<String> = std::env::var(worker::SKIP_ENV)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let announce = worker::is_worker() && std::env::var_os(worker::PROGRESS_ENV).is_some();
    let abort_in = worker::abort_in(&parsed.program);
    let limits_of = |span: Span| {
        let routine = format!("{name}\t{}-{}", span.start, span.end);
        if skipped.contains(&routine) {
            return Err("libz3 crashed while verifying this routine; not verified".to_string());
        }
        if announce {
            eprintln!("{}{routine}", worker::ROUTINE_MARKER);
        }
        if abort_in == Some(span) {
            std::process::abort();
        }
        Ok(limits)
    };
    // Unknown is not the end: a concrete run may show a definite failure.
    let reports = alpinist_core::witness::verify_and_confirm(
        &parsed.program,
        &limits_of,
        int32.as_ref(),
        jobs,
        &alpinist_core::witness::Budget::default(),
        cache.as_ref().map(|c| (c, &limits)),
    );
    let elapsed = start.elapsed();
    let exit = reports.iter().map(exit_of).fold(Exit::Success, combine);
    if options.json {
        let doc = json!({ "schema_version": 1,
            "files": [file_json(&source, &reports, elapsed.as_secs_f64())] });
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("JSON values always serialise")
        );
    } else {
        human(&source, &reports, elapsed.as_secs_f64());
    }
    exit
}

/// `--int32` for one program: the element combinations of a scan kernel (what code generation
/// emits as the scan operator) are exempt; in any other program every operation is checked.
pub fn int32_mode(program: &alpinist_core::syntax::Program) -> verify::Int32 {
    match alpinist_core::opencl::codegen::generate(program) {
        Ok(kernel) => verify::Int32 {
            exempt: kernel.element_ops,
            ..verify::Int32::all()
        },
        Err(_) => verify::Int32::all(),
    }
}

/// Exit codes in order of precedence: internal error, unsupported input, failure, unknown.
fn combine(a: Exit, b: Exit) -> Exit {
    let rank = |e: Exit| match e {
        Exit::Success => 0,
        Exit::Inconclusive => 1,
        Exit::Negative => 2,
        Exit::BadInput => 3,
        Exit::Environment => 4,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

fn exit_of(report: &MethodReport) -> Exit {
    match &report.error {
        Some(e) if e.is_internal() => Exit::Environment,
        Some(_) => Exit::BadInput,
        None => match report.outcome() {
            Outcome::Verified => Exit::Success,
            Outcome::Unknown => Exit::Inconclusive,
            Outcome::Failed => Exit::Negative,
            Outcome::Unsupported => Exit::BadInput,
        },
    }
}

fn outcome_word(report: &MethodReport) -> &'static str {
    match report.outcome() {
        Outcome::Verified => "verified",
        Outcome::Unknown => "unknown",
        Outcome::Failed => "failed",
        Outcome::Unsupported => "unsupported",
    }
}

fn human(source: &Source, reports: &[MethodReport], seconds: f64) {
    for r in reports {
        let (file, line, column) = source.locate(r.span);
        println!(
            "{file}: {line}:{column} `{}`: {} ({} obligations, {:.0} ms{})",
            r.name,
            outcome_word(r),
            r.obligations.len(),
            r.time.as_secs_f64() * 1000.0,
            if r.cached { ", cached" } else { "" }
        );
        if let Some(e) = &r.error {
            emit(source, e.clone());
        }
        for o in &r.obligations {
            if let Some(d) = diagnostic(o) {
                emit(source, d);
            }
        }
        for t in &r.trusted {
            println!("  trusted: {} (at {})", t.what, position(source, t.span));
        }
        for w in &r.warnings {
            println!("  warning: {} (at {})", w.message, position(source, w.span));
        }
    }
    let verified = reports
        .iter()
        .filter(|r| r.outcome() == Outcome::Verified)
        .count();
    let cached = reports.iter().filter(|r| r.cached).count();
    println!(
        "{}: {} of {} methods verified in {:.0} ms{}",
        source.name,
        verified,
        reports.len(),
        seconds * 1000.0,
        match cached {
            0 => String::new(),
            n => format!(" ({n} from the cache)"),
        }
    );
}

fn diagnostic(o: &Obligation) -> Option<ObligationDiagnostic> {
    match &o.status {
        Status::Verified => None,
        Status::Failed { model } => Some(ObligationDiagnostic {
            message: match &o.note {
                Some(note) => format!("{}: {note}", o.kind.describe()),
                None => o.kind.describe().to_string(),
            },
            code: o.kind.code().to_string(),
            span: o.span,
            label: "here".into(),
            help: (!model.is_empty()).then(|| {
                let values: Vec<String> = model.iter().map(|(n, v)| format!("{n} = {v}")).collect();
                let what = if o
                    .note
                    .as_deref()
                    .is_some_and(|n| n.starts_with(alpinist_core::witness::NOTE))
                {
                    "the input of that run"
                } else {
                    "a counterexample"
                };
                format!("{what}: {}", values.join(", "))
            }),
        }),
        Status::Unknown { reason } => Some(ObligationDiagnostic {
            message: format!("could not decide: {}", o.kind.describe()),
            code: "E0620".into(),
            span: o.span,
            label: "unknown".into(),
            help: Some(format!(
                "Z3 gave up: {reason}{}; this is not verified",
                which_limit(reason)
            )),
        }),
    }
}

/// Which of the limits per obligation Z3's reason for giving up points at, and the option
/// that raises it (Z3 says "canceled" for its resource budget as well as for a stop).
fn which_limit(reason: &str) -> &'static str {
    match reason {
        "timeout" => " (the wall-clock limit per obligation: `--timeout S`, 60 s by default)",
        "canceled" | "max. resource limit exceeded" => {
            " (a limit per obligation: Z3's budget `--rlimit UNITS`, or the wall-clock \
             `--timeout S`, 60 s by default)"
        }
        _ => "",
    }
}

/// An obligation of `--int32` (`scan-test` reports them apart).
#[cfg_attr(not(feature = "opencl"), allow(dead_code))]
pub(crate) fn is_int32(o: &Obligation) -> bool {
    matches!(
        o.kind,
        verify::ObligationKind::Int32Overflow | verify::ObligationKind::NegativeDivOperand
    )
}

/// `line:column`, 1-based, of the start of `span`; in a program of several files, prefixed by
/// the file's name.
pub(crate) fn position(source: &Source, span: Span) -> String {
    let (file, line, column) = source.locate(span);
    if source.files.len() > 1 {
        format!("{file}:{line}:{column}")
    } else {
        format!("{line}:{column}")
    }
}

/// A span in JSON: line and column within its file, byte offsets in the program's text, and
/// the file's name where the program has several.
fn span_json(source: &Source, span: Span) -> Value {
    let (file, line, column) = source.locate(span);
    let mut v = json!({ "line": line, "column": column, "start": span.start, "end": span.end });
    if source.files.len() > 1 {
        v["file"] = json!(file);
    }
    v
}

fn error_json(source: &Source, e: &EncodeError) -> Value {
    json!({ "code": e.code_str(), "message": e.to_string(), "span": span_json(source, e.span()) })
}

fn file_json(source: &Source, reports: &[MethodReport], seconds: f64) -> Value {
    let methods: Vec<Value> = reports
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "span": span_json(source, r.span),
                "outcome": outcome_word(r),
                "time_ms": r.time.as_secs_f64() * 1000.0,
                "cached": r.cached,
                "error": r.error.as_ref().map(|e| error_json(source, e)),
                "obligations": r.obligations.iter().map(|o| {
                    let mut v = serde_json::to_value(o).expect("obligations serialise");
                    v["span"] = span_json(source, o.span);
                    v["message"] = json!(o.kind.describe());
                    v
                }).collect::<Vec<_>>(),
                "trusted": r.trusted.iter().map(|t| json!({
                    "what": t.what, "span": span_json(source, t.span)
                })).collect::<Vec<_>>(),
                "warnings": r.warnings.iter().map(|w| json!({
                    "message": w.message, "span": span_json(source, w.span)
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let outcome = reports
        .iter()
        .map(|r| r.outcome())
        .max()
        .unwrap_or(Outcome::Verified);
    json!({
        "file": source.name,
        "outcome": format!("{outcome:?}").to_lowercase(),
        "time_ms": seconds * 1000.0,
        "methods": methods,
    })
}
