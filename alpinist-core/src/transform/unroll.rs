//! Loop unrolling (design.md, "Transformation templates"): K copies of body + update before the
//! loop, each copy but the last followed by an `assert` of every loop invariant, then the loop
//! with its bound invariant shifted by K updates.
//!
//! Applicability: the guard compares the loop variable `i` and reads only locals and constants;
//! the body updates `i` exactly once, unconditionally, by `i = i op c` (op in + - * /, c a
//! positive constant) and assigns no other variable of the guard; and, proved with Z3 in the
//! state at loop entry, the guard holds for the first K iterations. The proof runs on a *probe*:
//! the method cut at the loop (code after it dropped, postconditions dropped, preconditions
//! kept), the loop replaced by `assert cond[i := upd^k(i)]` for k in 0..K.

use std::collections::BTreeSet;

use num_bigint::BigUint;

use super::{Refusal, Timings};
use crate::syntax::{
    print_expr, AssignedLocal, BinaryOp, Block, Clause, ClauseKind, Expr, ExprKind, Ident,
    LocalVar, MemberKind, MethodBody, Modifier, Program, Span, Stmt, StmtKind, Type, TypeKind,
};
use crate::verify::{verify_routine_at, Limits, MethodReport, Outcome};

/// What the syntactic check found out about a loop.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The span of the `while` statement.
    pub loop_span: Span,
    pub var: String,
    pub factor: u32,
    pub op: BinaryOp,
    pub step: BigUint,
    pub cond: Expr,
}

/// Unroll the loop at `loop_span` (a `while` statement) by `factor`, after checking that it
/// applies. The `gpuopt loop_unroll` line before the loop, if any, is left alone (the caller
/// removes the lines it applied).
pub fn unroll(
    program: &Program,
    loop_span: Span,
    var: &str,
    factor: u32,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    super::timed(
        || plan(program, loop_span, var, factor),
        |plan| check_applicable(program, plan, limits),
        |plan, ()| apply(program, &plan),
    )
}

/// The syntactic part of the applicability check.
pub fn plan(program: &Program, loop_span: Span, var: &str, factor: u32) -> Result<Plan, Refusal> {
    if factor == 0 {
        return Err(Refusal::BadFactor {
            factor: factor.to_string(),
            span: loop_span,
        });
    }
    let stmt = find_stmt(program, loop_span).ok_or_else(|| Refusal::CannotCheck {
        reason: "no loop at this position".into(),
        span: loop_span,
    })?;
    let (cond, body) = match &stmt.kind {
        StmtKind::While { cond, body, .. } => (cond, body),
        StmtKind::For { .. } => {
            return Err(Refusal::Unsupported {
                what: "a `for` loop".into(),
                span: loop_span,
            })
        }
        _ => {
            return Err(Refusal::CannotCheck {
                reason: "the statement is not a loop".into(),
                span: loop_span,
            })
        }
    };
    // The guard: a comparison mentioning `var`, reading only names, literals and arithmetic.
    let guard_text = print_expr(cond);
    let compares = matches!(
        &cond.kind,
        ExprKind::Binary {
            op: BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Neq,
            ..
        }
    );
    let mut guard_vars = BTreeSet::new();
    if !pure_locals(cond, &mut guard_vars) {
        return Err(Refusal::GuardReadsHeap {
            guard: guard_text,
            span: cond.span,
        });
    }
    if !compares || !guard_vars.contains(var) {
        return Err(Refusal::GuardShape {
            guard: guard_text,
            var: var.to_string(),
            span: cond.span,
        });
    }
    // The update: exactly one top-level `var = var op c` in the body, no other write to `var`.
    let top: Vec<&Stmt> = match &body.kind {
        StmtKind::Block(b) => b.stmts.iter().collect(),
        _ => vec![body.as_ref()],
    };
    let mut update: Option<(BinaryOp, BigUint)> = None;
    for s in &top {
        if let Some(u) = update_of(s, var) {
            match u {
                Ok(found) if update.is_none() => update = Some(found),
                Ok(_) => {
                    return Err(Refusal::UpdateShape {
                        var: var.into(),
                        span: s.span,
                        detail: "a second update".into(),
                    })
                }
                Err(detail) => {
                    return Err(Refusal::UpdateShape {
                        var: var.into(),
                        span: s.span,
                        detail,
                    })
                }
            }
            continue;
        }
        let writes = s.assigned_locals();
        if let Some(AssignedLocal { name, span }) = writes.iter().find(|a| a.name == *var) {
            // A write to `var` that is not the unconditional top-level update.
            return Err(Refusal::UpdateShape {
                var: name.clone(),
                span: *span,
                detail: "a conditional or nested assignment".into(),
            });
        }
        if let Some(AssignedLocal { name, span }) =
            writes.iter().find(|a| guard_vars.contains(&a.name))
        {
            return Err(Refusal::BodyWritesGuardVariable {
                name: name.clone(),
                span: *span,
            });
        }
    }
    let Some((op, step)) = update else {
        return Err(Refusal::UpdateShape {
            var: var.into(),
            span: body.span,
            detail: "no update of the loop variable".into(),
        });
    };
    Ok(Plan {
        loop_span,
        var: var.to_string(),
        factor,
        op,
        step,
        cond: cond.clone(),
    })
}

