//! `alpinist optimise`: the arguments, printing and exit codes around
//! [`alpinist_core::pipeline`] (plan the requests from the `gpuopt` annotations and the flags,
//! verify, apply each, reverify the printed output). A `gpuopt` kind without a transformation
//! is exit 2 "not implemented yet", never silently ignored.

use std::path::PathBuf;
use std::time::Duration;

use alpinist_core::pipeline::{self, Stop, Verification};
use alpinist_core::syntax::{line_col, MatrixOrder, Span, TileLayout};
use alpinist_core::transform::{Optimisation, Refusal};
use alpinist_core::verify::{Limits, Outcome};

use super::front_end;
use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::Source;

/// The optimisation flags, shared by `optimise` and `run` (which runs what they produce).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Flags {
    /// Unroll the loop by K iterations.
    #[arg(long, value_name = "K")]
    pub unroll: Option<u32>,
    /// Merge M consecutive iterations.
    #[arg(long, value_name = "M")]
    pub merge: Option<u32>,
    /// Tile the kernel: `inter:T` or `intra:T`.
    #[arg(long, value_name = "inter|intra:T")]
    pub tile: Option<String>,
    /// Fuse F consecutive kernels (par blocks) into one, launched on B work-groups
    /// (default 1): `F` or `F:B`.
    #[arg(long, value_name = "F[:B]")]
    pub fuse: Option<String>,
    /// Prefetch cells of a global array into registers: `ARRAY:INDEX[,INDEX..]`, e.g.
    /// `a:tid,tid+1` (repeatable; the method with par blocks that has the array).
    #[arg(long, value_name = "ARRAY:INDEX,..")]
    pub prefetch: Vec<String>,
    /// Store a matrix as one array: `MATRIX:R|C:ROWS:COLS`, row-major (R) or column-major
    /// (C), e.g. `m:R:X:Y` (repeatable; the method that has the matrix).
    #[arg(long, value_name = "MATRIX:R|C:ROWS:COLS")]
    pub linearise: Vec<String>,
    /// The iteration variable of the loop the flags target.
    #[arg(long = "loop", value_name = "VAR")]
    pub var: Option<String>,
}

pub struct Options {
    pub flags: Flags,
    pub output: Option<PathBuf>,
    pub no_verify: bool,
    /// `--memory`: Z3's memory limit in MB for the whole run (it verifies in-process).
    pub memory: u32,
    /// Model-based quantifier instantiation (off: the hidden `--no-mbqi`, the retry after a
    /// libz3 crash).
    pub mbqi: bool,
    /// Use the verified-method cache (`--no-cache`: false).
    pub cache: bool,
    pub json: bool,
}

/// Why a run ended inconclusive when Z3's memory limit stopped a query.
fn memory_note(mb: u32) -> String {
    format!(
        "unknown: {}; raise `--memory` to decide",
        alpinist_core::verify::memory_reason(mb)
    )
}

pub fn run(file: &std::path::Path, options: &Options) -> Exit {
    // Like `verify`, the work runs in a worker process bounded in memory: libz3 lets some
    // out-of-memory errors escape a check and end the process, which must read as unknown
    // (exit 3), not as a crash.
    if crate::worker::is_worker() {
        crate::worker::watch_parent();
    } else if file.as_os_str() != "-" {
        if let Ok(exe) = std::env::current_exe() {
            return crate::worker::supervise_with_mbqi_fallback(
                &exe,
                "optimisation",
                options.memory,
            );
        }
    }
    run_here(file, options)
}

