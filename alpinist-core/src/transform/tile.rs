//! Tiling (design.md, "Transformation templates"): a par block of N threads over `tid` becomes
//! a par block of fewer threads `t`, each running a loop over the cells it handles:
//! - *inter*: T threads, thread t handles lo + t, lo + t + T, … < hi;
//! - *intra*: ⌈N/T⌉ threads, thread t handles the chunk [lo + tT, min(lo + (t+1)T, hi)) — the
//!   `min` is the loop guard `tid < lo + tT + T && tid < hi`.
//!
//! The thread contract is requantified over the cells of a thread (`\forall*` for permission
//! conjuncts, `\forall` for pure ones), with membership written as the thread *of* the cell —
//! `(i - lo) / T == t` or `(i - lo) % T == t` — so that the checker solves the thread from the
//! cell (`verify::one_point`) where the caller relates the threads' facts to its cells; the loop gets invariants for the permissions of all
//! its cells, the postconditions of the done cells, the preconditions of the cells not yet
//! done and, for every location the preconditions give permission to, that a cell not yet
//! done still holds its value at the start of the thread (`\old`).
//!
//! Applicability: one par block with one iterator, no barrier, no nested par, a contract
//! whose conjuncts can be requantified; T < N proved with Z3 in the state at the par (the
//! method cut there, as for unrolling).

use std::time::Instant;

use super::unroll::{prove_in_probe, MARK_BASE};
use super::{conjuncts, parse_expr, parse_stmts, respan, FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, BinaryOp, Builtin, ClauseKind, Expr, ExprKind, ParBlock, Program, Span, Stmt,
    StmtKind, TileLayout,
};
use crate::verify::{Limits, Status};

/// What the syntactic check found out about a par statement.
#[derive(Clone, Debug)]
pub struct Plan {
    pub par_span: Span,
    pub layout: TileLayout,
    pub size: u32,
    pub block: ParBlock,
}

/// Tile the par statement at `par_span`, after checking that it applies.
pub fn tile(
    program: &Program,
    par_span: Span,
    layout: TileLayout,
    size: u32,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    let start = Instant::now();
    let plan = plan(program, par_span, layout, size)?;
    let planned = start.elapsed();
    let check_start = Instant::now();
    check_applicable(program, &plan, limits)?;
    let applicability = check_start.elapsed();
    let rewrite_start = Instant::now();
    let out = apply(program, &plan)?;
    Ok((
        out,
        Timings {
            rewrite: planned + rewrite_start.elapsed(),
            applicability,
        },
    ))
}

/// The syntactic part of the applicability check.
pub fn plan(
    program: &Program,
    par_span: Span,
    layout: TileLayout,
    size: u32,
) -> Result<Plan, Refusal> {
    if size == 0 {
        return Err(Refusal::TileBadSize { span: par_span });
    }
    let stmt = super::unroll::find_stmt(program, par_span).ok_or(Refusal::TileCannotCheck {
        reason: "no par statement at this position".into(),
        span: par_span,
    })?;
    let StmtKind::Par(group) = &stmt.kind else {
        return Err(Refusal::TileCannotCheck {
            reason: "the statement is not a par block".into(),
            span: par_span,
        });
    };
    let shape = |what: &str, span: Span| Refusal::TileParShape {
        what: what.into(),
        span,
    };
    let [block] = &group.blocks[..] else {
        return Err(shape("several par blocks launched together", par_span));
    };
    if block.iters.len() != 1 {
        return Err(shape(
            &format!("a par block with {} iterators", block.iters.len()),
            block.span,
        ));
    }
    let mut inner = Err(());
    for s in &block.body.stmts {
        s.visit(&mut |s| match &s.kind {
            StmtKind::Barrier(_) if inner.is_err() => inner = Ok(("barrier", s.span)),
            StmtKind::Par(_) if inner.is_err() => inner = Ok(("par", s.span)),
            StmtKind::Return(_) if inner.is_err() => inner = Ok(("return", s.span)),
            _ => {}
        });
    }
    match inner {
        Ok(("barrier", span)) => return Err(Refusal::TileBarrier { span }),
        Ok((_, span)) => return Err(shape("a nested par block or a `return`", span)),
        Err(()) => {}
    }
    let tid = &block.iters[0].name.name;
    for clause in &block.contract.clauses {
        let fine = match &clause.kind {
            ClauseKind::Requires(e) | ClauseKind::Ensures(e) | ClauseKind::Context(e) => {
                conjuncts(e)
                    .into_iter()
                    .try_for_each(|c| check_conjunct(c, tid))
            }
            ClauseKind::ContextEverywhere(e) if !e.mentions(tid) => Ok(()),
            _ => Err(format!(
                "a `{}` clause of the thread",
                clause.kind.keyword()
            )),
        };
        if let Err(what) = fine {
            return Err(Refusal::TileContractShape {
                what,
                span: clause.span,
            });
        }
    }
    Ok(Plan {
        par_span,
        layout,
        size,
        block: block.clone(),
    })
}

