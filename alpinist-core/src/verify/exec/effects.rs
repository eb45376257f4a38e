//! Calls of methods and allocations inside expressions: `int s = next() + next();`,
//! `while (f() < 3)`, `c ? f() : 0`, `b && f()`, `g(new C())`.
//!
//! [`Verifier::effects`] walks an expression that has effects (a call of a method, `new C(..)`,
//! `new T[n]`) in Java's evaluation order — receiver, then arguments left to right, operands
//! left to right, innermost first. Each effect runs as the statement it would be on its own
//! (precondition exhaled, postcondition inhaled, fresh object allocated); every operand and
//! every node on the way is evaluated in the state of its turn — so `issued + next()` reads
//! the field before the call — and its value recorded by node address (`Eval::precomputed`),
//! which the evaluator then returns for that node instead of evaluating it again.
//!
//! Short-circuiting is respected: the right operand of `&&`, `||` and `==>` and the branches
//! of `?:` run only under the path condition that reaches them, and the states of the two
//! paths are joined, as for an `if`. A value recorded on a path that was not taken is
//! unconstrained there, and the pure evaluation never reads it on that path.
//!
//! Effects stay out of specifications: a non-pure call in an assertion, a contract or under
//! a quantifier or `\let` is refused by the pure evaluator, as before.

use z3::ast::Bool;

use crate::syntax::{BinaryOp, Expr, ExprKind};

use super::super::assertion::Prover;
use super::super::expr::{unsupported, EncodeError, Eval};
use super::super::state::Value;
use super::{ty_of, Ghosts, State, Verifier};

