//! Iteration merging (design.md, "Transformation templates"): a loop whose iteration count I is
//! static runs I mod M peeled iterations (the unrolling of `unroll.rs`), then a loop whose body
//! is the original body (with its update) M times over. A ghost counter `g` of the iterations
//! done carries the invariants that let the merged body be proved: `0 <= g && g <= I`,
//! `g % M == I % M`, and the value of the loop variable after g iterations — `i == s + c * g`
//! for `+`, `i == s - c * g` for `-`, and for `*` and `/` (no exponentiation in PVL) the value
//! at each count the loop head can see, `g == k && i == v_k || ...`.
//!
//! Applicability: the loop has the shape unrolling needs (`unroll::plan`: the guard compares
//! `i` and reads only locals, literals and `.length`; one unconditional update `i = i op c`;
//! no other write to a guard variable). The count is static when the start value of `i` and
//! every other variable of the guard are constants at loop entry. That is decided with Z3 on
//! unrolling's probe (the method cut at the loop), in two runs: the first asks for a model of
//! the state at loop entry (the candidate constants), the second proves that each candidate is
//! the only value. Being more general than the template, the constants may come from anywhere
//! the checker sees: initialisations, preconditions, `context_everywhere`, earlier asserts. The
//! count is then found by running the guard and the update on those constants.

use std::collections::BTreeMap;

use num_bigint::BigUint;

use super::unroll::{self, int_decl, Plan};
use super::{FreshNames, Refusal, Timings};
use crate::syntax::{
    print_expr, BinaryOp, Block, Clause, ClauseKind, Expr, ExprKind, Program, Span, Stmt, StmtKind,
    UnaryOp,
};
use crate::verify::{Limits, Status};

/// The largest iteration count the check computes; a guard that still holds after this many
/// iterations is refused (E0926).
pub const MAX_COUNT: u32 = 1 << 16;

/// What the applicability check found out about a loop.
#[derive(Clone, Debug)]
pub struct MergePlan {
    /// The loop's shape (its `factor` is unused).
    pub shape: Plan,
    pub factor: u32,
    /// The value of the loop variable at loop entry.
    pub start: i128,
    /// The value of the loop variable after k iterations, for k in 0..=count.
    pub values: Vec<i128>,
    /// The number of iterations (`values.len() - 1`).
    pub count: u32,
}

/// Merge the iterations of the loop at `loop_span` by `factor`, after checking that it applies.
pub fn merge(
    program: &Program,
    loop_span: Span,
    var: &str,
    factor: u32,
    limits: &Limits,
) -> Result<(Program, Timings), Refusal> {
    super::timed(
        || {
            if factor < 2 {
                return Err(Refusal::MergeBadFactor {
                    factor,
                    span: loop_span,
                });
            }
            let shape = unroll::plan(program, loop_span, var, 1).map_err(shape_refusal)?;
            let atoms = guard_atoms(&shape.cond, var);
            Ok((shape, atoms))
        },
        |(shape, atoms)| constants_at_entry(program, shape, atoms, limits),
        |(shape, _), constants| apply(program, &plan_count(shape, factor, &constants)?),
    )
}

/// Unrolling's refusals of the loop's shape, reworded for merging.
fn shape_refusal(r: Refusal) -> Refusal {
    let span = r.span();
    let reason = r.to_string();
    let reason = reason
        .strip_prefix("cannot unroll: ")
        .unwrap_or(&reason)
        .to_string();
    match r {
        Refusal::Unsupported { what, span } => Refusal::MergeUnsupported { what, span },
        Refusal::CannotCheck { reason, span } => Refusal::MergeCannotCheck { reason, span },
        Refusal::UpdateShape { detail, .. } => Refusal::MergeLoopShape {
            reason,
            label: detail,
            span,
        },
        Refusal::GuardShape { .. } | Refusal::GuardReadsHeap { .. } => Refusal::MergeLoopShape {
            reason,
            label: "this guard".into(),
            span,
        },
        Refusal::BodyWritesGuardVariable { .. } => Refusal::MergeLoopShape {
            reason,
            label: "assigned here".into(),
            span,
        },
        _ => Refusal::MergeCannotCheck { reason, span },
    }
}