/// `Some(Ok)` for `var = var op c` (also `var++`/`var--`), `Some(Err)` for another write to
/// `var` at this statement, `None` when the statement is not an assignment to `var`.
fn update_of(s: &Stmt, var: &str) -> Option<Result<(BinaryOp, BigUint), String>> {
    match &s.kind {
        StmtKind::Increment(e) if is_name(e, var) => Some(Ok((BinaryOp::Add, BigUint::from(1u8)))),
        StmtKind::Decrement(e) if is_name(e, var) => Some(Ok((BinaryOp::Sub, BigUint::from(1u8)))),
        StmtKind::Assign { target, value } if is_name(target, var) => {
            let ExprKind::Binary { op, lhs, rhs } = &value.kind else {
                return Some(Err("not of the form `i = i op c`".into()));
            };
            if !matches!(
                op,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
            ) {
                return Some(Err(format!("`{}` is not one of + - * /", op.symbol())));
            }
            // `i op c`, or `c + i` / `c * i` (commutative).
            let constant = if is_name(lhs, var) {
                rhs
            } else if is_name(rhs, var) && matches!(op, BinaryOp::Add | BinaryOp::Mul) {
                lhs
            } else {
                return Some(Err("not of the form `i = i op c`".into()));
            };
            match &constant.kind {
                ExprKind::IntLit(c) if *c > BigUint::from(0u8) => Some(Ok((*op, c.clone()))),
                ExprKind::IntLit(_) => Some(Err("the step must be positive".into())),
                _ => Some(Err("the step is not a constant".into())),
            }
        }
        _ => None,
    }
}

pub(crate) fn is_name(e: &Expr, var: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(id) if id.name == var)
}

/// True when `e` reads only names, literals, arithmetic, comparisons and `.length`; collects
/// the names.
pub(crate) fn pure_locals(e: &Expr, names: &mut BTreeSet<String>) -> bool {
    match &e.kind {
        ExprKind::IntLit(_) | ExprKind::BoolLit(_) => true,
        ExprKind::Name(id) => {
            names.insert(id.name.clone());
            true
        }
        ExprKind::Unary { operand, .. } => pure_locals(operand, names),
        ExprKind::Binary { lhs, rhs, .. } => pure_locals(lhs, names) && pure_locals(rhs, names),
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            pure_locals(cond, names)
                && pure_locals(then_expr, names)
                && pure_locals(else_expr, names)
        }
        // An array's length never changes; the reference is a local.
        ExprKind::Field { base, name } if name.name == "length" => {
            matches!(base.kind, ExprKind::Name(_)) && pure_locals(base, names)
        }
        _ => false,
    }
}

/// `int name = init;`
pub(super) fn int_decl(name: &str, init: Expr, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::LocalDecl {
            ty: Type {
                kind: TypeKind::Int,
                span,
            },
            vars: vec![LocalVar {
                name: Ident {
                    name: name.to_string(),
                    span,
                },
                init: Some(init),
                span,
            }],
        },
        span,
    }
}