/// A conjunct can be requantified: a pure one always (unless it rebinds the iterator); one with
/// permissions only as `Perm(l, p)` or `c ==> Perm(l, p)` mentioning the iterator.
fn check_conjunct(c: &Expr, tid: &str) -> Result<(), String> {
    let mut rebinds = false;
    c.visit(&mut |x| {
        if let ExprKind::Quantifier(q) = &x.kind {
            rebinds |= q.binders.iter().any(|b| b.name.name == tid);
        }
        if let ExprKind::Let { name, .. } = &x.kind {
            rebinds |= name.name == tid;
        }
    });
    if rebinds {
        return Err(format!("`{}` rebinds the thread id `{tid}`", print_expr(c)));
    }
    if !c.holds_permission() {
        return Ok(());
    }
    if !c.mentions(tid) {
        return Err(format!(
            "the permission `{}` does not depend on the thread id `{tid}`",
            print_expr(c)
        ));
    }
    if perm_location(c).is_none() {
        return Err(format!(
            "the permission `{}` is not of the form `Perm(l, p)` or `c ==> Perm(l, p)`",
            print_expr(c)
        ));
    }
    Ok(())
}

/// `(guard, location)` of `Perm(l, p)` / `c ==> Perm(l, p)`.
fn perm_location(c: &Expr) -> Option<(Option<&Expr>, &Expr)> {
    match &c.kind {
        ExprKind::Builtin {
            op: Builtin::Perm,
            args,
        } if args.len() == 2 && !args[0].holds_permission() => Some((None, &args[0])),
        ExprKind::Binary {
            op: BinaryOp::Implies,
            lhs,
            rhs,
        } if !lhs.holds_permission() => match perm_location(rhs)? {
            (None, l) => Some((Some(lhs), l)),
            _ => None,
        },
        _ => None,
    }
}

/// The Z3 part: T < hi - lo in the state at the par statement.
pub fn check_applicable(program: &Program, plan: &Plan, limits: &Limits) -> Result<(), Refusal> {
    let it = &plan.block.iters[0];
    let n = threads_text(&it.lo, &it.hi);
    let mark = Span {
        start: MARK_BASE,
        end: MARK_BASE,
    };
    let mut goal = parse_expr(&format!("{} < {n}", plan.size)).ok_or(Refusal::TileCannotCheck {
        reason: "internal: the bound does not parse".into(),
        span: plan.par_span,
    })?;
    super::unroll::set_spans(&mut goal, mark);
    let assert = Stmt {
        kind: StmtKind::Assert(goal),
        span: mark,
    };
    let statuses =
        prove_in_probe(program, plan.par_span, vec![assert], limits).map_err(|reason| {
            Refusal::TileCannotCheck {
                reason,
                span: plan.par_span,
            }
        })?;
    match statuses.first() {
        Some(Status::Verified) => Ok(()),
        other => {
            let mut names = std::collections::BTreeSet::new();
            it.lo.names(&mut names);
            it.hi.names(&mut names);
            let why = match other {
                Some(Status::Failed { model }) => {
                    let values: Vec<String> = model
                        .iter()
                        .filter(|(name, _)| names.contains(name))
                        .map(|(name, v)| format!("{name} may be {v}"))
                        .collect();
                    if values.is_empty() {
                        "it may not be".to_string()
                    } else {
                        values.join(", ")
                    }
                }
                Some(Status::Unknown { reason }) => format!("Z3 gave up ({reason})"),
                _ => "it was not checked".to_string(),
            };
            Err(Refusal::TileTooLarge {
                size: plan.size,
                threads: n,
                why,
                span: plan.par_span,
            })
        }
    }
}