/// The maximal parts of the guard other than the loop variable whose values it depends on:
/// names and `x.length`, without repetitions, in order of appearance.
pub fn guard_atoms(cond: &Expr, var: &str) -> Vec<Expr> {
    fn go(e: &Expr, var: &str, out: &mut Vec<Expr>) {
        match &e.kind {
            ExprKind::Name(id) if id.name == var => {}
            ExprKind::Name(_) | ExprKind::Field { .. } => {
                let text = print_expr(e);
                if !out.iter().any(|a| print_expr(a) == text) {
                    out.push(e.clone());
                }
            }
            _ => e.for_each_child(&mut |c| go(c, var, out)),
        }
    }
    let mut out = Vec::new();
    go(cond, var, &mut out);
    out
}

/// An integer literal (a negative one as `-n`).
fn int_expr(v: i128, span: Span) -> Expr {
    let lit = Expr {
        kind: ExprKind::IntLit(BigUint::from(v.unsigned_abs())),
        span,
    };
    if v < 0 {
        Expr {
            kind: ExprKind::Unary {
                op: UnaryOp::Neg,
                operand: Box::new(lit),
            },
            span,
        }
    } else {
        lit
    }
}

/// One quantity whose value at loop entry must be constant: the loop variable or an atom of
/// the guard, copied into a fresh local of the probe.
struct Quantity {
    /// In words, for a refusal: "the start value of `i`", "`n`".
    what: String,
    /// The printed expression (the key of the guard's atoms).
    text: String,
    expr: Expr,
    local: String,
}