impl<'c, 'p> Verifier<'c, 'p> {
    /// Whether `e` itself has an effect (its sub-expressions aside).
    fn is_effect(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Call { name, .. } => self
                .ctx
                .program
                .routine(&name.name)
                .is_some_and(|r| r.is_method()),
            ExprKind::New { .. } => true,
            ExprKind::NewArray { dims, .. } => !dims.is_empty(),
            _ => false,
        }
    }

    /// Whether evaluating `e` has an effect anywhere.
    pub(super) fn has_effects(&self, e: &Expr) -> bool {
        let mut any = false;
        e.visit(&mut |x| any |= self.is_effect(x));
        any
    }

    /// The value of the code expression `e` and the state after evaluating it, its calls and
    /// allocations included.
    pub(super) fn rhs(&mut self, st: State, e: &'p Expr) -> Result<(State, Value), EncodeError> {
        self.evaluated(st, e, |ev, e| ev.value(e))
    }

    /// The boolean code expression `e`, as [`Verifier::rhs`].
    pub(super) fn rhs_bool(
        &mut self,
        st: State,
        e: &'p Expr,
    ) -> Result<(State, Bool), EncodeError> {
        self.evaluated(st, e, |ev, e| ev.bool(e))
    }

    /// Runs the effects of `e`, then evaluates it purely with `pure` (its value recorded where
    /// it has effects).
    fn evaluated<T>(
        &mut self,
        st: State,
        e: &'p Expr,
        pure: impl FnOnce(&mut Eval<'_>, &Expr) -> Result<T, EncodeError>,
    ) -> Result<(State, T), EncodeError> {
        let mark = self.precomputed.len();
        let st = if self.has_effects(e) {
            self.effects(st, e)?
        } else {
            st
        };
        let v = self.now(&st, |ev| pure(ev, e));
        self.precomputed.truncate(mark);
        Ok((st, v?))
    }

    /// Runs the effects of `e` in evaluation order and records the value of `e` and of each
    /// operand evaluated before an effect, each in the state Java evaluates it in: in
    /// `issued + next()` the field is read before the call changes it.
    /// `e` has effects (the callers check).
    fn effects(&mut self, st: State, e: &'p Expr) -> Result<State, EncodeError> {
        if matches!(
            e.kind,
            ExprKind::Quantifier(_)
                | ExprKind::Let { .. }
                | ExprKind::Old(_)
                | ExprKind::Unfolding { .. }
        ) {
            return Err(unsupported(
                "a call of a method or an allocation under a quantifier, `\\let`, `\\old` or \
                 `unfolding`",
                e.span,
            ));
        }
        let st = match &e.kind {
            ExprKind::Binary {
                op: op @ (BinaryOp::And | BinaryOp::Or | BinaryOp::Implies),
                lhs,
                rhs,
            } => {
                let st = self.operand(st, lhs)?;
                let l = self.now(&st, |ev| ev.bool(lhs))?;
                let reaches_rhs = if *op == BinaryOp::Or { l.not() } else { l };
                self.on_path(st, reaches_rhs, rhs)?
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                let st = self.operand(st, cond)?;
                let c = self.now(&st, |ev| ev.bool(cond))?;
                let st = self.on_path(st, c.clone(), then_expr)?;
                self.on_path(st, c.not(), else_expr)?
            }
            _ => {
                let st = self.operands(st, e)?;
                if self.is_effect(e) {
                    let (st, v) = self.effect(st, e)?;
                    self.record(e, v);
                    return Ok(st);
                }
                st
            }
        };
        // `e`'s own operation, on the recorded values of its operands (an operand on a path
        // not taken, or without effects under `&&`/`?:`, is evaluated here, under its guard).
        let v = self.now(&st, |ev| ev.value(e))?;
        self.record(e, v);
        Ok(st)
    }

    /// The operands of `e`, left to right. A `then { r = y; }` item names the callee's `y`:
    /// bound by the call, not an operand of the caller.
    fn operands(&mut self, mut st: State, e: &'p Expr) -> Result<State, EncodeError> {
        let yielded: Vec<*const Expr> = match &e.kind {
            ExprKind::Call { yields, .. } => {
                yields.iter().map(|g| &g.value as *const Expr).collect()
            }
            _ => Vec::new(),
        };
        for child in e.children() {
            if !yielded.contains(&(child as *const Expr)) {
                st = self.operand(st, child)?;
            }
        }
        Ok(st)
    }

    /// An operand that is always evaluated: its effects run, or its value is recorded now.
    fn operand(&mut self, st: State, e: &'p Expr) -> Result<State, EncodeError> {
        if self.has_effects(e) {
            return self.effects(st, e);
        }
        let v = self.now(&st, |ev| ev.value(e))?;
        self.record(e, v);
        Ok(st)
    }

    /// `f` on an evaluator of the current state (recorded values included), its checks and
    /// facts handed to the prover.
    fn now<T>(
        &mut self,
        st: &State,
        f: impl FnOnce(&mut Eval<'_>) -> Result<T, EncodeError>,
    ) -> Result<T, EncodeError> {
        let mut ev = self.code_eval(st);
        let r = f(&mut ev);
        self.flush(&mut ev);
        r
    }

    fn record(&mut self, e: &'p Expr, v: Value) {
        self.precomputed.push((e as *const Expr as usize, v));
    }

    /// Runs the effects of `e` on the path where `c` holds; on the other path the state is
    /// unchanged. The two are joined as after an `if` without `else`. Without effects, `e` is
    /// left to its parent's evaluation, which guards it.
    fn on_path(&mut self, st: State, c: Bool, e: &'p Expr) -> Result<State, EncodeError> {
        if !self.has_effects(e) {
            return Ok(st);
        }
        self.prover.push_scope();
        self.prover.assume(c.clone());
        let taken = self.effects(st.clone(), e)?;
        let facts = Bool::and(&self.prover.pop_scope());
        self.prover.assume(c.implies(&facts));
        Ok(self.join_paths(&c, taken, st))
    }

    /// The one effect of `e` (its sub-expressions' effects already ran): the call, or the
    /// allocation.
    fn effect(&mut self, st: State, e: &'p Expr) -> Result<(State, Value), EncodeError> {
        match &e.kind {
            ExprKind::Call {
                receiver,
                name,
                args,
                given,
                yields,
                ..
            } => {
                let ghosts = Ghosts { given, yields };
                self.call(st, receiver.as_deref(), &name.name, args, ghosts, e.span)
            }
            ExprKind::New {
                class,
                args,
                given,
                yields,
            } => self.new_object(st, &class.name, args, Ghosts { given, yields }, e.span),
            ExprKind::NewArray { elem, dims } => {
                let elem = ty_of(elem)?;
                self.new_array(st, elem, dims, e.span)
            }
            _ => unreachable!("is_effect holds only for calls and allocations"),
        }
    }
}
