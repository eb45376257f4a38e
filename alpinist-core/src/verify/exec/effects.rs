//! Calls of methods and allocations inside expressions: `int s = next() + next();`,
//! `while (f() < 3)`, `c ? f() : 0`, `b && f()`, `g(new C())`.
//!
//! Code expressions are evaluated in two passes. [`Verifier::effects`] runs the sub-expressions
//! with an effect (a call of a non-pure routine, `new C(..)`, `new T[n]`) in Java's evaluation
//! order — receiver, then arguments left to right, operands left to right, innermost first —
//! each as the statement it would be on its own (precondition exhaled, postcondition inhaled,
//! fresh object allocated), and records the value each gave. Then the whole expression is
//! evaluated purely, each such sub-expression standing for its recorded value
//! (`Eval::precomputed`).
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
use super::{join, ty_of, Ghosts, State, Verifier};

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

    /// Runs the effects of `e`, then evaluates it purely with `pure`.
    fn evaluated<T>(
        &mut self,
        st: State,
        e: &'p Expr,
        pure: impl FnOnce(&mut Eval<'_>, &Expr) -> Result<T, EncodeError>,
    ) -> Result<(State, T), EncodeError> {
        let mark = self.precomputed.len();
        let st = self.effects(st, e)?;
        let mut ev = self.code_eval(&st);
        let v = pure(&mut ev, e);
        self.flush(&mut ev);
        self.precomputed.truncate(mark);
        Ok((st, v?))
    }

    /// Runs the effects of `e` in evaluation order and records their values.
    fn effects(&mut self, st: State, e: &'p Expr) -> Result<State, EncodeError> {
        if !self.has_effects(e) {
            return Ok(st);
        }
        match &e.kind {
            ExprKind::Binary {
                op: op @ (BinaryOp::And | BinaryOp::Or | BinaryOp::Implies),
                lhs,
                rhs,
            } if self.has_effects(rhs) => {
                let st = self.effects(st, lhs)?;
                let mut ev = self.code_eval(&st);
                let l = ev.bool(lhs)?;
                self.flush(&mut ev);
                let reaches_rhs = if *op == BinaryOp::Or { l.not() } else { l };
                self.on_path(st, reaches_rhs, |v, st| v.effects(st, rhs))
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } if self.has_effects(then_expr) || self.has_effects(else_expr) => {
                let st = self.effects(st, cond)?;
                let mut ev = self.code_eval(&st);
                let c = ev.bool(cond)?;
                self.flush(&mut ev);
                let st = self.on_path(st, c.clone(), |v, st| v.effects(st, then_expr))?;
                self.on_path(st, c.not(), |v, st| v.effects(st, else_expr))
            }
            ExprKind::Quantifier(_) | ExprKind::Let { .. } | ExprKind::Old(_) => Err(unsupported(
                "a call of a method or an allocation under a quantifier, `\\let` or `\\old`",
                e.span,
            )),
            _ => {
                let mut st = st;
                for child in e.children() {
                    st = self.effects(st, child)?;
                }
                if self.is_effect(e) {
                    let (st, v) = self.effect(st, e)?;
                    self.precomputed.push((e as *const Expr as usize, v));
                    Ok(st)
                } else {
                    Ok(st)
                }
            }
        }
    }

    /// Runs `f` on the path where `c` holds; on the other path the state is unchanged. The
    /// two are joined as after an `if` without `else`.
    fn on_path(
        &mut self,
        st: State,
        c: Bool,
        f: impl FnOnce(&mut Self, State) -> Result<State, EncodeError>,
    ) -> Result<State, EncodeError> {
        self.prover.push_scope();
        self.prover.assume(c.clone());
        let taken = f(self, st.clone())?;
        let facts = Bool::and(&self.prover.pop_scope());
        self.prover.assume(c.implies(&facts));
        Ok(join(&c, taken, st))
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
            } => {
                let ghosts = Ghosts { given, yields };
                self.call(st, receiver.as_deref(), &name.name, args, ghosts, e.span)
            }
            ExprKind::New { class, args } => self.new_object(st, &class.name, args, e.span),
            ExprKind::NewArray { elem, dims } => {
                let elem = ty_of(elem)?;
                self.new_array(st, elem, dims, e.span)
            }
            _ => unreachable!("is_effect holds only for calls and allocations"),
        }
    }
}