/// The value of the loop variable and of every guard atom at loop entry, each proved to be the
/// only one possible: `(printed expression, value)`, the loop variable first.
fn constants_at_entry(
    program: &Program,
    shape: &Plan,
    atoms: &[Expr],
    limits: &Limits,
) -> Result<Vec<(String, i128)>, Refusal> {
    let span = shape.loop_span;
    let cannot = |reason: String| Refusal::MergeCannotCheck { reason, span };
    let mut fresh = FreshNames::new(program);
    let mut quantities = vec![Quantity {
        what: format!("the start value of `{}`", shape.var),
        text: shape.var.clone(),
        expr: Expr::name(&shape.var, shape.cond.span),
        local: fresh.fresh(&format!("{}_entry", shape.var)),
    }];
    for atom in atoms {
        let text = print_expr(atom);
        quantities.push(Quantity {
            what: format!("`{text}`"),
            text,
            expr: atom.clone(),
            local: fresh.fresh("bound_entry"),
        });
    }
    let marked = |k: u32| unroll::mark(k);
    let decls = |out: &mut Vec<Stmt>| {
        for q in &quantities {
            let mut init = q.expr.clone();
            unroll::set_spans(&mut init, marked(0));
            out.push(int_decl(&q.local, init, marked(0)));
        }
    };
    let value_of = |model: &[(String, String)], local: &str| {
        model
            .iter()
            .find(|(n, _)| n == local)
            .and_then(|(_, v)| v.parse::<i128>().ok())
    };
    // The candidates: what the program says (the last constant assigned before the loop, or an
    // equation in a precondition, `context_everywhere` or an assert) ...
    let said = said_constants(program, span);
    let mut candidates: Vec<Option<i128>> = quantities
        .iter()
        .map(|q| said.get(&q.text).copied())
        .collect();
    // ... else a model of the state at loop entry.
    if candidates.iter().any(Option::is_none) {
        let mut first = Vec::new();
        decls(&mut first);
        first.push(Stmt {
            kind: StmtKind::Assert(Expr {
                kind: ExprKind::BoolLit(false),
                span: marked(1),
            }),
            span: marked(1),
        });
        let report = unroll::run_probe(program, span, first, limits).map_err(cannot)?;
        let status = report
            .obligations
            .iter()
            .find(|o| o.span == marked(1))
            .map(|o| o.status.clone());
        let model = match status {
            Some(Status::Failed { model }) => model,
            Some(Status::Verified) => {
                return Err(cannot(
                    "the state at loop entry is contradictory (the loop is unreachable)".into(),
                ))
            }
            Some(Status::Unknown { reason }) => {
                let missing = quantities
                    .iter()
                    .zip(&candidates)
                    .find(|(_, c)| c.is_none())
                    .map_or(String::new(), |(q, _)| q.what.clone());
                return Err(cannot(format!(
                    "no constant value of {missing} is stated before the loop, and Z3 found no model of the state at loop entry ({reason})"
                )));
            }
            None => {
                return Err(cannot(
                    "the checker reported nothing at the loop (an earlier statement may fail)"
                        .into(),
                ))
            }
        };
        for (q, c) in quantities.iter().zip(candidates.iter_mut()) {
            if c.is_none() {
                *c = Some(value_of(&model, &q.local).ok_or_else(|| {
                    cannot(format!("no integer value of {} at loop entry", q.what))
                })?);
            }
        }
    }
    let candidates: Vec<i128> = candidates.into_iter().flatten().collect();
    // Second run: each candidate is the only possible value.
    let mut second = Vec::new();
    decls(&mut second);
    for (k, (q, v)) in quantities.iter().zip(&candidates).enumerate() {
        let m = marked(k as u32 + 1);
        second.push(Stmt {
            kind: StmtKind::Assert(Expr::binary(
                BinaryOp::Eq,
                Expr::name(&q.local, m),
                int_expr(*v, m),
            )),
            span: m,
        });
    }
    let report = unroll::run_probe(program, span, second, limits).map_err(cannot)?;
    for (k, (q, v)) in quantities.iter().zip(&candidates).enumerate() {
        let m = marked(k as u32 + 1);
        match report.obligations.iter().find(|o| o.span == m) {
            Some(o) => match &o.status {
                Status::Verified => {}
                Status::Failed { model } => {
                    return Err(Refusal::MergeCountNotStatic {
                        what: q.what.clone(),
                        value: v.to_string(),
                        other: value_of(model, &q.local)
                            .map_or_else(|| "another value".into(), |o| o.to_string()),
                        span,
                    })
                }
                Status::Unknown { reason } => return Err(cannot(reason.clone())),
            },
            None => return Err(cannot(format!("{} was not checked", q.what))),
        }
    }
    Ok(quantities
        .into_iter()
        .map(|q| q.text)
        .zip(candidates)
        .collect())
}

