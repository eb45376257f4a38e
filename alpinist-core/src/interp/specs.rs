//! Contracts in a concrete run, with [`super::Limits::check_specs`]: the interpreter then
//! evaluates what the verifier must prove at the point it must prove it, on this run's state,
//! and follows permissions as exact fractions. It is the engine behind concrete failing
//! instances (`crate::witness`): a run from an input that satisfies the precondition, in
//! which an obligation is false, shows that no proof of the program exists.
//!
//! # Soundness of a reported failure
//! Every [`InterpError::SpecFailed`] must be a real failure of the program, never an artefact
//! of the run. So:
//! - **Only what is decided counts.** A conjunct that cannot be evaluated (ghost variables,
//!   predicates, unbounded quantifiers, `\old` where no snapshot exists) is skipped, never
//!   guessed. At the entry method, an undecided or false precondition makes the run
//!   [`InterpError::Infeasible`]: the input is not one the verifier considers. So is a false or
//!   undecided `assume`, and an inhale that would hold more than a full permission (the
//!   verifier's path ends there).
//! - **Permissions are followed exactly, or not at all.** Each activation (a method call, a
//!   par thread) holds a [`Ledger`]; calls, par blocks and barriers exhale and inhale their
//!   contracts' permissions as the verifier does, and `new` gives write permission to every
//!   cell. The run may hold *more* than the verifier at some point (loop bodies keep the
//!   frame here), which can only hide failures. Anything that moves permissions in a way not
//!   followed here — a wildcard (`read`), a predicate, `fold`/`unfold`, a field, a ghost call
//!   whose contract holds resources, `\matrix`, `context_everywhere` with resources — turns
//!   permission checking off for the rest of the run (`Machine::tracking`); failures found
//!   before stand, values and races are still checked after.
//! - Reads inside specifications are neither recorded for race detection nor checked for
//!   permission: they are not executed.

use std::collections::HashMap;

use crate::syntax::{
    Barrier, BinaryOp, Builtin, ClauseKind, Contract, Expr, ExprKind, Member, MemberKind, Method,
    MethodBody, ParBlock, PermLit, QuantifierKind, Span, Stmt, StmtKind, TypeKind,
};

use super::exec::Env;
use super::{Access, ArrayRef, InterpError, Machine, Spec, Value};

/// An exact, non-negative fraction `num / den` in lowest terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frac {
    num: i128,
    den: i128,
}

impl Frac {
    pub(crate) const ZERO: Frac = Frac { num: 0, den: 1 };
    pub(crate) const ONE: Frac = Frac { num: 1, den: 1 };

    /// `None` when negative, undefined or too large to follow.
    fn new(num: i128, den: i128) -> Option<Frac> {
        if den == 0 {
            return None;
        }
        let (num, den) = if den < 0 {
            (num.checked_neg()?, den.checked_neg()?)
        } else {
            (num, den)
        };
        if num < 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Frac {
            num: num / g,
            den: den / g,
        })
    }

    fn add(self, o: Frac) -> Option<Frac> {
        self.cross(o, i128::checked_add)
    }

    /// `self - o`, `None` when negative.
    fn sub(self, o: Frac) -> Option<Frac> {
        self.cross(o, i128::checked_sub)
    }

    /// `(self.num * o.den) op (o.num * self.den)` over `self.den * o.den`.
    fn cross(self, o: Frac, op: fn(i128, i128) -> Option<i128>) -> Option<Frac> {
        Frac::new(
            op(self.num.checked_mul(o.den)?, o.num.checked_mul(self.den)?)?,
            self.den.checked_mul(o.den)?,
        )
    }

    fn mul(self, o: Frac) -> Option<Frac> {
        Frac::new(self.num.checked_mul(o.num)?, self.den.checked_mul(o.den)?)
    }

    fn exceeds_one(self) -> bool {
        self.num > self.den
    }
}

impl std::fmt::Display for Frac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}\\{}", self.num, self.den)
        }
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The permissions one activation holds, per array cell.
pub(crate) type Ledger = HashMap<(ArrayRef, usize), Frac>;

/// A permission an assertion describes, for one cell.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    cell: (ArrayRef, usize),
    amount: Frac,
    span: Span,
}