/// `upd(e)`: `e op step`.
fn upd(plan: &Plan, e: Expr) -> Expr {
    let span = e.span;
    Expr {
        kind: ExprKind::Binary {
            op: plan.op,
            lhs: Box::new(e),
            rhs: Box::new(Expr {
                kind: ExprKind::IntLit(plan.step.clone()),
                span,
            }),
        },
        span,
    }
}

pub(crate) fn set_spans(e: &mut Expr, span: Span) {
    e.span = span;
    match &mut e.kind {
        ExprKind::Field { name, .. } => name.span = span,
        ExprKind::Name(id) => id.span = span,
        _ => {}
    }
    e.for_each_child_mut(&mut |c| set_spans(c, span));
}

/// Spans no source file has: they mark the probe's asserts, one per iteration.
pub(crate) const MARK_BASE: u32 = u32::MAX - (1 << 20);

/// The span of a probe's last statement, `assert false;`: provable only where the probed
/// statement is unreachable. A reachability probe for the verifier (small budget, see
/// [`crate::verify::REACHABILITY_PROBES`]), beyond every `mark(k)` (k stays below 2^20 - 2^16).
pub(crate) const FEASIBILITY_MARK: u32 = u32::MAX;

/// Iterations whose guards one obligation of the probe checks together.
const PROBE_CHUNK: u32 = 64;

/// The Z3 part of the applicability check: the guard holds for the first K iterations in the
/// state at loop entry.
///
/// Linear in K: the values of `i` in the first K iterations are computed into a ring of
/// [`PROBE_CHUNK`] fresh locals (`p_m = p_{m-1} op c;`), and one `assert` checks the guards of
/// a whole chunk of iterations at once, so Z3 sees K/64 obligations, each of constant size.
/// (Substituting `upd^k(i)` into the guard builds nested terms of size k, quadratic in K and
/// deep enough to overflow the stack; one obligation per iteration makes Z3's incremental
/// checks quadratic.) When a chunk is not verified, a second probe checks that chunk's
/// iterations one by one, to name the first whose guard may be false.
pub fn check_applicable(program: &Program, plan: &Plan, limits: &Limits) -> Result<(), Refusal> {
    let mut fresh = super::FreshNames::new(program);
    let ring: Vec<String> = (0..PROBE_CHUNK.min(plan.factor))
        .map(|_| fresh.fresh(&format!("{}_probe", plan.var)))
        .collect();
    let cannot_check = |reason| Refusal::CannotCheck {
        reason,
        span: plan.loop_span,
    };
    let chunks = plan.factor.div_ceil(PROBE_CHUNK);
    let report = run_probe(
        program,
        plan.loop_span,
        guard_probe(plan, &ring, None),
        limits,
    )
    .map_err(cannot_check)?;
    let Some(failed_chunk) = (0..chunks).find(|&j| !all_verified(&report, j)) else {
        return Ok(());
    };
    let report = run_probe(
        program,
        plan.loop_span,
        guard_probe(plan, &ring, Some(failed_chunk)),
        limits,
    )
    .map_err(cannot_check)?;
    let first = failed_chunk * PROBE_CHUNK;
    let last = (first + PROBE_CHUNK).min(plan.factor);
    // The chunk failed, so one of its iterations does; should Z3 disagree between the two
    // probes, the chunk's first iteration is named rather than none.
    let k = (first..last)
        .find(|&k| !all_verified(&report, k))
        .unwrap_or(first);
    let mine: Vec<_> = report
        .obligations
        .iter()
        .filter(|o| o.span.start == MARK_BASE + k)
        .collect();
    Err(Refusal::TooFewIterations {
        factor: plan.factor,
        iteration: k + 1,
        guard: print_expr(&plan.cond),
        counterexample: counterexample(&plan.cond, &mine),
        span: plan.loop_span,
    })
}

/// Whether the report has obligations marked `mark(k)` and all of them are verified.
fn all_verified(report: &MethodReport, k: u32) -> bool {
    let mut mine = report
        .obligations
        .iter()
        .filter(|o| o.span.start == MARK_BASE + k)
        .peekable();
    mine.peek().is_some() && mine.all(|o| o.status == crate::verify::Status::Verified)
}