fn run_here(file: &std::path::Path, options: &Options) -> Exit {
    alpinist_core::verify::set_memory_limit(options.memory);
    let (source, parsed, checked) = match front_end(file) {
        Ok(x) => x,
        Err(exit) => return exit,
    };
    // Misplaced or malformed `gpuopt` lines stop only this command: a usage error (exit 2);
    // two annotations of one kind on one target are a refusal (exit 1).
    if !checked.gpuopt_errors.is_empty() {
        let refusal_only = checked
            .gpuopt_errors
            .iter()
            .all(|e| matches!(e, alpinist_core::check::CheckError::GpuOptDuplicate { .. }));
        for e in checked.gpuopt_errors {
            emit(&source, e);
        }
        return if refusal_only {
            Exit::Negative
        } else {
            Exit::BadInput
        };
    }
    let program = &parsed.program;
    let at = |span: Span| {
        let (l, c) = line_col(&source.text, span.start as usize);
        format!("{l}:{c}")
    };
    let flags = match flag_optimisations(&options.flags) {
        Ok(flags) => flags,
        Err(message) => {
            emit_plain(message);
            return Exit::BadInput;
        }
    };
    let requests = match pipeline::plan(program, flags, options.flags.var.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            emit_plain(e.message(&at));
            return Exit::BadInput;
        }
    };
    let settings = pipeline::Settings {
        verify: !options.no_verify,
        verify_input: true,
        limits: Limits {
            timeout_ms: super::timeout_ms(super::OBLIGATION_TIMEOUT_S),
            mbqi: options.mbqi,
            ..Limits::default()
        },
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cache: options
            .cache
            .then(alpinist_core::cache::MethodCache::from_env)
            .flatten(),
        int32: None,
    };
    let done = match pipeline::run(program, &parsed.trivia, &requests, &settings) {
        Ok(done) => done,
        Err(Stop::InputNotVerified { before }) => {
            let outcome = before.outcome();
            let exit = if outcome == Outcome::Unknown {
                Exit::Inconclusive
            } else {
                Exit::Negative
            };
            if options.json {
                let refused = serde_json::json!({
                    "code": null,
                    "message": format!("the input does not verify ({})", describe(outcome)),
                });
                print_refusal(&source.name, &[], refused, &Some(before), exit);
            }
            emit_plain(format_args!(
                "{}: the input does not verify ({}), so it is not optimised; run `alpinist verify {}`",
                source.name,
                describe(outcome),
                source.name
            ));
            if exit == Exit::Inconclusive && alpinist_core::verify::memory_limit_reached() {
                emit_plain(memory_note(options.memory));
            }
            return exit;
        }
        Err(Stop::Refused {
            before,
            steps,
            refusal,
        }) => {
            let exit = match *refusal {
                Refusal::NotImplemented { .. } => Exit::BadInput,
                // A probe that ran out of memory decided nothing: inconclusive.
                _ if alpinist_core::verify::memory_limit_reached() => Exit::Inconclusive,
                _ => Exit::Negative,
            };
            if options.json {
                let code = miette::Diagnostic::code(&*refusal).map(|c| c.to_string());
                let help = miette::Diagnostic::help(&*refusal).map(|h| h.to_string());
                let (line, column) = line_col(&source.text, refusal.span().start as usize);
                let refused = serde_json::json!({
                    "code": code,
                    "message": refusal.to_string(),
                    "help": help,
                    "span": { "line": line, "column": column },
                });
                print_refusal(&source.name, &applied(&steps, &at), refused, &before, exit);
            }
            emit(&source, *refusal);
            if exit == Exit::Inconclusive {
                emit_plain(memory_note(options.memory));
            }
            return exit;
        }
        Err(Stop::OutputDoesNotParse { errors }) => {
            for e in errors {
                emit_plain(format_args!("{e}"));
            }
            emit_plain("internal error: the optimised program does not parse (a bug in alpinist)");
            return Exit::Environment;
        }
        Err(Stop::OutputDoesNotCheck { errors }) => {
            for e in errors {
                emit_plain(format_args!("{e}"));
            }
            emit_plain(
                "internal error: the optimised program does not type-check (a bug in alpinist)",
            );
            return Exit::Environment;
        }
    };
    let text = &done.text;
    if let Some(path) = &options.output {
        if let Err(e) = std::fs::write(path, text) {
            emit_plain(format_args!("cannot write {}: {e}", path.display()));
            return Exit::Environment;
        }
    }
    let exit = match &done.after {
        // Not a bug: the reverification needed more memory than `--memory` allows.
        Some(after)
            if after.outcome() == Outcome::Unknown
                && alpinist_core::verify::memory_limit_reached() =>
        {
            emit_plain(memory_note(options.memory));
            Exit::Inconclusive
        }
        Some(after) if after.outcome() != Outcome::Verified => {
            let optimised = Source::single(format!("{} (optimised)", source.name), text.clone());
            for r in &after.reports {
                for o in &r.obligations {
                    if o.status != alpinist_core::verify::Status::Verified {
                        let (l, c) = line_col(&optimised.text, o.span.start as usize);
                        emit_plain(format_args!(
                            "optimised program, method `{}`: {} at {l}:{c} ({:?})",
                            r.name,
                            o.kind.describe(),
                            o.status
                        ));
                    }
                }
            }
            emit_plain(format_args!(
                "internal error: the optimised program does not verify ({}); this is a bug in alpinist, please report it",
                describe(after.outcome())
            ));
            Exit::Environment
        }
        _ => Exit::Success,
    };

    // The report.
    let applied = applied(&done.steps, &at);
    let rewrite_time: Duration = done.steps.iter().map(|s| s.timings.rewrite).sum();
    let applicability_time: Duration = done.steps.iter().map(|s| s.timings.applicability).sum();
    let mut report = String::new();
    for (line, step) in applied.iter().zip(&done.steps) {
        report.push_str(&format!("{line}{}\n", step_note(step)));
    }
    report.push_str(&format!(
        "optimisation: {:.1} ms, applicability check: {:.1} ms\n",
        ms(rewrite_time),
        ms(applicability_time)
    ));
    match (&done.before, &done.after) {
        (Some(b), Some(a)) => {
            report.push_str(&format!(
                "verification: before {:.1} ms, after {:.1} ms\n",
                ms(b.time),
                ms(a.time)
            ));
            for rb in &b.reports {
                let ra = a.reports.iter().find(|r| r.name == rb.name);
                report.push_str(&format!(
                    "  {}: before {:.1} ms ({}), after {}\n",
                    rb.name,
                    ms(rb.time),
                    verdict(rb),
                    ra.map_or("missing".to_string(), |r| format!(
                        "{:.1} ms ({})",
                        ms(r.time),
                        verdict(r)
                    ))
                ));
            }
        }
        _ => report.push_str("verification: skipped (--no-verify)\n"),
    }
    if options.json {
        let doc = serde_json::json!({
            "schema_version": 2,
            "file": source.name,
            "applied": applied,
            "steps": steps_json(&done.steps, &applied),
            "optimisation_ms": ms(rewrite_time),
            "applicability_ms": ms(applicability_time),
            "verification_before": methods_json(&done.before),
            "verification_after": methods_json(&done.after),
            "exit": exit as u8,
            "pvl": text,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else if options.output.is_none() {
        print!("{text}");
    }
    eprint!("{report}");
    exit
}

/// What was applied, one line per step: `unrolled the loop over `i` by 2 at 19:7`.
fn applied(steps: &[pipeline::Step], at: &dyn Fn(Span) -> String) -> Vec<String> {
    steps
        .iter()
        .map(|s| {
            let note = s.note.as_ref().map_or(String::new(), |n| format!("; {n}"));
            format!(
                "{} at {}{note}",
                s.request.optimisation.done(),
                at(s.request.target)
            )
        })
        .collect()
}

/// After a step's line in the report: its times, and how its output was verified.
fn step_note(step: &pipeline::Step) -> String {
    let mut note = format!(
        " (applicability {:.1} ms, rewrite {:.1} ms",
        ms(step.timings.applicability),
        ms(step.timings.rewrite)
    );
    if let Some(v) = &step.verification {
        let cached = v.reports.iter().filter(|r| r.cached).count();
        note.push_str(&format!(
            "; output {} in {:.1} ms: {} of {} methods proved{}",
            describe(v.outcome()),
            ms(v.time),
            v.reports.len() - cached,
            v.reports.len(),
            match cached {
                0 => String::new(),
                n => format!(", {n} unchanged from the cache"),
            }
        ));
    }
    note.push(')');
    note
}

/// The `--json` steps: each applied request with its times and its output's verification.
fn steps_json(steps: &[pipeline::Step], applied: &[String]) -> serde_json::Value {
    steps
        .iter()
        .zip(applied)
        .map(|(s, line)| {
            serde_json::json!({
                "applied": line,
                "note": s.note,
                "optimisation_ms": ms(s.timings.rewrite),
                "applicability_ms": ms(s.timings.applicability),
                "verification": methods_json(&s.verification),
            })
        })
        .collect()
}

/// The `--json` document of a refusal: what was applied before it, why, and the
/// verification of the input (when it ran).
fn print_refusal(
    file: &str,
    applied: &[String],
    refused: serde_json::Value,
    before: &Option<Verification>,
    exit: Exit,
) {
    let doc = serde_json::json!({
        "schema_version": 2,
        "file": file,
        "applied": applied,
        "refused": refused,
        "verification_before": methods_json(before),
        "exit": exit as u8,
    });
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
}

/// The verification part of the JSON report: total and per-method time and outcome.
fn methods_json(x: &Option<Verification>) -> Option<serde_json::Value> {
    x.as_ref().map(|v| {
        serde_json::json!({
            "time_ms": ms(v.time),
            "methods": v.reports.iter().map(|r| serde_json::json!({
                "name": r.name,
                "outcome": describe(r.outcome()),
                "time_ms": ms(r.time),
                "cached": r.cached,
            })).collect::<Vec<_>>(),
        })
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A routine's outcome, and whether the verified-method cache gave it.
fn verdict(r: &alpinist_core::verify::MethodReport) -> String {
    match r.cached {
        true => format!("{}, cached", describe(r.outcome())),
        false => describe(r.outcome()).to_string(),
    }
}

fn describe(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Verified => "verified",
        Outcome::Unknown => "unknown",
        Outcome::Failed => "failed",
        Outcome::Unsupported => "unsupported",
    }
}

/// The optimisations the command-line flags ask for, in a fixed order.
pub fn flag_optimisations(options: &Flags) -> Result<Vec<Optimisation>, String> {
    let positive = |flag: &str, k: u32| {
        if k == 0 {
            Err(format!("`{flag}` needs a positive factor"))
        } else {
            Ok(k)
        }
    };
    let var = options.var.clone().unwrap_or_default();
    let mut out = Vec::new();
    if let Some(k) = options.unroll {
        let factor = positive("--unroll", k)?;
        out.push(Optimisation::Unroll {
            var: var.clone(),
            factor,
        });
    }
    if let Some(k) = options.merge {
        let factor = positive("--merge", k)?;
        out.push(Optimisation::Merge {
            var: var.clone(),
            factor,
        });
    }
    if options.var.is_some() && out.is_empty() {
        return Err(
            "`--loop` selects the loop a flag applies to: give `--unroll K` or `--merge M` with it"
                .into(),
        );
    }
    if let Some(spec) = &options.fuse {
        out.push(parse_fuse(spec)?);
    }
    if let Some(spec) = &options.tile {
        out.push(parse_tile(spec)?);
    }
    for spec in &options.prefetch {
        out.extend(parse_prefetch(spec)?);
    }
    for spec in &options.linearise {
        out.push(parse_linearise(spec)?);
    }
    Ok(out)
}

/// `ARRAY:INDEX,INDEX..` (ARRAY a name or a row, `m[i]`): the indices are split at the commas
/// outside brackets.
fn parse_prefetch(spec: &str) -> Result<Vec<Optimisation>, String> {
    let bad =
        || format!("`--prefetch {spec}`: expected `ARRAY:INDEX[,INDEX..]`, e.g. `a:tid,tid+1`");
    let (array, indices) = spec.split_once(':').ok_or_else(bad)?;
    let array = array.trim();
    // A name, or a row of one (`m[i]`); the optimisation parses it.
    if !array.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        return Err(bad());
    }
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0i32, String::new());
    for c in indices.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(bad());
    }
    Ok(parts
        .into_iter()
        .map(|index| Optimisation::Prefetch {
            array: array.to_string(),
            index: index.trim().to_string(),
        })
        .collect())
}

/// `MATRIX:R|C:ROWS:COLS`; the sizes are expressions, split at the colons outside brackets.
fn parse_linearise(spec: &str) -> Result<Optimisation, String> {
    let bad = || {
        format!("`--linearise {spec}`: expected `MATRIX:R|C:ROWS:COLS`, e.g. `m:R:X:Y` (R row-major, C column-major)")
    };
    let parts: Vec<&str> = spec.splitn(4, ':').map(str::trim).collect();
    let [matrix, order, rows, cols] = parts.as_slice() else {
        return Err(bad());
    };
    let order = match *order {
        "R" => MatrixOrder::RowMajor,
        "C" => MatrixOrder::ColumnMajor,
        _ => return Err(bad()),
    };
    let is_name = !matrix.is_empty()
        && matrix.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !matrix.starts_with(|c: char| c.is_ascii_digit());
    if !is_name || rows.is_empty() || cols.is_empty() || cols.contains(':') {
        return Err(bad());
    }
    Ok(Optimisation::Linearise {
        matrix: matrix.to_string(),
        order,
        rows: rows.to_string(),
        cols: cols.to_string(),
    })
}

/// `F` or `F:B`: F ≥ 2 kernels, B ≥ 1 work-groups.
fn parse_fuse(spec: &str) -> Result<Optimisation, String> {
    let bad = || {
        format!("`--fuse {spec}`: expected `F` or `F:B`, F ≥ 2 kernels to fuse, B ≥ 1 work-groups")
    };
    let (count, groups) = spec.split_once(':').unwrap_or((spec, "1"));
    let count = count.trim().parse::<u32>().ok().filter(|f| *f >= 2);
    let groups = groups.trim().parse::<u32>().ok().filter(|b| *b >= 1);
    match (count, groups) {
        (Some(count), Some(groups)) => Ok(Optimisation::Fuse { count, groups }),
        _ => Err(bad()),
    }
}

/// `inter:T` or `intra:T`.
fn parse_tile(spec: &str) -> Result<Optimisation, String> {
    let bad =
        || format!("`--tile {spec}`: expected `inter:T` or `intra:T` with T a positive integer");
    let (layout, size) = spec.split_once(':').ok_or_else(bad)?;
    let layout = match layout {
        "inter" => TileLayout::Inter,
        "intra" => TileLayout::Intra,
        _ => return Err(bad()),
    };
    let size = size
        .parse::<u32>()
        .ok()
        .filter(|t| *t > 0)
        .ok_or_else(bad)?;
    Ok(Optimisation::Tile { layout, size })
}