impl<'p> Machine<'p, '_> {
    /// Evaluates a specification expression: no race recording, no permission checks.
    pub(crate) fn spec_eval(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
    ) -> Result<Value, InterpError> {
        self.in_spec += 1;
        let r = self.eval(env, e);
        self.in_spec -= 1;
        r
    }

    /// Checks the value conjuncts (`&&`, `**`) of `exprs`, leaving permissions out: a false one
    /// is [`InterpError::SpecFailed`] `what` at its span. `Ok(true)` when every conjunct was
    /// decided, `Ok(false)` when some could not be evaluated (skipped).
    pub(crate) fn check_values(
        &mut self,
        env: &mut Env<'p>,
        exprs: &[&'p Expr],
        what: Spec,
    ) -> Result<bool, InterpError> {
        let mut decided = true;
        for e in exprs {
            let mut conjuncts = Vec::new();
            e.flatten_and(&mut conjuncts);
            for c in conjuncts {
                if is_permission(c) {
                    continue;
                }
                match self.spec_eval(env, c) {
                    Ok(Value::Bool(true)) => {}
                    Ok(Value::Bool(false)) => {
                        return Err(InterpError::SpecFailed {
                            what,
                            detail: "this conjunct is false".into(),
                            thread: self.thread_suffix(),
                            span: c.span,
                        })
                    }
                    Ok(_) => decided = false,
                    Err(e) if undecided(&e) => decided = false,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(decided)
    }

    /// The permissions `exprs` describe in `env`, or `None` when they cannot be followed
    /// exactly (then permission checking is off for the rest of the run).
    pub(crate) fn chunks(
        &mut self,
        env: &mut Env<'p>,
        exprs: &[&'p Expr],
    ) -> Result<Option<Vec<Chunk>>, InterpError> {
        let mut out = Vec::new();
        for e in exprs {
            if !self.collect(env, e, &mut out)? {
                self.tracking = false;
                return Ok(None);
            }
        }
        Ok(Some(out))
    }

    /// Adds the permissions of `e` to `out`; `false` when they cannot be followed.
    fn collect(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
        out: &mut Vec<Chunk>,
    ) -> Result<bool, InterpError> {
        match &e.kind {
            ExprKind::Binary {
                op: BinaryOp::And | BinaryOp::Star,
                lhs,
                rhs,
            } => Ok(self.collect(env, lhs, out)? && self.collect(env, rhs, out)?),
            ExprKind::Binary {
                op: BinaryOp::Implies,
                lhs,
                rhs,
            } => match self.spec_eval(env, lhs) {
                Ok(Value::Bool(true)) => self.collect(env, rhs, out),
                Ok(Value::Bool(false)) => Ok(true),
                Ok(_) => Ok(false),
                Err(err) if undecided(&err) => Ok(!self.holds_resources(env, rhs)),
                Err(err) => Err(err),
            },
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => match self.spec_eval(env, cond) {
                Ok(Value::Bool(b)) => self.collect(env, if b { then_expr } else { else_expr }, out),
                Ok(_) => Ok(false),
                Err(err) if undecided(&err) => Ok(!self.holds_resources(env, e)),
                Err(err) => Err(err),
            },
            ExprKind::Let {
                name, value, body, ..
            } => {
                let v = match self.spec_eval(env, value) {
                    Ok(v) => v,
                    Err(err) if undecided(&err) => return Ok(!self.holds_resources(env, body)),
                    Err(err) => return Err(err),
                };
                env.push_scope();
                env.declare(&name.name, Some(v));
                let r = self.collect(env, body, out);
                env.pop_scope();
                r
            }
            ExprKind::Quantifier(q)
                if matches!(q.kind, QuantifierKind::ForallStar | QuantifierKind::Forall)
                    && self.holds_resources(env, &q.body) =>
            {
                env.push_scope();
                let r = self.collect_quantified(env, q, 0, out);
                env.pop_scope();
                r
            }
            ExprKind::Builtin {
                op: Builtin::Perm | Builtin::PointsTo,
                args,
            } if args.len() >= 2 => self.collect_perm(env, &args[0], &args[1], e.span, out),
            _ => Ok(!self.holds_resources(env, e)),
        }
    }

    fn collect_quantified(
        &mut self,
        env: &mut Env<'p>,
        q: &'p crate::syntax::Quantifier,
        k: usize,
        out: &mut Vec<Chunk>,
    ) -> Result<bool, InterpError> {
        let Some(binder) = q.binders.get(k) else {
            if let Some(c) = &q.cond {
                match self.spec_eval(env, c) {
                    Ok(Value::Bool(true)) => {}
                    Ok(Value::Bool(false)) => return Ok(true),
                    Ok(_) => return Ok(false),
                    Err(err) if undecided(&err) => return Ok(false),
                    Err(err) => return Err(err),
                }
            }
            return self.collect(env, &q.body, out);
        };
        if binder.ty.kind != TypeKind::Int {
            return Ok(false);
        }
        self.in_spec += 1;
        let range = self.binder_range(env, q, k, binder);
        self.in_spec -= 1;
        let (lo, hi) = match range {
            Ok(r) => r,
            Err(err) if undecided(&err) => return Ok(false),
            Err(err) => return Err(err),
        };
        let mut i = lo;
        while i < hi {
            self.tick(binder.span)?;
            env.declare(&binder.name.name, Some(Value::Int(i)));
            let r = self.collect_quantified(env, q, k + 1, out);
            env.pop_var();
            if !r? {
                return Ok(false);
            }
            i += 1;
        }
        Ok(true)
    }

    fn collect_perm(
        &mut self,
        env: &mut Env<'p>,
        loc: &'p Expr,
        amount: &'p Expr,
        span: Span,
        out: &mut Vec<Chunk>,
    ) -> Result<bool, InterpError> {
        let ExprKind::Index { base, index } = &loc.peel_triggers().kind else {
            return Ok(false);
        };
        if matches!(index.kind, ExprKind::AllIndices) {
            // `Perm(a[*], p)`: every cell of `a`.
            self.in_spec += 1;
            let array = self.eval(env, base);
            self.in_spec -= 1;
            let r = match array {
                Ok(Value::Array(r)) => r,
                Ok(_) => return Ok(false),
                Err(err) if undecided(&err) => return Ok(false),
                Err(err) => return Err(err),
            };
            let Some(amount) = self.frac(env, amount)? else {
                return Ok(false);
            };
            let len = self.memory.get(r).map_or(0, <[Value]>::len);
            out.extend((0..len).map(|i| Chunk {
                cell: (r, i),
                amount,
                span,
            }));
            return Ok(true);
        }
        self.in_spec += 1;
        let cell = self.cell_of(env, base, index, loc.span);
        self.in_spec -= 1;
        let cell = match cell {
            Ok(c) => c,
            Err(err) if undecided(&err) => return Ok(false),
            Err(err) => return Err(err),
        };
        let Some(amount) = self.frac(env, amount)? else {
            return Ok(false);
        };
        out.push(Chunk { cell, amount, span });
        Ok(true)
    }

    /// A permission amount as an exact fraction; `None` for a wildcard (`read`), a `frac`
    /// variable or anything else not followed. A zero denominator is the division by zero
    /// the verifier reports.
    fn frac(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<Option<Frac>, InterpError> {
        match &e.kind {
            ExprKind::PermLit(PermLit::Write) => Ok(Some(Frac::ONE)),
            ExprKind::PermLit(PermLit::None) => Ok(Some(Frac::ZERO)),
            ExprKind::PermLit(PermLit::Read) => Ok(None),
            ExprKind::Binary {
                op: BinaryOp::FracDiv,
                lhs,
                rhs,
            } => {
                let (Some(n), Some(d)) = (self.spec_int(env, lhs)?, self.spec_int(env, rhs)?)
                else {
                    return Ok(None);
                };
                if d == 0 {
                    return Err(InterpError::DivisionByZero { span: rhs.span });
                }
                Ok(Frac::new(n, d))
            }
            ExprKind::Binary {
                op: op @ (BinaryOp::Mul | BinaryOp::Add | BinaryOp::Sub),
                lhs,
                rhs,
            } => {
                let (Some(a), Some(b)) = (self.frac(env, lhs)?, self.frac(env, rhs)?) else {
                    return Ok(None);
                };
                Ok(match op {
                    BinaryOp::Mul => a.mul(b),
                    BinaryOp::Add => a.add(b),
                    _ => a.sub(b),
                })
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => match self.spec_eval(env, cond) {
                Ok(Value::Bool(b)) => self.frac(env, if b { then_expr } else { else_expr }),
                Ok(_) => Ok(None),
                Err(err) if undecided(&err) => Ok(None),
                Err(err) => Err(err),
            },
            _ => Ok(self.spec_int(env, e)?.and_then(|v| Frac::new(v, 1))),
        }
    }

    /// An integer specification value, `None` when it cannot be evaluated.
    fn spec_int(&mut self, env: &mut Env<'p>, e: &'p Expr) -> Result<Option<i128>, InterpError> {
        match self.spec_eval(env, e) {
            Ok(Value::Int(v)) => Ok(Some(v)),
            Ok(_) => Ok(None),
            Err(err) if undecided(&err) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Whether `e` may describe resources: permissions, `Value`, `\matrix` (which the checker
    /// reads with permissions), permission literals, predicate applications.
    pub(crate) fn holds_resources(&self, env: &Env<'p>, e: &Expr) -> bool {
        let mut found = false;
        e.visit(&mut |x| match &x.kind {
            ExprKind::Builtin { op, .. }
                if !matches!(
                    op,
                    Builtin::Array | Builtin::TypeOf | Builtin::Type | Builtin::Values
                ) =>
            {
                found = true
            }
            ExprKind::PermLit(_) => found = true,
            ExprKind::Call { receiver, name, .. } => {
                let predicate = match receiver {
                    None => self.index.lookup(env.class, &name.name).is_some_and(|(_, m)| {
                        matches!(&m.kind, crate::syntax::MemberKind::Method(m)
                            if matches!(m.return_type.as_ref().map(|t| &t.kind), Some(TypeKind::Resource)))
                    }),
                    Some(_) => true,
                };
                found |= predicate;
            }
            _ => {}
        });
        found
    }

    /// Takes `chunks` out of `ledger`; too little held is [`InterpError::SpecFailed`] `what`.
    pub(crate) fn exhale(
        &mut self,
        ledger: &mut Ledger,
        chunks: &[Chunk],
        what: Spec,
    ) -> Result<(), InterpError> {
        if !self.tracking {
            return Ok(());
        }
        for c in chunks {
            let held = ledger.get(&c.cell).copied().unwrap_or(Frac::ZERO);
            match held.sub(c.amount) {
                Some(rest) => {
                    ledger.insert(c.cell, rest);
                }
                None => {
                    return Err(InterpError::SpecFailed {
                        what,
                        detail: format!(
                            "it needs {} of array#{}[{}], {held} is available",
                            c.amount, c.cell.0 .0, c.cell.1
                        ),
                        thread: self.thread_suffix(),
                        span: c.span,
                    })
                }
            }
        }
        Ok(())
    }

    /// Adds `chunks` to `ledger`; more than a full permission on a cell ends the run as
    /// infeasible (the verifier's state is inconsistent there).
    pub(crate) fn inhale(
        &mut self,
        ledger: &mut Ledger,
        chunks: &[Chunk],
        span: Span,
    ) -> Result<(), InterpError> {
        if !self.tracking {
            return Ok(());
        }
        for c in chunks {
            let held = ledger.get(&c.cell).copied().unwrap_or(Frac::ZERO);
            match held.add(c.amount) {
                Some(sum) if !sum.exceeds_one() => {
                    ledger.insert(c.cell, sum);
                }
                _ => {
                    return Err(InterpError::Infeasible {
                        reason: format!(
                            "more than a full permission of array#{}[{}] would be held",
                            c.cell.0 .0, c.cell.1
                        ),
                        span,
                    })
                }
            }
        }
        Ok(())
    }

    /// Write permission to every cell of a new array, and of the rows `new` allocated with it
    /// (`new int[M][N]`).
    pub(crate) fn own_new(&mut self, env: &mut Env<'p>, v: Value) {
        let mut todo = vec![v];
        while let Some(v) = todo.pop() {
            let Value::Array(r) = v else { continue };
            let cells = self
                .memory
                .get(r)
                .map(<[Value]>::to_vec)
                .unwrap_or_default();
            for (i, cell) in cells.into_iter().enumerate() {
                env.perms.insert((r, i), Frac::ONE);
                todo.push(cell);
            }
        }
    }

    /// An access by code: a read needs some permission, a write all of it.
    pub(crate) fn check_access(
        &self,
        env: &Env<'p>,
        cell: (ArrayRef, usize),
        access: Access,
        span: Span,
    ) -> Result<(), InterpError> {
        if !self.tracking || self.in_spec > 0 {
            return Ok(());
        }
        let held = env.perms.get(&cell).copied().unwrap_or(Frac::ZERO);
        let (ok, what, need) = match access {
            Access::Read => (held != Frac::ZERO, Spec::ReadPermission, "some"),
            Access::Write => (held == Frac::ONE, Spec::WritePermission, "1"),
        };
        if ok {
            return Ok(());
        }
        Err(InterpError::SpecFailed {
            what,
            detail: format!(
                "{held} of array#{}[{}] is held, {need} is needed",
                cell.0 .0, cell.1
            ),
            thread: self.thread_suffix(),
            span,
        })
    }
}

/// Errors that mean "cannot be evaluated here", not "false".
pub(crate) fn undecided(e: &InterpError) -> bool {
    matches!(
        e,
        InterpError::Unsupported { .. }
            | InterpError::Uninitialised { .. }
            | InterpError::TypeMismatch { .. }
    )
}

/// Whether `e` asserts permissions only: `Perm`, `PointsTo`, and what `**`, `c ==> P`,
/// `c ? P : Q` and `\forall*` build from them.
pub(crate) fn is_permission(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo,
            ..
        } => true,
        ExprKind::Binary {
            op: BinaryOp::Star,
            lhs,
            rhs,
        } => is_permission(lhs) && is_permission(rhs),
        ExprKind::Binary {
            op: BinaryOp::Implies,
            rhs,
            ..
        } => is_permission(rhs),
        ExprKind::Cond {
            then_expr,
            else_expr,
            ..
        } => is_permission(then_expr) && is_permission(else_expr),
        ExprKind::Quantifier(q) => q.kind == QuantifierKind::ForallStar && is_permission(&q.body),
        _ => false,
    }
}

/// Calls: a method's contract at entry and exit.
impl<'p> Machine<'p, '_> {
    /// Where `m` starts, in `env` (its parameters bound): the entry method's precondition must
    /// hold of the input (else the run is infeasible) and gives it its permissions; a called
    /// method's precondition is an obligation of the call, paid from `caller`'s permissions.
    /// Not called for pure functions: they read with their caller's permissions and move none.
    pub(crate) fn enter(
        &mut self,
        caller: Option<&mut Env<'p>>,
        env: &mut Env<'p>,
        member: &'p Member,
        m: &'p Method,
        call_span: Span,
    ) -> Result<(), InterpError> {
        let pre = contract_exprs(&member.contract, |k| {
            matches!(
                k,
                ClauseKind::Requires(_) | ClauseKind::Context(_) | ClauseKind::ContextEverywhere(_)
            )
        });
        match caller {
            None => {
                let infeasible = |reason: &str, span: Span| InterpError::Infeasible {
                    reason: reason.into(),
                    span,
                };
                let everywhere = contract_exprs(&member.contract, |k| {
                    matches!(k, ClauseKind::ContextEverywhere(_))
                });
                if everywhere.iter().any(|e| self.holds_resources(env, e)) {
                    self.tracking = false;
                }
                match self.check_values(env, &pre, Spec::Precondition) {
                    Ok(true) => {}
                    Ok(false) => {
                        return Err(infeasible(
                            "part of the precondition cannot be evaluated",
                            m.name.span,
                        ))
                    }
                    Err(InterpError::SpecFailed { span, .. }) => {
                        return Err(infeasible(
                            "the input does not satisfy the precondition",
                            span,
                        ))
                    }
                    Err(e) if e.is_failure() => {
                        return Err(infeasible(
                            "the precondition is not defined for the input",
                            m.name.span,
                        ))
                    }
                    Err(e) => return Err(e),
                }
                let chunks = match self.chunks(env, &pre) {
                    Ok(Some(c)) => c,
                    Ok(None) if self.limits.admit_untracked_permissions => {
                        self.tracking = false;
                        Vec::new()
                    }
                    Ok(None) => {
                        return Err(infeasible(
                            "the precondition's permissions cannot be followed exactly",
                            m.name.span,
                        ))
                    }
                    Err(e) if e.is_failure() => {
                        return Err(infeasible(
                            "the precondition is not defined for the input",
                            m.name.span,
                        ))
                    }
                    Err(e) => return Err(e),
                };
                let mut held = Ledger::new();
                self.inhale(&mut held, &chunks, m.name.span)?;
                env.perms = held;
            }
            Some(caller) => {
                let at_call = |e| at_call(e, m, call_span);
                self.check_values(env, &pre, Spec::Precondition)
                    .map_err(at_call)?;
                if let Some(chunks) = self.chunks(env, &pre)? {
                    self.exhale(&mut caller.perms, &chunks, Spec::Precondition)
                        .map_err(at_call)?;
                    let mut held = Ledger::new();
                    self.inhale(&mut held, &chunks, call_span)?;
                    env.perms = held;
                }
            }
        }
        if self.mentions_old(member) {
            env.old = Some(std::rc::Rc::new(self.memory.clone()));
        }
        Ok(())
    }

    /// A pure function applied: its precondition (values only) is an obligation of the
    /// application, reported at `call_span`.
    pub(crate) fn apply(
        &mut self,
        env: &mut Env<'p>,
        member: &'p Member,
        m: &'p Method,
        call_span: Span,
    ) -> Result<(), InterpError> {
        let pre = contract_exprs(&member.contract, |k| {
            matches!(k, ClauseKind::Requires(_) | ClauseKind::Context(_))
        });
        self.check_values(env, &pre, Spec::FunctionPrecondition)
            .map(drop)
            .map_err(|e| at_call(e, m, call_span))
    }

    /// Where `m` ends: its postcondition (parameters read at entry, `\result` bound) is its
    /// obligation; its permissions go back to `caller`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn leave(
        &mut self,
        caller: Option<&mut Env<'p>>,
        env: Env<'p>,
        member: &'p Member,
        m: &'p Method,
        args: &[Value],
        ghosts: &[(&'p str, Value)],
        result: Option<Value>,
        call_span: Span,
    ) -> Result<(), InterpError> {
        let post = contract_exprs(&member.contract, |k| {
            matches!(
                k,
                ClauseKind::Ensures(_) | ClauseKind::Context(_) | ClauseKind::ContextEverywhere(_)
            )
        });
        let mut at_exit = Env::new(env.class);
        for &(name, v) in ghosts {
            at_exit.declare(name, Some(v));
        }
        for (p, v) in m.params.iter().zip(args) {
            at_exit.declare(&p.name.name, Some(*v));
        }
        if let Some(v) = result {
            at_exit.declare("\\result", Some(v));
        }
        at_exit.old = env.old;
        at_exit.perms = env.perms;
        self.check_values(&mut at_exit, &post, Spec::Postcondition)?;
        if let Some(chunks) = self.chunks(&mut at_exit, &post)? {
            self.exhale(&mut at_exit.perms, &chunks, Spec::Postcondition)?;
            if let Some(caller) = caller {
                self.inhale(&mut caller.perms, &chunks, call_span)?;
            }
        }
        Ok(())
    }

    /// Whether the member's contract or body mentions `\old` (cached by address).
    fn mentions_old(&mut self, member: &'p Member) -> bool {
        let key = member as *const Member as usize;
        if let Some(&b) = self.old_cache.get(&key) {
            return b;
        }
        let mut found = false;
        let mut look = |e: &Expr| {
            e.visit(&mut |x| found |= matches!(x.kind, ExprKind::Old(_)));
        };
        for c in &member.contract.clauses {
            match &c.kind {
                ClauseKind::Requires(e)
                | ClauseKind::Ensures(e)
                | ClauseKind::Context(e)
                | ClauseKind::ContextEverywhere(e)
                | ClauseKind::LoopInvariant(e) => look(e),
                _ => {}
            }
        }
        if let MemberKind::Method(Method {
            body: MethodBody::Block(b),
            ..
        }) = &member.kind
        {
            for s in &b.stmts {
                s.visit(&mut |st| st.for_each_expr(&mut look));
            }
        }
        self.old_cache.insert(key, found);
        found
    }

    /// `\old(e)`: `e` in the memory where the method started, when a snapshot exists. A
    /// sequence value cannot leave that memory (its store is the snapshot's).
    pub(crate) fn eval_old(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
        span: Span,
    ) -> Result<Value, InterpError> {
        let Some(mut old) = env.old.take() else {
            return Err(InterpError::unsupported("`\\old` here", span));
        };
        std::mem::swap(&mut self.memory, std::rc::Rc::make_mut(&mut old));
        let r = self.spec_eval(env, e);
        std::mem::swap(&mut self.memory, std::rc::Rc::make_mut(&mut old));
        env.old = Some(old);
        match r {
            Ok(Value::Seq(_)) => Err(InterpError::unsupported("a sequence under `\\old`", span)),
            other => other,
        }
    }

    /// The value part of a loop's invariants, where the loop starts or after an iteration.
    pub(crate) fn check_invariants(
        &mut self,
        env: &mut Env<'p>,
        contract: &'p Contract,
        started: bool,
    ) -> Result<(), InterpError> {
        if !self.limits.check_specs {
            return Ok(());
        }
        let inv = contract_exprs(contract, |k| matches!(k, ClauseKind::LoopInvariant(_)));
        let what = if started {
            Spec::InvariantMaintained
        } else {
            Spec::InvariantEstablished
        };
        self.check_values(env, &inv, what).map(drop)
    }

    /// `assume e` with checking on: a false or undecided assumption leaves the verifier's paths.
    pub(crate) fn check_assume(
        &mut self,
        env: &mut Env<'p>,
        e: &'p Expr,
        span: Span,
    ) -> Result<(), InterpError> {
        match self.check_values(env, &[e], Spec::Precondition) {
            Ok(true) => Ok(()),
            Ok(false) => Err(InterpError::Infeasible {
                reason: "this assumption cannot be evaluated".into(),
                span,
            }),
            Err(InterpError::SpecFailed { .. }) => Err(InterpError::Infeasible {
                reason: "this assumption is false here".into(),
                span,
            }),
            Err(e) => Err(e),
        }
    }

    /// Skipped ghost code, `fold`/`unfold`: if it may move permissions (a fold, an unfold, a
    /// call of a method whose contract holds resources), permissions are no longer followed.
    pub(crate) fn skip_ghost(&mut self, env: &Env<'p>, stmt: &'p Stmt) {
        if !self.tracking {
            return;
        }
        let mut moves = false;
        stmt.visit(&mut |s| {
            moves |= matches!(s.kind, StmtKind::Fold(_) | StmtKind::Unfold(_));
            s.for_each_expr(&mut |e| {
                e.visit(&mut |x| {
                    if let ExprKind::Call { receiver, name, .. } = &x.kind {
                        moves |= match receiver {
                            Some(_) => true,
                            None => match self.index.lookup(env.class, &name.name) {
                                Some((_, member)) => match &member.kind {
                                    MemberKind::Method(m) => {
                                        !m.is_function()
                                            && member.contract.clauses.iter().any(|c| {
                                                contract_expr(&c.kind)
                                                    .is_some_and(|e| self.holds_resources(env, e))
                                            })
                                    }
                                    _ => true,
                                },
                                None => true,
                            },
                        };
                    }
                })
            });
        });
        if moves {
            self.tracking = false;
        }
    }
}

/// A failure of a callee's precondition, reported where it is called.
fn at_call(e: InterpError, callee: &Method, call_span: Span) -> InterpError {
    match e {
        InterpError::SpecFailed {
            what,
            detail,
            thread,
            ..
        } => InterpError::SpecFailed {
            what,
            detail: format!("{detail} (in the contract of `{}`)", callee.name.name),
            thread,
            span: call_span,
        },
        other => other,
    }
}

fn contract_expr(k: &ClauseKind) -> Option<&Expr> {
    match k {
        ClauseKind::Requires(e)
        | ClauseKind::Ensures(e)
        | ClauseKind::Context(e)
        | ClauseKind::ContextEverywhere(e)
        | ClauseKind::LoopInvariant(e) => Some(e),
        _ => None,
    }
}

/// The expressions of the clauses `pick` selects, in order.
pub(crate) fn contract_exprs(
    contract: &Contract,
    pick: impl Fn(&ClauseKind) -> bool,
) -> Vec<&Expr> {
    contract
        .clauses
        .iter()
        .filter(|c| pick(&c.kind))
        .filter_map(|c| contract_expr(&c.kind))
        .collect()
}

/// Par blocks and barriers: each thread holds what its contract gives it.
impl<'p> Machine<'p, '_> {
    /// A thread `t` of `block` starts: its precondition is the launcher's obligation, paid
    /// from the launcher's permissions; the thread holds exactly what it requires.
    pub(crate) fn start_thread(
        &mut self,
        launcher: &mut Env<'p>,
        block: &'p ParBlock,
        t: &mut Env<'p>,
    ) -> Result<(), InterpError> {
        t.perms = Ledger::new();
        t.old = None;
        if !self.limits.check_specs {
            return Ok(());
        }
        let pre = contract_exprs(&block.contract, |k| {
            matches!(k, ClauseKind::Requires(_) | ClauseKind::Context(_))
        });
        self.check_values(t, &pre, Spec::ParPrecondition)?;
        if let Some(chunks) = self.chunks(t, &pre)? {
            self.exhale(&mut launcher.perms, &chunks, Spec::ParPrecondition)?;
            self.inhale(&mut t.perms, &chunks, block.span)?;
        }
        Ok(())
    }

    /// A thread ends: its postcondition is its obligation; what it gives back is added to
    /// `returned`, which the launcher inhales once every thread has ended ([`Self::join`]).
    pub(crate) fn finish_thread(
        &mut self,
        block: &'p ParBlock,
        t: &mut Env<'p>,
        returned: &mut Vec<Chunk>,
    ) -> Result<(), InterpError> {
        if !self.limits.check_specs {
            return Ok(());
        }
        let post = contract_exprs(&block.contract, |k| {
            matches!(k, ClauseKind::Ensures(_) | ClauseKind::Context(_))
        });
        self.check_values(t, &post, Spec::ParPostcondition)?;
        if let Some(chunks) = self.chunks(t, &post)? {
            self.exhale(&mut t.perms, &chunks, Spec::ParPostcondition)?;
            returned.extend(chunks);
        }
        Ok(())
    }

    /// Every thread of a block has ended: the launcher holds what they gave back.
    pub(crate) fn join(
        &mut self,
        launcher: &mut Env<'p>,
        returned: &[Chunk],
        span: Span,
    ) -> Result<(), InterpError> {
        self.inhale(&mut launcher.perms, returned, span)
    }

    /// A thread arrives at the barrier at `span`: its precondition is its obligation, and what
    /// it requires goes into the barrier's `pool`.
    pub(crate) fn arrive(
        &mut self,
        barrier: &'p Barrier,
        span: Span,
        t: &mut Env<'p>,
        pool: &mut Ledger,
    ) -> Result<(), InterpError> {
        if !self.limits.check_specs {
            return Ok(());
        }
        let pre = contract_exprs(&barrier.contract, |k| {
            matches!(k, ClauseKind::Requires(_) | ClauseKind::Context(_))
        });
        self.check_values(t, &pre, Spec::BarrierPrecondition)?;
        if let Some(chunks) = self.chunks(t, &pre)? {
            self.exhale(&mut t.perms, &chunks, Spec::BarrierPrecondition)?;
            // What all threads hold of a cell is at most all of it: more is infeasible.
            self.inhale(pool, &chunks, span)?;
        }
        Ok(())
    }

    /// Every thread is at the barrier: each takes what its postcondition gives from the
    /// `pool` (all must be covered by what all threads brought), then its postcondition must
    /// hold of the state.
    pub(crate) fn release(
        &mut self,
        barrier: &'p Barrier,
        span: Span,
        t: &mut Env<'p>,
        pool: &mut Ledger,
    ) -> Result<(), InterpError> {
        if !self.limits.check_specs {
            return Ok(());
        }
        let post = contract_exprs(&barrier.contract, |k| {
            matches!(k, ClauseKind::Ensures(_) | ClauseKind::Context(_))
        });
        if let Some(chunks) = self.chunks(t, &post)? {
            self.exhale(pool, &chunks, Spec::BarrierPostcondition)?;
            self.inhale(&mut t.perms, &chunks, span)?;
        }
        self.check_values(t, &post, Spec::BarrierPostcondition)
            .map(drop)
    }
}