/// `hi - lo` as text (`hi` when `lo` is 0).
fn threads_text(lo: &Expr, hi: &Expr) -> String {
    if is_zero(lo) {
        print_expr(hi)
    } else {
        format!("({}) - ({})", print_expr(hi), print_expr(lo))
    }
}

fn is_zero(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::IntLit(n) if *n == 0u8.into())
}

fn int_lit(e: &Expr) -> Option<u64> {
    match &e.kind {
        ExprKind::IntLit(n) => u64::try_from(n).ok(),
        _ => None,
    }
}

/// The rewrite (the checks have passed).
pub fn apply(program: &Program, plan: &Plan) -> Result<Program, Refusal> {
    let replacement = rewrite(program, plan).ok_or(Refusal::TileCannotCheck {
        reason: "internal: the tiled par block does not parse".into(),
        span: plan.par_span,
    })?;
    let mut out = program.clone();
    let mut done = false;
    out.visit_stmt_lists_mut(&mut |stmts| {
        if done {
            return;
        }
        if let Some(j) = stmts
            .iter()
            .position(|s| s.span == plan.par_span && matches!(s.kind, StmtKind::Par(_)))
        {
            stmts[j] = replacement.clone();
            done = true;
        }
    });
    if done {
        Ok(out)
    } else {
        Err(Refusal::TileCannotCheck {
            reason: "no par statement at this position".into(),
            span: plan.par_span,
        })
    }
}