/// The constants the program states: `x == c` (or `c == x`) conjuncts of preconditions,
/// `context`, `context_everywhere` and par-block preconditions anywhere, of asserts and assumes
/// before `loop_span`, and the last `x = c` / `int x = c` before it. Keys are printed
/// expressions. Only candidates: each is proved before it is used.
fn said_constants(program: &Program, loop_span: Span) -> BTreeMap<String, i128> {
    fn constant(e: &Expr) -> Option<i128> {
        match &e.kind {
            ExprKind::IntLit(v) => i128::try_from(v).ok(),
            ExprKind::Unary {
                op: UnaryOp::Neg,
                operand,
            } => constant(operand)?.checked_neg(),
            _ => None,
        }
    }
    fn equations(e: &Expr, out: &mut BTreeMap<String, i128>) {
        let ExprKind::Binary { op, lhs, rhs } = &e.kind else {
            return;
        };
        match op {
            BinaryOp::And | BinaryOp::Star => {
                equations(lhs, out);
                equations(rhs, out);
            }
            BinaryOp::Eq => {
                if let Some(c) = constant(rhs) {
                    out.entry(print_expr(lhs)).or_insert(c);
                } else if let Some(c) = constant(lhs) {
                    out.entry(print_expr(rhs)).or_insert(c);
                }
            }
            _ => {}
        }
    }
    fn pre(clauses: &[Clause], out: &mut BTreeMap<String, i128>) {
        for c in clauses {
            if let ClauseKind::Requires(e)
            | ClauseKind::Context(e)
            | ClauseKind::ContextEverywhere(e) = &c.kind
            {
                equations(e, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    // Only the member holding the loop: another method's contract says nothing about this one.
    let holds = |span: Span| span.start <= loop_span.start && loop_span.end <= span.end;
    for item in &program.items {
        let members: Vec<&crate::syntax::Member> = match item {
            crate::syntax::Item::Class(c) => c.members.iter().collect(),
            crate::syntax::Item::Member(m) => vec![m],
        };
        for m in members.into_iter().filter(|m| holds(m.span)) {
            pre(&m.contract.clauses, &mut out);
        }
    }
    let before = |s: &Stmt| s.span.end <= loop_span.start;
    let mut assigned: Vec<(Span, String, i128)> = Vec::new();
    let bodies = program.method_bodies();
    let Some(body) = bodies.into_iter().find(|b| holds(b.span)) else {
        return out;
    };
    let mut visit = |s: &Stmt| match &s.kind {
        StmtKind::Par(group) => group
            .blocks
            .iter()
            .filter(|b| holds(b.span))
            .for_each(|b| pre(&b.contract.clauses, &mut out)),
        StmtKind::Assert(e) | StmtKind::Assume(e) if before(s) => equations(e, &mut out),
        StmtKind::Assign { target, value } if before(s) => {
            if let Some(c) = constant(value) {
                assigned.push((s.span, print_expr(target), c));
            }
        }
        StmtKind::LocalDecl { vars, .. } if before(s) => {
            for v in vars {
                if let Some(c) = v.init.as_ref().and_then(constant) {
                    assigned.push((v.span, v.name.name.clone(), c));
                }
            }
        }
        _ => {}
    };
    body.stmts.iter().for_each(|s| s.visit(&mut visit));
    assigned.sort_by_key(|(span, _, _)| span.start);
    for (_, name, c) in assigned {
        out.insert(name, c);
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Int(i128),
    Bool(bool),
}

/// Evaluates the guard (locals, literals, arithmetic) on constants, with the semantics every
/// back end agrees on: exact arithmetic, `/` and `%` only on non-negative operands.
fn eval(e: &Expr, env: &BTreeMap<String, i128>) -> Result<Value, String> {
    let int = |e: &Expr| match eval(e, env)? {
        Value::Int(v) => Ok(v),
        Value::Bool(_) => Err(format!("`{}` is not an integer", print_expr(e))),
    };
    let boolean = |e: &Expr| match eval(e, env)? {
        Value::Bool(v) => Ok(v),
        Value::Int(_) => Err(format!("`{}` is not a boolean", print_expr(e))),
    };
    let overflow = || format!("`{}` overflows", print_expr(e));
    Ok(match &e.kind {
        ExprKind::IntLit(v) => Value::Int(i128::try_from(v).map_err(|_| overflow())?),
        ExprKind::BoolLit(b) => Value::Bool(*b),
        ExprKind::Name(_) | ExprKind::Field { .. } => Value::Int(
            *env.get(&print_expr(e))
                .ok_or_else(|| format!("no value of `{}`", print_expr(e)))?,
        ),
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => Value::Int(int(operand)?.checked_neg().ok_or_else(overflow)?),
        ExprKind::Unary {
            op: UnaryOp::Not,
            operand,
        } => Value::Bool(!boolean(operand)?),
        ExprKind::Binary { op, lhs, rhs } => {
            use BinaryOp::*;
            match op {
                And => Value::Bool(boolean(lhs)? && boolean(rhs)?),
                Or => Value::Bool(boolean(lhs)? || boolean(rhs)?),
                Implies => Value::Bool(!boolean(lhs)? || boolean(rhs)?),
                _ => {
                    let (a, b) = (int(lhs)?, int(rhs)?);
                    let divides = || {
                        if a < 0 || b <= 0 {
                            Err(format!(
                                "`{}` divides {a} by {b} (only non-negative operands are supported)",
                                print_expr(e)
                            ))
                        } else {
                            Ok(())
                        }
                    };
                    match op {
                        Add => Value::Int(a.checked_add(b).ok_or_else(overflow)?),
                        Sub => Value::Int(a.checked_sub(b).ok_or_else(overflow)?),
                        Mul => Value::Int(a.checked_mul(b).ok_or_else(overflow)?),
                        Div => {
                            divides()?;
                            Value::Int(a / b)
                        }
                        Mod => {
                            divides()?;
                            Value::Int(a % b)
                        }
                        Lt => Value::Bool(a < b),
                        Le => Value::Bool(a <= b),
                        Gt => Value::Bool(a > b),
                        Ge => Value::Bool(a >= b),
                        Eq => Value::Bool(a == b),
                        Neq => Value::Bool(a != b),
                        _ => return Err(format!("`{}` in the guard", op.symbol())),
                    }
                }
            }
        }
        ExprKind::Cond {
            cond,
            then_expr,
            else_expr,
        } => {
            if boolean(cond)? {
                eval(then_expr, env)?
            } else {
                eval(else_expr, env)?
            }
        }
        _ => return Err(format!("`{}` in the guard", print_expr(e))),
    })
}

/// Runs the guard and the update on the constants at loop entry to find the iteration count.
pub fn plan_count(
    shape: Plan,
    factor: u32,
    constants: &[(String, i128)],
) -> Result<MergePlan, Refusal> {
    let span = shape.loop_span;
    let mut env: BTreeMap<String, i128> = constants.iter().cloned().collect();
    let start = env.get(&shape.var).copied().unwrap_or_default();
    let unsupported = |what: String| Refusal::MergeUnsupported { what, span };
    let step =
        i128::try_from(&shape.step).map_err(|_| unsupported(format!("the step {}", shape.step)))?;
    let guard = print_expr(&shape.cond);
    let mut values = vec![start];
    let mut x = start;
    loop {
        env.insert(shape.var.clone(), x);
        match eval(&shape.cond, &env)
            .map_err(|e| unsupported(format!("evaluating the guard: {e}")))?
        {
            Value::Bool(false) => break,
            Value::Bool(true) => {}
            Value::Int(_) => return Err(unsupported("a guard that is not a boolean".into())),
        }
        if values.len() > MAX_COUNT as usize {
            return Err(Refusal::MergeCountUnbounded {
                var: shape.var.clone(),
                start: start.to_string(),
                guard,
                limit: MAX_COUNT,
                span,
            });
        }
        let next = match shape.op {
            BinaryOp::Add => x.checked_add(step),
            BinaryOp::Sub => x.checked_sub(step),
            BinaryOp::Mul => x.checked_mul(step),
            _ if x < 0 => {
                return Err(unsupported(format!(
                    "dividing the negative value {x} of `{}`",
                    shape.var
                )))
            }
            _ => Some(x / step),
        };
        x = next.ok_or_else(|| unsupported(format!("`{}` overflowing", shape.var)))?;
        values.push(x);
    }
    let count = (values.len() - 1) as u32;
    if count < factor {
        return Err(Refusal::MergeFactorExceedsCount {
            factor,
            count,
            var: shape.var.clone(),
            start: start.to_string(),
            guard,
            span,
        });
    }
    Ok(MergePlan {
        shape,
        factor,
        start,
        values,
        count,
    })
}

/// The rewrite (the checks have passed): I mod M iterations peeled by unrolling, then the ghost
/// counter and the merged loop.
pub fn apply(program: &Program, plan: &MergePlan) -> Result<Program, Refusal> {
    let shape = &plan.shape;
    let rest = plan.count % plan.factor;
    let peeled = if rest > 0 {
        let peel = Plan {
            factor: rest,
            ..shape.clone()
        };
        unroll::apply(program, &peel)?
    } else {
        program.clone()
    };
    let g = FreshNames::new(program).fresh("g");
    unroll::replace_loop(&peeled, shape.loop_span, &|s| merged(s, plan, &g)).ok_or_else(|| {
        Refusal::MergeCannotCheck {
            reason: "no loop at this position".into(),
            span: shape.loop_span,
        }
    })
}

/// `ghost int g = I mod M;` and the loop with the ghost invariants and the body M times.
fn merged(stmt: &Stmt, plan: &MergePlan, g: &str) -> Vec<Stmt> {
    let StmtKind::While {
        contract,
        cond,
        body,
    } = &stmt.kind
    else {
        return vec![stmt.clone()];
    };
    let span = stmt.span;
    let rest = plan.count % plan.factor;
    let int = |v: i128| int_expr(v, span);
    let name = |n: &str| Expr::name(n, span);
    let ghost = |s: Stmt| Stmt {
        kind: StmtKind::Ghost(Box::new(s)),
        span,
    };
    let mut contract = contract.clone();
    let invariant = |e: Expr| Clause {
        kind: ClauseKind::LoopInvariant(e),
        span,
    };
    contract.clauses.push(invariant(Expr::binary(
        BinaryOp::And,
        Expr::binary(BinaryOp::Le, int(0), name(g)),
        Expr::binary(BinaryOp::Le, name(g), int(plan.count.into())),
    )));
    contract.clauses.push(invariant(Expr::binary(
        BinaryOp::Eq,
        Expr::binary(BinaryOp::Mod, name(g), int(plan.factor.into())),
        int(rest.into()),
    )));
    contract.clauses.push(invariant(relation(plan, g, span)));
    let mut stmts = Vec::new();
    for _ in 0..plan.factor {
        stmts.extend(unroll::body_copy(body));
    }
    stmts.push(ghost(Stmt {
        kind: StmtKind::Assign {
            target: name(g),
            value: Expr::binary(BinaryOp::Add, name(g), int(plan.factor.into())),
        },
        span,
    }));
    vec![
        ghost(int_decl(g, int(rest.into()), span)),
        Stmt {
            kind: StmtKind::While {
                contract,
                cond: cond.clone(),
                body: Box::new(Stmt {
                    kind: StmtKind::Block(Block {
                        stmts,
                        span: body.span,
                    }),
                    span: body.span,
                }),
            },
            span,
        },
    ]
}

/// The loop variable after `g` iterations: `i == s + c * g` (`+`), `i == s - c * g` (`-`);
/// for `*` and `/`, the value at each count the loop head sees (`g == k && i == v_k || ...`).
fn relation(plan: &MergePlan, g: &str, span: Span) -> Expr {
    let shape = &plan.shape;
    let var = || Expr::name(&shape.var, span);
    let int = |v: i128| int_expr(v, span);
    let step = i128::try_from(&shape.step).unwrap_or(1);
    match shape.op {
        BinaryOp::Add | BinaryOp::Sub => {
            let times = if step == 1 {
                Expr::name(g, span)
            } else {
                Expr::binary(BinaryOp::Mul, int(step), Expr::name(g, span))
            };
            let value = match (shape.op, plan.start) {
                (BinaryOp::Add, 0) => times,
                (op, s) => Expr::binary(op, int(s), times),
            };
            Expr::binary(BinaryOp::Eq, var(), value)
        }
        _ => {
            let rest = plan.count % plan.factor;
            let mut out: Option<Expr> = None;
            for k in (rest..=plan.count).step_by(plan.factor as usize) {
                let at = Expr::binary(
                    BinaryOp::And,
                    Expr::binary(BinaryOp::Eq, Expr::name(g, span), int(k.into())),
                    Expr::binary(BinaryOp::Eq, var(), int(plan.values[k as usize])),
                );
                out = Some(match out {
                    None => at,
                    Some(o) => Expr::binary(BinaryOp::Or, o, at),
                });
            }
            out.unwrap_or(Expr {
                kind: ExprKind::BoolLit(true),
                span,
            })
        }
    }
}
