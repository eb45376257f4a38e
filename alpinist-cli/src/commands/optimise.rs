//! `alpinist optimise`: apply the file's `gpuopt` annotations and/or the flags, then reverify.
//!
//! The requests (`gpuopt` lines and flags) become [`Optimisation`]s on target spans and go
//! through the one entry point [`transform::apply`]. A `gpuopt` kind without a transformation
//! is exit 2 "not implemented yet", never silently ignored.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alpinist_core::syntax::{
    self, line_col, Expr, ExprKind, GpuOptKind, Item, MemberKind, MethodBody, Program, Span, Stmt,
    StmtKind, TileLayout,
};
use alpinist_core::transform::{self, unroll, Optimisation, Refusal};
use alpinist_core::verify::{Limits, MethodReport, Outcome};

use super::front_end;
use crate::diagnostics::{emit, emit_plain};
use crate::exit::Exit;
use crate::input::Source;

pub struct Options {
    pub unroll: Option<u32>,
    pub merge: Option<u32>,
    pub tile: Option<String>,
    pub var: Option<String>,
    pub output: Option<PathBuf>,
    pub no_verify: bool,
    /// `--memory`: Z3's memory limit in MB for the whole run (it verifies in-process).
    pub memory: u32,
    pub json: bool,
}

/// Why a run ended inconclusive when Z3's memory limit stopped a query.
fn memory_note(mb: u32) -> String {
    format!(
        "unknown: {}; raise `--memory` to decide",
        alpinist_core::verify::memory_reason(mb)
    )
}

/// One optimisation of one target (a loop, or a par statement for tiling).
struct Request {
    target: Span,
    optimisation: Optimisation,
    /// The `gpuopt` line it came from, removed from the output once applied.
    gpuopt: Option<Span>,
}

pub fn run(file: &std::path::Path, options: &Options) -> Exit {
    // Like `verify`, the work runs in a worker process bounded in memory: libz3 lets some
    // out-of-memory errors escape a check and end the process, which must read as unknown
    // (exit 3), not as a crash.
    if crate::worker::is_worker() {
        crate::worker::watch_parent();
    } else if file.as_os_str() != "-" {
        if let Ok(exe) = std::env::current_exe() {
            return supervise(&exe, options);
        }
    }
    run_here(file, options)
}

fn supervise(exe: &std::path::Path, options: &Options) -> Exit {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    match crate::worker::run_and_relay(exe, &args, &[], options.memory, jobs) {
        Err(e) => {
            emit_plain(format_args!("cannot start the optimisation worker: {e}"));
            Exit::Environment
        }
        Ok(crate::worker::Ended::Exited(code)) => Exit::from_code(code),
        Ok(crate::worker::Ended::OutOfMemory) => {
            emit_plain(super::verify::out_of_memory(options.memory));
            Exit::Inconclusive
        }
        Ok(crate::worker::Ended::Crashed { .. }) => {
            emit_plain(
                "internal error: the Z3 library crashed while optimising (libz3 4.8.12); \
                 please report this input",
            );
            Exit::Environment
        }
    }
}