/// The statements replacing the loop in the guard probe: iteration k's value of `i` goes to
/// `ring[k % ring.len()]`; after each chunk of iterations, one `assert` of their guards marked
/// `mark(chunk)` — or, for the chunk `split`, one `assert` per iteration marked `mark(k)`, and
/// nothing after it.
fn guard_probe(plan: &Plan, ring: &[String], split: Option<u32>) -> Vec<Stmt> {
    let span = plan.cond.span;
    let size = ring.len() as u32;
    let guard = |k: u32, mark_at: u32| {
        let mut cond = plan
            .cond
            .substitute(&plan.var, &Expr::name(&ring[(k % size) as usize], span));
        set_spans(&mut cond, mark(mark_at));
        cond
    };
    let assert = |cond: Expr| Stmt {
        span: cond.span,
        kind: StmtKind::Assert(cond),
    };
    let mut out = Vec::new();
    for k in 0..plan.factor {
        let slot = &ring[(k % size) as usize];
        let value = match k {
            0 => Expr::name(&plan.var, span),
            _ => upd(plan, Expr::name(&ring[((k - 1) % size) as usize], span)),
        };
        if k < size {
            out.push(int_decl(slot, value, span));
        } else {
            out.push(Stmt {
                kind: StmtKind::Assign {
                    target: Expr::name(slot, span),
                    value,
                },
                span,
            });
        }
        let chunk = k / PROBE_CHUNK;
        let chunk_ends = k % PROBE_CHUNK == PROBE_CHUNK - 1 || k + 1 == plan.factor;
        if split == Some(chunk) {
            out.push(assert(guard(k, k)));
            if chunk_ends {
                break;
            }
        } else if chunk_ends {
            let first = chunk * PROBE_CHUNK;
            let mut all = guard(first, chunk);
            for m in first + 1..=k {
                let next = guard(m, chunk);
                all = Expr {
                    span: all.span,
                    kind: ExprKind::Binary {
                        op: BinaryOp::And,
                        lhs: Box::new(all),
                        rhs: Box::new(next),
                    },
                };
            }
            out.push(assert(all));
        }
    }
    out
}

/// ", e.g. when n = 1 and i = 0": the values Z3's counterexample gives the guard's variables at
/// loop entry, or nothing when Z3 gave none (unknown).
fn counterexample(guard: &Expr, failed: &[&crate::verify::Obligation]) -> String {
    let mut names = BTreeSet::new();
    guard.names(&mut names);
    let model = failed.iter().find_map(|o| match &o.status {
        crate::verify::Status::Failed { model } => Some(model),
        _ => None,
    });
    let values: Vec<String> = model
        .into_iter()
        .flatten()
        .filter(|(name, _)| names.contains(name))
        .map(|(name, value)| format!("{name} = {value}"))
        .collect();
    if values.is_empty() {
        String::new()
    } else {
        format!(", e.g. when {}", values.join(" and "))
    }
}

/// Verifies the probe of `loop_span` with `replacement` (statements marked with the spans
/// `MARK_BASE + k`) and returns the report of the method holding the loop, or why
/// there is none.
///
/// A probe never answers vacuously: every obligation of the code before the statement must be
/// verified (a failed one is assumed afterwards, and may make every later goal provable), and
/// the statement must be reachable — a last `assert false;` (marked [`FEASIBILITY_MARK`]) must
/// not be provable once the replacement's own asserts hold.
pub(crate) fn run_probe(
    program: &Program,
    loop_span: Span,
    mut replacement: Vec<Stmt>,
    limits: &Limits,
) -> Result<MethodReport, String> {
    let feasibility = Span {
        start: FEASIBILITY_MARK,
        end: FEASIBILITY_MARK,
    };
    replacement.push(Stmt {
        kind: StmtKind::Assert(Expr {
            kind: ExprKind::BoolLit(false),
            span: feasibility,
        }),
        span: feasibility,
    });
    let probe = probe(program, loop_span, replacement)
        .ok_or("the statement is inside a construct the check does not cut through")?;
    let report = probe_report(&probe, loop_span, limits)?;
    if let Some(o) = report
        .obligations
        .iter()
        .find(|o| o.span.start < MARK_BASE && o.status != crate::verify::Status::Verified)
    {
        let how = match o.status {
            crate::verify::Status::Failed { .. } => "fails",
            _ => "is not decided",
        };
        return Err(format!(
            "the code before it does not verify: `{}` {how} there ({}; run `alpinist verify`)",
            report.name,
            o.kind.describe()
        ));
    }
    let marked_verified = report
        .obligations
        .iter()
        .filter(|o| o.span.start >= MARK_BASE && o.span.start != FEASIBILITY_MARK)
        .all(|o| o.status == crate::verify::Status::Verified);
    let unreachable = report
        .obligations
        .iter()
        .any(|o| o.span.start == FEASIBILITY_MARK && o.status == crate::verify::Status::Verified);
    if marked_verified && unreachable {
        return Err(
            "it is unreachable: the facts before it contradict each other, so any claim about it would hold"
                .into(),
        );
    }
    Ok(report)
}

