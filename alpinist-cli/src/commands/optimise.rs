//! `alpinist optimise`: apply the file's `gpuopt` annotations and/or the flags, then reverify.
//!
//! Implemented: loop unrolling (`gpuopt loop_unroll i K;`, `--unroll K [--loop VAR]`). Every
//! other `gpuopt` kind and flag is exit 2 "not implemented yet", never silently ignored.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alpinist_core::syntax::{
    self, line_col, ExprKind, GpuOptKind, Item, MemberKind, Program, Span, Stmt, StmtKind,
};
use alpinist_core::transform::{self, unroll};
use alpinist_core::verify::{verify_program, Limits, MethodReport, Outcome};

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
    pub json: bool,
}

/// One loop to unroll.
struct Request {
    loop_span: Span,
    var: String,
    factor: u32,
    /// The `gpuopt` statement it came from, removed from the output once applied.
    gpuopt: Option<Span>,
}

pub fn run(file: &std::path::Path, options: &Options) -> Exit {
    let (source, parsed, _checked) = match front_end(file) {
        Ok(x) => x,
        Err(exit) => return exit,
    };
    if options.merge.is_some() {
        emit_plain("not implemented yet: `--merge` (iteration merging)");
        return Exit::BadInput;
    }
    if options.tile.is_some() {
        emit_plain("not implemented yet: `--tile` (tiling)");
        return Exit::BadInput;
    }
    if options.var.is_some() && options.unroll.is_none() {
        emit_plain("`--loop` selects the loop a flag applies to: give `--unroll K` with it");
        return Exit::BadInput;
    }
    let program = &parsed.program;
    let at = |span: Span| {
        let (l, c) = line_col(&source.text, span.start as usize);
        format!("{l}:{c}")
    };
    let mut requests = match annotation_requests(program, &at) {
        Ok(r) => r,
        Err(exit) => return exit,
    };
    if let Some(k) = options.unroll {
        match flag_request(program, k, options.var.as_deref(), &at) {
            Ok(request) => {
                requests.retain(|r| r.loop_span != request.loop_span);
                requests.push(request);
            }
            Err(exit) => return exit,
        }
    }
    // Inner loops first: unrolling an outer loop copies the inner ones.
    requests.sort_by_key(|r| r.loop_span.end - r.loop_span.start);
    if requests.is_empty() {
        emit_plain("nothing to optimise: no `gpuopt loop_unroll` annotation and no `--unroll`");
        return Exit::BadInput;
    }
    let limits = Limits::default();
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The input must verify.
    let mut before = None;
    if !options.no_verify {
        let start = Instant::now();
        let reports = verify_program(program, &limits, jobs);
        let time = start.elapsed();
        match worst(&reports) {
            Outcome::Verified => {}
            outcome => {
                emit_plain(format_args!(
                    "{}: the input does not verify ({}), so it is not optimised; run `alpinist verify {}`",
                    source.name,
                    describe(outcome),
                    source.name
                ));
                return if outcome == Outcome::Unknown {
                    Exit::Inconclusive
                } else {
                    Exit::Negative
                };
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
        match unroll::unroll(
            &current,
            request.loop_span,
            &request.var,
            request.factor,
            &limits,
        ) {
            Ok((next, timings)) => {
                current = next;
                rewrite_time += timings.rewrite;
                applicability_time += timings.applicability;
                applied.push(format!(
                    "unrolled the loop over `{}` at {} by {}",
                    request.var,
                    at(request.loop_span),
                    request.factor
                ));
            }
            Err(refusal) => {
                emit(&source, refusal);
                return Exit::Negative;
            }
        }
    }
    let gpuopts: BTreeSet<Span> = requests.iter().filter_map(|r| r.gpuopt).collect();
    transform::visit_stmt_lists_mut(&mut current, &mut |stmts| {
        stmts.retain(|s| !(matches!(s.kind, StmtKind::GpuOpt(_)) && gpuopts.contains(&s.span)))
    });
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
        let reports = verify_program(&reparsed.program, &limits, jobs);
        after = Some((reports, start.elapsed()));
    }

    if let Some(path) = &options.output {
        if let Err(e) = std::fs::write(path, &text) {
            emit_plain(format_args!("cannot write {}: {e}", path.display()));
            return Exit::Environment;
        }
    }
    let exit = match &after {
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
        let methods = |x: &Option<(Vec<MethodReport>, Duration)>| {
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
        };
        let doc = serde_json::json!({
            "schema_version": 1,
            "file": source.name,
            "applied": applied,
            "optimisation_ms": ms(rewrite_time),
            "applicability_ms": ms(applicability_time),
            "verification_before": methods(&before),
            "verification_after": methods(&after),
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

/// The `gpuopt loop_unroll` annotations; any other kind is "not implemented yet".
fn annotation_requests(
    program: &Program,
    at: &dyn Fn(Span) -> String,
) -> Result<Vec<Request>, Exit> {
    let mut out = Vec::new();
    let mut error = None;
    let pending = |kind: &GpuOptKind| match kind {
        GpuOptKind::LoopUnroll { .. } => None,
        GpuOptKind::IterMerge { .. } => Some("iter_merge (iteration merging)"),
        GpuOptKind::MatrixLin { .. } => Some("matrix_lin (matrix linearisation)"),
        GpuOptKind::GlobToReg { .. } => Some("glob_to_reg (prefetching)"),
        GpuOptKind::Tile { .. } => Some("tile (tiling)"),
        GpuOptKind::Fuse { .. } => Some("fuse (kernel fusion)"),
    };
    for item in &program.items {
        let members: Vec<_> = match item {
            Item::Class(c) => c.members.iter().collect(),
            Item::Member(m) => vec![m],
        };
        for m in members {
            for g in &m.gpuopts {
                if let Some(what) = pending(&g.kind) {
                    error.get_or_insert(format!(
                        "not implemented yet: `gpuopt {what}` at {}",
                        at(g.span)
                    ));
                }
            }
            let _ = matches!(m.kind, MemberKind::Field(_));
        }
    }
    let mut lists: Vec<Vec<Stmt>> = Vec::new();
    let mut copy = program.clone();
    transform::visit_stmt_lists_mut(&mut copy, &mut |stmts| lists.push(stmts.clone()));
    for stmts in &lists {
        for (j, s) in stmts.iter().enumerate() {
            let StmtKind::GpuOpt(g) = &s.kind else {
                continue;
            };
            if let Some(what) = pending(&g.kind) {
                error.get_or_insert(format!(
                    "not implemented yet: `gpuopt {what}` at {}",
                    at(g.span)
                ));
                continue;
            }
            let GpuOptKind::LoopUnroll { var, factor } = &g.kind else {
                continue;
            };
            let factor = match &factor.kind {
                ExprKind::IntLit(n) => u32::try_from(n).ok().filter(|k| *k > 0),
                _ => None,
            };
            let Some(factor) = factor else {
                error.get_or_insert(format!(
                    "the unrolling factor at {} must be a positive integer literal",
                    at(g.span)
                ));
                continue;
            };
            match stmts.get(j + 1) {
                Some(next)
                    if matches!(next.kind, StmtKind::While { .. } | StmtKind::For { .. }) =>
                {
                    out.push(Request {
                        loop_span: next.span,
                        var: var.name.clone(),
                        factor,
                        gpuopt: Some(s.span),
                    })
                }
                _ => {
                    error.get_or_insert(format!(
                        "`gpuopt loop_unroll` at {} does not stand before a loop",
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

/// The loop `--unroll K [--loop VAR]` designates: the one while loop (whose guard mentions VAR).
fn flag_request(
    program: &Program,
    factor: u32,
    var: Option<&str>,
    at: &dyn Fn(Span) -> String,
) -> Result<Request, Exit> {
    if factor == 0 {
        emit_plain("`--unroll` needs a positive factor");
        return Err(Exit::BadInput);
    }
    let mut loops: Vec<(Span, BTreeSet<String>)> = Vec::new();
    transform::visit_stmts(program, &mut |s| {
        if let StmtKind::While { cond, .. }
        | StmtKind::For {
            cond: Some(cond), ..
        } = &s.kind
        {
            let mut names = BTreeSet::new();
            names_in(cond, &mut names);
            if var.is_none_or(|v| names.contains(v)) {
                loops.push((s.span, names));
            }
        }
    });
    let which = var.map_or(String::new(), |v| format!(" over `{v}`"));
    match loops.as_slice() {
        [] => {
            emit_plain(format_args!("no loop{which} to unroll"));
            Err(Exit::BadInput)
        }
        [(span, names)] => {
            let var = match var {
                Some(v) => v.to_string(),
                None => {
                    // The guard variables the body updates in the template's form.
                    let fits: Vec<&String> = names
                        .iter()
                        .filter(|n| unroll::plan(program, *span, n, factor).is_ok())
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
            Ok(Request {
                loop_span: *span,
                var,
                factor,
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
                "{} loops{which} match `--unroll`; pick one with `--loop VAR`:\n{}",
                many.len(),
                list.join("\n")
            ));
            Err(Exit::BadInput)
        }
    }
}

fn names_in(e: &alpinist_core::syntax::Expr, out: &mut BTreeSet<String>) {
    if let Ok(value) = serde_json::to_value(e) {
        fn go(v: &serde_json::Value, out: &mut BTreeSet<String>) {
            match v {
                serde_json::Value::Object(map) => {
                    if let Some(serde_json::Value::Object(id)) = map.get("Name") {
                        if let Some(serde_json::Value::String(s)) = id.get("name") {
                            out.insert(s.clone());
                        }
                    }
                    map.values().for_each(|v| go(v, out));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| go(v, out)),
                _ => {}
            }
        }
        go(&value, out);
    }
}