fn run_here(file: &std::path::Path, options: &Options) -> Exit {
    alpinist_core::verify::set_memory_limit(options.memory);
    let (source, parsed, _checked) = match front_end(file) {
        Ok(x) => x,
        Err(exit) => return exit,
    };
    let program = &parsed.program;
    let at = |span: Span| {
        let (l, c) = line_col(&source.text, span.start as usize);
        format!("{l}:{c}")
    };
    let flags = match flag_optimisations(options) {
        Ok(flags) => flags,
        Err(message) => {
            emit_plain(message);
            return Exit::BadInput;
        }
    };
    let mut requests = match annotation_requests(program, &at) {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    for optimisation in flags {
        match flag_request(program, optimisation, options.var.as_deref(), &at) {
            Ok(request) => {
                // A flag overrides an annotation of the same kind on the same target.
                requests.retain(|r| {
                    r.target != request.target
                        || std::mem::discriminant(&r.optimisation)
                            != std::mem::discriminant(&request.optimisation)
                });
                requests.push(request);
            }
            Err(exit) => return exit,
        }
    }
    // Inner targets first: transforming an outer statement copies the inner ones.
    requests.sort_by_key(|r| r.target.end - r.target.start);
    if requests.is_empty() {
        emit_plain(
            "nothing to optimise: no `gpuopt` annotation and no `--unroll`, `--merge` or `--tile`",
        );
        return Exit::BadInput;
    }
    let limits = Limits::default();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The input must verify.
    let mut before = None;
    if !options.no_verify {
        let start = Instant::now();
        let reports = verify(program, &limits, jobs);
        let time = start.elapsed();
        match worst(&reports) {
            Outcome::Verified => {}
            outcome => {
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
                    let before = Some((reports, time));
                    print_refusal(&source.name, &[], refused, &before, exit);
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
        }
        before = Some((reports, time));
    }

    // Apply, in order.
    let mut current = program.clone();
    let mut rewrite_time = Duration::ZERO;
    let mut applicability_time = Duration::ZERO;
    let mut applied = Vec::new();
    for request in &requests {
        match transform::apply(&current, request.target, &request.optimisation, &limits) {
            Ok((next, timings)) => {
                current = next;
                rewrite_time += timings.rewrite;
                applicability_time += timings.applicability;
                applied.push(format!(
                    "{} at {}",
                    request.optimisation.done(),
                    at(request.target)
                ));
            }
            Err(refusal) => {
                let exit = match refusal {
                    Refusal::NotImplemented { .. } => Exit::BadInput,
                    // A probe that ran out of memory decided nothing: inconclusive.
                    _ if alpinist_core::verify::memory_limit_reached() => Exit::Inconclusive,
                    _ => Exit::Negative,
                };
                if options.json {
                    let code = miette::Diagnostic::code(&refusal).map(|c| c.to_string());
                    let help = miette::Diagnostic::help(&refusal).map(|h| h.to_string());
                    let (line, column) = line_col(&source.text, refusal.span().start as usize);
                    let refused = serde_json::json!({
                        "code": code,
                        "message": refusal.to_string(),
                        "help": help,
                        "span": { "line": line, "column": column },
                    });
                    print_refusal(&source.name, &applied, refused, &before, exit);
                }
                emit(&source, refusal);
                if exit == Exit::Inconclusive {
                    emit_plain(memory_note(options.memory));
                }
                return exit;
            }
        }
    }
    let gpuopts: BTreeSet<Span> = requests.iter().filter_map(|r| r.gpuopt).collect();
    current.visit_stmt_lists_mut(&mut |stmts| {
        stmts.retain(|s| !(matches!(s.kind, StmtKind::GpuOpt(_)) && gpuopts.contains(&s.span)))
    });
    // Member-level `gpuopt tile` lines that were applied go too.
    for item in &mut current.items {
        let members: Vec<&mut alpinist_core::syntax::Member> = match item {
            Item::Class(c) => c.members.iter_mut().collect(),
            Item::Member(m) => vec![m],
        };
        for m in members {
            m.gpuopts.retain(|g| !gpuopts.contains(&g.span));
        }
    }
    let text = syntax::print(&current, &parsed.trivia);

    // Reverify the text we hand out, as a user would.
    let mut after = None;
    if !options.no_verify {
        let reparsed = match syntax::parse(&text) {
            Ok(p) => p,
            Err(errors) => {
                for e in errors {
                    emit_plain(format_args!("{e}"));
                }
                emit_plain(
                    "internal error: the optimised program does not parse (a bug in alpinist)",
                );
                return Exit::Environment;
            }
        };
        let start = Instant::now();
        let reports = verify(&reparsed.program, &limits, jobs);
        after = Some((reports, start.elapsed()));
    }

    if let Some(path) = &options.output {
        if let Err(e) = std::fs::write(path, &text) {
            emit_plain(format_args!("cannot write {}: {e}", path.display()));
            return Exit::Environment;
        }
    }
    let exit = match &after {
        // Not a bug: the reverification needed more memory than `--memory` allows.
        Some((reports, _))
            if worst(reports) == Outcome::Unknown
                && alpinist_core::verify::memory_limit_reached() =>
        {
            emit_plain(memory_note(options.memory));
            Exit::Inconclusive
        }
        Some((reports, _)) if worst(reports) != Outcome::Verified => {
            let optimised = Source {
                name: format!("{} (optimised)", source.name),
                text: text.clone(),
            };
            for r in reports {
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
                describe(worst(reports))
            ));
            Exit::Environment
        }
        _ => Exit::Success,
    };

    // The report.
    let mut report = String::new();
    for line in &applied {
        report.push_str(&format!("{line}\n"));
    }
    report.push_str(&format!(
        "optimisation: {:.1} ms, applicability check: {:.1} ms\n",
        ms(rewrite_time),
        ms(applicability_time)
    ));
    match (&before, &after) {
        (Some((b, tb)), Some((a, ta))) => {
            report.push_str(&format!(
                "verification: before {:.1} ms, after {:.1} ms\n",
                ms(*tb),
                ms(*ta)
            ));
            for rb in b {
                let ra = a.iter().find(|r| r.name == rb.name);
                report.push_str(&format!(
                    "  {}: before {:.1} ms ({}), after {}\n",
                    rb.name,
                    ms(rb.time),
                    describe(rb.outcome()),
                    ra.map_or("missing".to_string(), |r| format!(
                        "{:.1} ms ({})",
                        ms(r.time),
                        describe(r.outcome())
                    ))
                ));
            }
        }
        _ => report.push_str("verification: skipped (--no-verify)\n"),
    }
    if options.json {
        let doc = serde_json::json!({
            "schema_version": 1,
            "file": source.name,
            "applied": applied,
            "optimisation_ms": ms(rewrite_time),
            "applicability_ms": ms(applicability_time),
            "verification_before": methods_json(&before),
            "verification_after": methods_json(&after),
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

/// The input and the output are verified as `verify` does: Z3, and concrete runs where it
/// leaves a routine unknown (an output that fails one is our bug, exit 4).
fn verify(program: &Program, limits: &Limits, jobs: usize) -> Vec<MethodReport> {
    alpinist_core::witness::verify_and_confirm(
        program,
        &|_| Ok(*limits),
        None,
        jobs,
        &alpinist_core::witness::Budget::default(),
    )
}

/// The `--json` document of a refusal: what was applied before it, why, and the
/// verification of the input (when it ran).
fn print_refusal(
    file: &str,
    applied: &[String],
    refused: serde_json::Value,
    before: &Option<(Vec<MethodReport>, Duration)>,
    exit: Exit,
) {
    let doc = serde_json::json!({
        "schema_version": 1,
        "file": file,
        "applied": applied,
        "refused": refused,
        "verification_before": methods_json(before),
        "exit": exit as u8,
    });
    println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
}

/// The verification part of the JSON report: total and per-method time and outcome.
fn methods_json(x: &Option<(Vec<MethodReport>, Duration)>) -> Option<serde_json::Value> {
    x.as_ref().map(|(reports, time)| {
        serde_json::json!({
            "time_ms": ms(*time),
            "methods": reports.iter().map(|r| serde_json::json!({
                "name": r.name,
                "outcome": describe(r.outcome()),
                "time_ms": ms(r.time),
            })).collect::<Vec<_>>(),
        })
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn describe(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Verified => "verified",
        Outcome::Unknown => "unknown",
        Outcome::Failed => "failed",
        Outcome::Unsupported => "unsupported",
    }
}

fn worst(reports: &[MethodReport]) -> Outcome {
    let rank = |o: Outcome| match o {
        Outcome::Verified => 0,
        Outcome::Unknown => 1,
        Outcome::Unsupported => 2,
        Outcome::Failed => 3,
    };
    reports
        .iter()
        .map(|r| r.outcome())
        .max_by_key(|o| rank(*o))
        .unwrap_or(Outcome::Verified)
}

/// The optimisations the command-line flags ask for, in a fixed order.
fn flag_optimisations(options: &Options) -> Result<Vec<Optimisation>, String> {
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
    if let Some(spec) = &options.tile {
        out.push(parse_tile(spec)?);
    }
    Ok(out)
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

/// A `gpuopt` line as an optimisation, or why it cannot be one.
fn annotated(kind: &GpuOptKind) -> Result<Optimisation, String> {
    let literal = |e: &Expr, what: &str| match &e.kind {
        ExprKind::IntLit(n) => u32::try_from(n)
            .ok()
            .filter(|k| *k > 0)
            .ok_or_else(|| format!("the {what} must be a positive integer literal")),
        _ => Err(format!("the {what} must be a positive integer literal")),
    };
    match kind {
        GpuOptKind::LoopUnroll { var, factor } => Ok(Optimisation::Unroll {
            var: var.name.clone(),
            factor: literal(factor, "unrolling factor")?,
        }),
        GpuOptKind::IterMerge { var, factor } => Ok(Optimisation::Merge {
            var: var.name.clone(),
            factor: literal(factor, "merging factor")?,
        }),
        GpuOptKind::Tile { layout, size } => Ok(Optimisation::Tile {
            layout: *layout,
            size: literal(size, "tile size")?,
        }),
        GpuOptKind::MatrixLin { .. } => {
            Err("not implemented yet: `gpuopt matrix_lin` (matrix linearisation)".into())
        }
        GpuOptKind::GlobToReg { .. } => {
            Err("not implemented yet: `gpuopt glob_to_reg` (data prefetching)".into())
        }
        GpuOptKind::Fuse { .. } => Err("not implemented yet: `gpuopt fuse` (kernel fusion)".into()),
    }
}

fn is_loop(s: &Stmt) -> bool {
    matches!(s.kind, StmtKind::While { .. } | StmtKind::For { .. })
}

/// The par statements directly in `body`, outside loops and branches too.
fn par_statements(stmts: &[Stmt]) -> Vec<Span> {
    let mut out = Vec::new();
    for s in stmts {
        s.visit(&mut |s| {
            if matches!(s.kind, StmtKind::Par(_)) {
                out.push(s.span);
            }
        });
    }
    out
}

/// The `gpuopt` annotations: a loop optimisation stands right before its loop; a tiling line
/// stands before a par statement, or on a method whose body has exactly one par statement.
fn annotation_requests(
    program: &Program,
    at: &dyn Fn(Span) -> String,
) -> Result<Vec<Request>, Exit> {
    let mut out = Vec::new();
    let mut error: Option<String> = None;
    for item in &program.items {
        let members: Vec<_> = match item {
            Item::Class(c) => c.members.iter().collect(),
            Item::Member(m) => vec![m],
        };
        for m in members {
            for g in &m.gpuopts {
                let optimisation = match annotated(&g.kind) {
                    Ok(o) => o,
                    Err(message) => {
                        error.get_or_insert(format!("{message} (the `gpuopt` at {})", at(g.span)));
                        continue;
                    }
                };
                if optimisation.targets_loop() {
                    error.get_or_insert(format!(
                        "the `gpuopt` at {} names a loop: put it right before that loop",
                        at(g.span)
                    ));
                    continue;
                }
                let pars = match &m.kind {
                    MemberKind::Method(method) => match &method.body {
                        MethodBody::Block(b) => par_statements(&b.stmts),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                match pars.as_slice() {
                    [one] => out.push(Request {
                        target: *one,
                        optimisation,
                        gpuopt: Some(g.span),
                    }),
                    [] => {
                        error.get_or_insert(format!(
                            "the `gpuopt tile` at {} stands on a method without a par block",
                            at(g.span)
                        ));
                    }
                    many => {
                        error.get_or_insert(format!(
                            "the `gpuopt tile` at {} stands on a method with {} par blocks ({}): put it right before the one to tile",
                            at(g.span),
                            many.len(),
                            many.iter().map(|s| at(*s)).collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
        }
    }
    let mut lists: Vec<Vec<Stmt>> = Vec::new();
    let mut copy = program.clone();
    copy.visit_stmt_lists_mut(&mut |stmts| lists.push(stmts.clone()));
    for stmts in &lists {
        for (j, s) in stmts.iter().enumerate() {
            let StmtKind::GpuOpt(g) = &s.kind else {
                continue;
            };
            let optimisation = match annotated(&g.kind) {
                Ok(o) => o,
                Err(message) => {
                    error.get_or_insert(format!("{message} (the `gpuopt` at {})", at(g.span)));
                    continue;
                }
            };
            let fits = |next: &Stmt| {
                if optimisation.targets_loop() {
                    is_loop(next)
                } else {
                    matches!(next.kind, StmtKind::Par(_))
                }
            };
            match stmts.get(j + 1) {
                Some(next) if fits(next) => out.push(Request {
                    target: next.span,
                    optimisation,
                    gpuopt: Some(s.span),
                }),
                _ => {
                    let what = if optimisation.targets_loop() {
                        "a loop"
                    } else {
                        "a par block"
                    };
                    error.get_or_insert(format!(
                        "the `gpuopt` at {} does not stand right before {what}",
                        at(g.span)
                    ));
                }
            }
        }
    }
    match error {
        Some(message) => {
            emit_plain(message);
            Err(Exit::BadInput)
        }
        None => Ok(out),
    }
}

/// The statement a flag designates: the one loop (whose guard mentions `--loop VAR`) for
/// `--unroll`/`--merge`, the one par statement for `--tile`.
fn flag_request(
    program: &Program,
    optimisation: Optimisation,
    var: Option<&str>,
    at: &dyn Fn(Span) -> String,
) -> Result<Request, Exit> {
    if !optimisation.targets_loop() {
        let mut pars = Vec::new();
        for body in program.method_bodies() {
            pars.extend(par_statements(&body.stmts));
        }
        return match pars.as_slice() {
            [one] => Ok(Request {
                target: *one,
                optimisation,
                gpuopt: None,
            }),
            [] => {
                emit_plain("no par block to tile");
                Err(Exit::BadInput)
            }
            many => {
                emit_plain(format_args!(
                    "{} par blocks match `--tile`; put `gpuopt tile` right before the one to tile:\n{}",
                    many.len(),
                    many.iter()
                        .map(|s| format!("  the par block at {}", at(*s)))
                        .collect::<Vec<_>>()
                        .join("\n")
                ));
                Err(Exit::BadInput)
            }
        };
    }
    let flag = match optimisation {
        Optimisation::Merge { .. } => "--merge",
        _ => "--unroll",
    };
    let mut loops: Vec<(Span, BTreeSet<String>)> = Vec::new();
    program.visit_stmts(&mut |s| {
        if let StmtKind::While { cond, .. }
        | StmtKind::For {
            cond: Some(cond), ..
        } = &s.kind
        {
            let mut names = BTreeSet::new();
            cond.names(&mut names);
            if var.is_none_or(|v| names.contains(v)) {
                loops.push((s.span, names));
            }
        }
    });
    let which = var.map_or(String::new(), |v| format!(" over `{v}`"));
    match loops.as_slice() {
        [] => {
            emit_plain(format_args!("no loop{which} for `{flag}`"));
            Err(Exit::BadInput)
        }
        [(span, names)] => {
            let var = match var {
                Some(v) => v.to_string(),
                None => {
                    // The guard variables the body updates in the template's form.
                    let fits: Vec<&String> = names
                        .iter()
                        .filter(|n| unroll::plan(program, *span, n, 1).is_ok())
                        .collect();
                    match fits.as_slice() {
                        [one] => (*one).clone(),
                        _ if names.len() == 1 => names.iter().next().cloned().unwrap_or_default(),
                        _ => {
                            emit_plain(format_args!(
                                "the guard of the loop at {} reads {}: say which is the loop variable with `--loop VAR`",
                                at(*span),
                                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                            ));
                            return Err(Exit::BadInput);
                        }
                    }
                }
            };
            let optimisation = match optimisation {
                Optimisation::Unroll { factor, .. } => Optimisation::Unroll { var, factor },
                Optimisation::Merge { factor, .. } => Optimisation::Merge { var, factor },
                tile => tile,
            };
            Ok(Request {
                target: *span,
                optimisation,
                gpuopt: None,
            })
        }
        many => {
            let list: Vec<String> = many
                .iter()
                .map(|(span, names)| {
                    format!(
                        "  the loop at {} (guard reads {})",
                        at(*span),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                })
                .collect();
            emit_plain(format_args!(
                "{} loops{which} match `{flag}`; pick one with `--loop VAR`:\n{}",
                many.len(),
                list.join("\n")
            ));
            Err(Exit::BadInput)
        }
    }
}