/// The report of the routine holding `at` in `probe`, or why there is none: it was not
/// checked, or the verifier cannot encode it.
pub(crate) fn probe_report(
    probe: &Program,
    at: Span,
    limits: &Limits,
) -> Result<MethodReport, String> {
    let report = verify_routine_at(probe, at, limits)
        .ok_or("the method holding the statement was not checked")?;
    if report.outcome() == Outcome::Unsupported {
        let why = report
            .error
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "unsupported construct".into());
        return Err(format!("the verifier cannot encode the method: {why}"));
    }
    Ok(report)
}

/// Proves `asserts` (each with its own span `MARK_BASE + k`) in the state just before the
/// statement at `target`: the method cut there (see [`probe`]). Returns one status per assert
/// (a failed one with Z3's model; several obligations of one assert are merged, the first
/// that is not verified wins), or why the check could not run.
pub(crate) fn prove_in_probe(
    program: &Program,
    target: Span,
    asserts: Vec<Stmt>,
    limits: &Limits,
) -> Result<Vec<crate::verify::Status>, String> {
    let count = asserts.len() as u32;
    let report = run_probe(program, target, asserts, limits)?;
    Ok((0..count)
        .map(|k| {
            let mine: Vec<_> = report
                .obligations
                .iter()
                .filter(|o| o.span.start == MARK_BASE + k)
                .collect();
            match mine
                .iter()
                .find(|o| o.status != crate::verify::Status::Verified)
            {
                Some(o) => o.status.clone(),
                None if mine.is_empty() => crate::verify::Status::Unknown {
                    reason: "not checked".into(),
                },
                None => crate::verify::Status::Verified,
            }
        })
        .collect())
}

/// A span no source file has, marking the `k`th statement of a probe.
pub(crate) fn mark(k: u32) -> Span {
    Span {
        start: MARK_BASE + k,
        end: MARK_BASE + k,
    }
}

/// The method holding `loop_span` cut at the loop (or, for the method's own span, where its
/// body starts): the loop replaced by `replacement`, the code after it dropped (in every enclosing block), the postconditions of the method and of the
/// enclosing par blocks dropped (preconditions kept); other methods' bodies dropped (their
/// contracts are what callers use), pure functions kept.
pub(crate) fn probe(program: &Program, loop_span: Span, replacement: Vec<Stmt>) -> Option<Program> {
    let mut out = program.clone();
    let mut found = false;
    for member in out.members_mut() {
        let MemberKind::Method(method) = &mut member.kind else {
            continue;
        };
        let MethodBody::Block(body) = &mut method.body else {
            continue;
        };
        if contains(method.span, loop_span) {
            // The method itself: the state where its body starts.
            let stmts = match method.span == loop_span {
                true => replacement.clone(),
                false => cut(&body.stmts, loop_span, &replacement)?,
            };
            body.stmts = stmts;
            member.contract.clauses = pre_only(&member.contract.clauses);
            found = true;
        } else if !method.modifiers.contains(&Modifier::Pure) {
            method.body = MethodBody::Abstract;
        }
    }
    found.then_some(out)
}