fn rewrite(program: &Program, plan: &Plan) -> Option<Stmt> {
    let mut names = FreshNames::new(program);
    let t = names.fresh("t");
    let i = names.fresh("i");
    let block = &plan.block;
    let it = &block.iters[0];
    let tid = it.name.name.clone();
    let size = plan.size;
    let (lo, hi) = (print_expr(&it.lo), print_expr(&it.hi));
    let zero = is_zero(&it.lo);
    let plus_lo = |x: String| {
        if zero {
            x
        } else {
            format!("({lo}) + {x}")
        }
    };
    let offset = |x: &str| {
        if zero {
            x.to_string()
        } else {
            format!("({x} - ({lo}))")
        }
    };
    // Threads; the first cell; membership of a cell i (the thread as a function of the cell,
    // so that the checker can solve it, see `verify::one_point`); the loop.
    let (threads, base, member_i, guard, step, bounds) = match plan.layout {
        TileLayout::Intra => {
            let threads = match (int_lit(&it.lo), int_lit(&it.hi)) {
                (Some(l), Some(h)) if h >= l => (h - l).div_ceil(u64::from(size)).to_string(),
                _ => format!("({} + {}) / {size}", threads_text(&it.lo, &it.hi), size - 1),
            };
            let base = plus_lo(format!("{size} * {t}"));
            (
                threads,
                base.clone(),
                format!(
                    "{lo} <= {i} && {i} < {hi} && {} / {size} == {t}",
                    offset(&i)
                ),
                format!("{tid} < {base} + {size} && {tid} < {hi}"),
                1,
                format!("{base} <= {tid} && {tid} <= {base} + {size}"),
            )
        }
        TileLayout::Inter => {
            let base = plus_lo(t.clone());
            (
                size.to_string(),
                base.clone(),
                format!(
                    "{lo} <= {i} && {i} < {hi} && {} % {size} == {t}",
                    offset(&i)
                ),
                format!("{tid} < {hi}"),
                size,
                format!("{base} <= {tid} && {} % {size} == {t}", offset(&tid)),
            )
        }
    };
    let cell_i = parse_expr(&i)?;
    let quant = |c: &Expr, binder: &str, range: &str, by: &Expr| {
        let star = if c.holds_permission() {
            "\\forall*"
        } else {
            "\\forall"
        };
        format!(
            "({star} int {binder}; {range}; {})",
            print_expr(&c.substitute(&tid, by))
        )
    };
    let mut contract = Vec::new();
    let mut perms = Vec::new();
    let mut invariants = vec![bounds];
    let todo = format!("{member_i} && {tid} <= {i}");
    let done = format!("{member_i} && {i} < {tid}");
    let pre_perms: Vec<String> = clause_conjuncts(block, true)
        .into_iter()
        .filter(|c| c.holds_permission())
        .map(print_expr)
        .collect();
    let post_perms: Vec<String> = clause_conjuncts(block, false)
        .into_iter()
        .filter(|c| c.holds_permission())
        .map(print_expr)
        .collect();
    for clause in &block.contract.clauses {
        let (keyword, e, pre, post) = match &clause.kind {
            ClauseKind::Requires(e) => ("requires", e, true, false),
            ClauseKind::Ensures(e) => ("ensures", e, false, true),
            ClauseKind::Context(e) => ("context", e, true, true),
            ClauseKind::ContextEverywhere(e) => {
                contract.push(format!("context_everywhere {};", print_expr(e)));
                continue;
            }
            _ => return None,
        };
        for c in conjuncts(e) {
            if !c.mentions(&tid) {
                contract.push(format!("{keyword} {};", print_expr(c)));
                if pre && !c.holds_permission() {
                    invariants.push(print_expr(c));
                }
                continue;
            }
            // Over the cell i, permissions and pure facts alike: the caller's side solves the
            // thread from the cell, and Z3 instantiates the facts at the caller's cells.
            let requantified = quant(c, &i, &member_i, &cell_i);
            contract.push(format!("{keyword} {requantified};"));
            if c.holds_permission() {
                let text = print_expr(c);
                let (in_pre, in_post) = (pre_perms.contains(&text), post_perms.contains(&text));
                let range = match (in_pre, in_post) {
                    (true, true) => &member_i,
                    (true, false) => &todo,
                    _ => &done,
                };
                let q = quant(c, &i, range, &cell_i);
                if !perms.contains(&q) {
                    perms.push(q);
                }
                if pre {
                    if let Some((guard, loc)) = perm_location(c) {
                        let loc = print_expr(loc);
                        let same = format!("{loc} == \\old({loc})");
                        let fact = match guard {
                            Some(g) => format!("({}) ==> {same}", print_expr(g)),
                            None => same,
                        };
                        let fact = parse_expr(&fact)?;
                        invariants.push(quant(&fact, &i, &todo, &cell_i));
                    }
                }
            } else {
                if pre {
                    invariants.push(quant(c, &i, &todo, &cell_i));
                }
                if post {
                    invariants.push(quant(c, &i, &done, &cell_i));
                }
            }
        }
    }
    let label = block
        .label
        .as_ref()
        .map(|l| l.name.clone())
        .unwrap_or_else(|| names.fresh("tiles"));
    let mut lines = vec![format!("par {label}(int {t} = 0 .. {threads})")];
    lines.extend(contract);
    lines.push(format!("{{ int {tid} = {base};"));
    lines.extend(
        perms
            .iter()
            .chain(&invariants)
            .map(|inv| format!("loop_invariant {inv};")),
    );
    lines.push(format!("while ({guard}) {{ {tid} = {tid} + {step}; }} }}"));
    let stmt = parse_stmts(&lines.join("\n"))?.into_iter().next()?;
    let mut stmt = respan(stmt, plan.par_span);
    // The original body, with its own spans, before the update.
    if let StmtKind::Par(group) = &mut stmt.kind {
        if let Some(StmtKind::While { body, .. }) =
            group.blocks[0].body.stmts.last_mut().map(|s| &mut s.kind)
        {
            if let StmtKind::Block(b) = &mut body.kind {
                let tail = std::mem::take(&mut b.stmts);
                b.stmts = block.body.stmts.clone();
                b.stmts.extend(tail);
            }
        }
        if let Some(label) = &block.label {
            group.blocks[0].label = Some(label.clone());
        }
    }
    Some(stmt)
}

/// The tid-mentioning conjuncts of the preconditions (`pre`) or of the postconditions.
fn clause_conjuncts(block: &ParBlock, pre: bool) -> Vec<&Expr> {
    block
        .contract
        .clauses
        .iter()
        .filter_map(|c| match (&c.kind, pre) {
            (ClauseKind::Requires(e), true)
            | (ClauseKind::Ensures(e), false)
            | (ClauseKind::Context(e), _) => Some(conjuncts(e)),
            _ => None,
        })
        .flatten()
        .collect()
}