fn contains(outer: Span, inner: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

pub(crate) fn pre_only(clauses: &[Clause]) -> Vec<Clause> {
    clauses
        .iter()
        .filter_map(|c| match &c.kind {
            ClauseKind::Ensures(_) | ClauseKind::Yields(_) => None,
            ClauseKind::Context(e) => Some(Clause {
                kind: ClauseKind::Requires(e.clone()),
                span: c.span,
            }),
            _ => Some(c.clone()),
        })
        .collect()
}

fn cut(stmts: &[Stmt], target: Span, replacement: &[Stmt]) -> Option<Vec<Stmt>> {
    for (j, s) in stmts.iter().enumerate() {
        if s.span == target && matches!(s.kind, StmtKind::While { .. } | StmtKind::Par(_)) {
            let mut out = stmts[..j].to_vec();
            out.extend(replacement.iter().cloned());
            return Some(out);
        }
        // Generated statements may carry a span that covers the target (a register load
        // spans its segment): only statements that hold statements can hold the target.
        let compound = matches!(
            s.kind,
            StmtKind::Block(_)
                | StmtKind::If { .. }
                | StmtKind::While { .. }
                | StmtKind::For { .. }
                | StmtKind::Ghost(_)
                | StmtKind::Par(_)
        );
        if !contains(s.span, target) || !compound {
            continue;
        }
        let mut inner = s.clone();
        let ok = match &mut inner.kind {
            StmtKind::Block(b) => cut_block(b, target, replacement),
            StmtKind::If {
                then_branch,
                else_branch,
                ..
            } => {
                if contains(then_branch.span, target) {
                    cut_stmt(then_branch, target, replacement)
                } else if let Some(e) = else_branch {
                    cut_stmt(e, target, replacement)
                } else {
                    false
                }
            }
            StmtKind::While { body, .. } | StmtKind::For { body, .. } => {
                cut_stmt(body, target, replacement)
            }
            StmtKind::Ghost(g) => cut_stmt(g, target, replacement),
            StmtKind::Par(group) => {
                let mut ok = false;
                for block in &mut group.blocks {
                    if contains(block.span, target) {
                        ok = cut_block(&mut block.body, target, replacement);
                        block.contract.clauses = pre_only(&block.contract.clauses);
                    }
                }
                ok
            }
            _ => false,
        };
        if !ok {
            return None;
        }
        let mut out = stmts[..j].to_vec();
        out.push(inner);
        return Some(out);
    }
    None
}

fn cut_block(b: &mut Block, target: Span, replacement: &[Stmt]) -> bool {
    match cut(&b.stmts, target, replacement) {
        Some(stmts) => {
            b.stmts = stmts;
            true
        }
        None => false,
    }
}

fn cut_stmt(s: &mut Stmt, target: Span, replacement: &[Stmt]) -> bool {
    match cut(std::slice::from_ref(s), target, replacement) {
        Some(stmts) => {
            *s = Stmt {
                kind: StmtKind::Block(Block {
                    stmts,
                    span: s.span,
                }),
                span: s.span,
            };
            true
        }
        None => false,
    }
}

/// Find the statement with this span.
pub fn find_stmt(program: &Program, span: Span) -> Option<&Stmt> {
    let mut found = None;
    program.visit_stmts(&mut |s| {
        // A block is never a target: one with a loop's span is the loop's `for_as_while` scope.
        if s.span == span && found.is_none() && !matches!(s.kind, StmtKind::Block(_)) {
            found = Some(s);
        }
    });
    found
}

/// The rewrite (the checks have passed).
pub fn apply(program: &Program, plan: &Plan) -> Result<Program, Refusal> {
    replace_loop(program, plan.loop_span, &|s| rewrite(s, plan)).ok_or_else(|| {
        Refusal::CannotCheck {
            reason: "no loop at this position".into(),
            span: plan.loop_span,
        }
    })
}

/// The program with the `while` statement at `loop_span` replaced by `by(loop)`; `None` when
/// there is no such loop.
pub(crate) fn replace_loop(
    program: &Program,
    loop_span: Span,
    by: &dyn Fn(&Stmt) -> Vec<Stmt>,
) -> Option<Program> {
    let mut out = program.clone();
    let mut done = false;
    out.visit_stmt_lists_mut(&mut |stmts| {
        if done {
            return;
        }
        if let Some(j) = stmts
            .iter()
            .position(|s| s.span == loop_span && matches!(s.kind, StmtKind::While { .. }))
        {
            let replacement = by(&stmts[j]);
            stmts.splice(j..=j, replacement);
            done = true;
        }
    });
    done.then_some(out)
}

/// One copy of a loop body to splice into a statement list: its statements, or the whole block
/// when it declares locals (so that copies do not redeclare them in one scope).
pub(crate) fn body_copy(body: &Stmt) -> Vec<Stmt> {
    match &body.kind {
        StmtKind::Block(b)
            if !b
                .stmts
                .iter()
                .any(|s| matches!(s.kind, StmtKind::LocalDecl { .. })) =>
        {
            b.stmts.clone()
        }
        _ => vec![body.clone()],
    }
}

fn rewrite(stmt: &Stmt, plan: &Plan) -> Vec<Stmt> {
    let StmtKind::While {
        contract,
        cond,
        body,
    } = &stmt.kind
    else {
        return vec![stmt.clone()];
    };
    let copy = body_copy(body);
    let invariants: Vec<&Expr> = contract
        .clauses
        .iter()
        .filter_map(|c| match &c.kind {
            ClauseKind::LoopInvariant(e) => Some(e),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for k in 0..plan.factor {
        out.extend(copy.iter().cloned());
        if k + 1 < plan.factor {
            for inv in &invariants {
                out.push(Stmt {
                    kind: StmtKind::Assert((*inv).clone()),
                    span: inv.span,
                });
            }
        }
    }
    let written: BTreeSet<String> = body.assigned_locals().into_iter().map(|a| a.name).collect();
    let mut contract = contract.clone();
    for clause in &mut contract.clauses {
        if let ClauseKind::LoopInvariant(e) = &mut clause.kind {
            shift(e, plan, &written);
        }
    }
    out.push(Stmt {
        kind: StmtKind::While {
            contract,
            cond: cond.clone(),
            body: body.clone(),
        },
        span: stmt.span,
    });
    out
}

/// Shift the bound conjuncts of an invariant by K updates: `a <= i` becomes `a + cK <= i` for
/// `+`, `a * c^K <= i` for `*`; `i <= b` becomes `i <= b - cK` for `-`, `i <= b / c^K` for `/`
/// (also with `<`, `>=`, `>`). Bounds that mention a variable the body writes stay as they are.
fn shift(e: &mut Expr, plan: &Plan, written: &BTreeSet<String>) {
    let ExprKind::Binary { op, lhs, rhs } = &mut e.kind else {
        return;
    };
    if *op == BinaryOp::And {
        shift(lhs, plan, written);
        shift(rhs, plan, written);
        return;
    }
    // Normalise to "bound below var" / "bound above var".
    let var = plan.var.as_str();
    let (bound, below) = match op {
        BinaryOp::Le | BinaryOp::Lt if is_name(rhs, var) => (lhs, true),
        BinaryOp::Ge | BinaryOp::Gt if is_name(lhs, var) => (rhs, true),
        BinaryOp::Le | BinaryOp::Lt if is_name(lhs, var) => (rhs, false),
        BinaryOp::Ge | BinaryOp::Gt if is_name(rhs, var) => (lhs, false),
        _ => return,
    };
    let increasing = matches!(plan.op, BinaryOp::Add | BinaryOp::Mul);
    if below != increasing {
        return;
    }
    let mut names = BTreeSet::new();
    if !pure_locals(bound, &mut names) || names.iter().any(|n| n == var || written.contains(n)) {
        return;
    }
    let k = plan.factor;
    let amount = match plan.op {
        BinaryOp::Add | BinaryOp::Sub => &plan.step * BigUint::from(k),
        _ => plan.step.pow(k),
    };
    let span = bound.span;
    let new_bound = match (&bound.kind, plan.op) {
        (ExprKind::IntLit(a), BinaryOp::Add) => ExprKind::IntLit(a + &amount),
        (ExprKind::IntLit(a), BinaryOp::Mul) => ExprKind::IntLit(a * &amount),
        (ExprKind::IntLit(a), BinaryOp::Div) => ExprKind::IntLit(a / &amount),
        (ExprKind::IntLit(a), BinaryOp::Sub) if *a >= amount => ExprKind::IntLit(a - &amount),
        _ => ExprKind::Binary {
            op: plan.op,
            lhs: Box::new((**bound).clone()),
            rhs: Box::new(Expr {
                kind: ExprKind::IntLit(amount),
                span,
            }),
        },
    };
    bound.kind = new_bound;
}
