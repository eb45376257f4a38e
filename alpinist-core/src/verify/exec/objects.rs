//! Objects and threads: `new C(args)` (a fresh object, the constructor's contract), the start
//! of a constructor's own body (write permission to every field of the new object at its
//! default value, and the `idle` token where the class has a `run` method), and `fork t` /
//! `join t` (VerCors' thread tokens `idle(t)` and `running(t)`, and the `run` method's
//! contract).
//!
//! The tokens are held like predicate instances (`assertion.rs`, `thread_token`): a new
//! object of a runnable class comes with `idle`; `fork` takes `idle` and the precondition of
//! `run` and gives `running`; `join` takes `running` and gives `idle` and the postcondition
//! of `run`. So a thread is joined at most once per fork, and only a started one.

use z3::ast::{Bool, Int};

use crate::syntax::{Builtin, Expr, ExprKind, Span};

use super::super::assertion::{self, Prover};
use super::super::expr::{close, unsupported, EncodeError};
use super::super::obligation::{Check, ObligationKind};
use super::super::program::Routine;
use super::super::state::{real, Mask, Store, Term, Ty, Value};
use super::super::syn;
use super::{eval, Callee, Ghosts, State, Verifier};

impl<'c, 'p> Verifier<'c, 'p> {
    /// `new C(args)`: the constructor's precondition is exhaled, a fresh object allocated and
    /// the postcondition inhaled with it as `this`. A class without a constructor gives write
    /// permission to every field at its default value (and `idle` where it has a `run`).
    pub(super) fn new_object(
        &mut self,
        st: State,
        class: &'p str,
        args: &'p [Expr],
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let program = self.ctx.program;
        match program.constructor_of(class, args.len(), span)? {
            Some(ctor) => {
                if let Some(e) = program.ambiguous_in_contract(&ctor) {
                    return Err(e);
                }
                let none = Ghosts {
                    given: &[],
                    yields: &[],
                };
                self.invoke(st, ctor, Callee::Constructor(class), args, none, span)
            }
            None => {
                let object = self.allocate_object(&st.mask, &st.store, &Store::new(), class);
                let st = self.grant_new_object(st, &object, class, span)?;
                Ok((st, object))
            }
        }
    }

    /// A new object of `class`: non-null, different from every reference in `stores`, and
    /// nothing of it held in `mask` (the state before the allocation, so it differs from
    /// every object anything is held of).
    pub(super) fn allocate_object(
        &mut self,
        mask: &Mask,
        caller: &Store,
        callee: &Store,
        class: &str,
    ) -> Value {
        let w = &self.ctx.world;
        let object = w.fresh("new", &Ty::Object(class.to_string()));
        let Term::Ref(r) = &object.term else {
            unreachable!("an object is a reference")
        };
        self.prover.assume(r.eq(&w.null).not());
        for v in caller.values().chain(callee.values()) {
            if let Term::Ref(other) = &v.term {
                self.prover.assume(r.eq(other).not());
            }
        }
        let k = Int::fresh_const("k");
        self.prover.assume(close(
            std::slice::from_ref(&k),
            &mask.amount(r, &k).eq(real(0)),
        ));
        object
    }

    /// What a new object of `class` starts with: write permission to each field, holding its
    /// default value (0, `false`, `null`; other types any value), and `idle` where the class
    /// has a `run` method.
    pub(super) fn grant_new_object(
        &mut self,
        st: State,
        object: &Value,
        class: &str,
        span: Span,
    ) -> Result<State, EncodeError> {
        let program = self.ctx.program;
        let this = syn::this(span);
        let mut parts = Vec::new();
        for (name, info) in program.fields_of(class) {
            let location = syn::field(this.clone(), name, span);
            let default = match info.ty {
                Ty::Int | Ty::Perm => Some(syn::int(0, span)),
                Ty::Bool => Some(Expr {
                    kind: ExprKind::BoolLit(false),
                    span,
                }),
                Ty::Object(_) | Ty::Array(_) | Ty::Null => Some(syn::null(span)),
                _ => None,
            };
            parts.push(match default {
                Some(v) => Expr {
                    kind: ExprKind::Builtin {
                        op: Builtin::PointsTo,
                        args: vec![location, write(span), v],
                    },
                    span,
                },
                None => syn::perm(location, write(span), span),
            });
        }
        if program.run_of(class).is_some() {
            parts.push(token(Builtin::Idle, span));
        }
        let refs: Vec<&Expr> = parts.iter().collect();
        self.inhale_as_this(st, object, &refs)
    }

    /// `fork t`: takes `idle(t)` and the precondition of `t`'s `run`, gives `running(t)`.
    pub(super) fn fork(
        &mut self,
        st: State,
        thread: &'p Expr,
        span: Span,
    ) -> Result<State, EncodeError> {
        let (st, object, run) = self.take_thread(st, thread, Builtin::Idle, span)?;
        let mut pre = run.everywhere();
        pre.extend(run.pre());
        let st = self.exhale_at(st, &pre, this_store(&object), span)?;
        let running = token(Builtin::Running, span);
        self.inhale_as_this(st, &object, &[&running])
    }

    /// `join t`: takes `running(t)`, gives `idle(t)` and the postcondition of `t`'s `run`.
    pub(super) fn join(
        &mut self,
        st: State,
        thread: &'p Expr,
        span: Span,
    ) -> Result<State, EncodeError> {
        let (st, object, run) = self.take_thread(st, thread, Builtin::Running, span)?;
        let idle = token(Builtin::Idle, span);
        let mut given = vec![&idle];
        given.extend(run.everywhere());
        given.extend(run.post());
        self.inhale_as_this(st, &object, &given)
    }

    /// The object of a `fork`/`join` (checked non-null) and its class's `run` method, with the
    /// token `held` taken from it: a shortfall is a `fork_not_idle` / `join_not_running`
    /// failure at the statement. `\old` in `run`'s postcondition is refused (the state at the
    /// `fork` is not kept until the `join`).
    fn take_thread(
        &mut self,
        st: State,
        thread: &'p Expr,
        held: Builtin,
        span: Span,
    ) -> Result<(State, Value, Routine<'p>), EncodeError> {
        let mut ev = self.code_eval(&st);
        let object = ev.value(thread)?;
        if let Term::Ref(t) = &object.term {
            ev.checks.push(Check {
                goal: t.eq(&self.ctx.world.null).not(),
                kind: ObligationKind::NullDereference,
                span: thread.span,
                note: None,
            });
        }
        self.flush(&mut ev);
        let Ty::Object(class) = &object.ty else {
            return Err(unsupported("a thread that is not an object", thread.span));
        };
        let Some(run) = self.ctx.program.run_of(class) else {
            return Err(unsupported(
                format!("a thread of class `{class}`, which has no `run` method"),
                thread.span,
            ));
        };
        if let Some(e) = self.ctx.program.ambiguous_in_contract(&run) {
            return Err(e);
        }
        let mut post = run.everywhere();
        post.extend(run.post());
        if let Some(old) = post.iter().find_map(|e| first_old(e)) {
            return Err(unsupported(
                "`\\old` in the postcondition of a `run` method (the state at the `fork` is \
                 not kept until the `join`)",
                old,
            ));
        }
        let kind = match held {
            Builtin::Idle => ObligationKind::ForkNotIdle,
            _ => ObligationKind::JoinNotRunning,
        };
        let st = self.take_token(st, &token(held, span), &this_store(&object), kind, span)?;
        Ok((st, object, run))
    }

    /// Exhales a thread token; a shortfall is reported as `kind` at the statement.
    fn take_token(
        &mut self,
        st: State,
        token: &Expr,
        store: &Store,
        kind: ObligationKind,
        span: Span,
    ) -> Result<State, EncodeError> {
        let first = self.prover.obligations.len();
        let st = self.exhale_state(st, &[(vec![token], Vec::new())], kind, Some(store.clone()))?;
        for o in &mut self.prover.obligations[first..] {
            if o.kind == ObligationKind::InsufficientPermission {
                o.kind = kind;
                o.span = span;
            }
        }
        Ok(st)
    }

    /// Inhales `parts` with `this` bound to `object`.
    fn inhale_as_this(
        &mut self,
        mut st: State,
        object: &Value,
        parts: &[&Expr],
    ) -> Result<State, EncodeError> {
        let mut ev = eval(self.ctx, &st, false);
        ev.store = this_store(object);
        st.mask = assertion::inhale(&mut self.prover, &mut ev, st.mask, parts, &[])?;
        Ok(st)
    }

    /// The start of a constructor's body, before its precondition is inhaled: `this` is new —
    /// different from every reference argument — with what [`Verifier::grant_new_object`]
    /// gives. (A precondition that also claims a field of `this` then contradicts it, which
    /// the routine reports as an unsatisfiable precondition instead of verifying vacuously.)
    pub(super) fn start_constructor(
        &mut self,
        st: State,
        class: &str,
        span: Span,
    ) -> Result<State, EncodeError> {
        let Some(object) = st.store.get("this").cloned() else {
            return Ok(st);
        };
        if let Term::Ref(r) = &object.term {
            let others: Vec<Bool> = st
                .store
                .iter()
                .filter(|(n, _)| n.as_str() != "this")
                .filter_map(|(_, v)| match &v.term {
                    Term::Ref(o) => Some(r.eq(o).not()),
                    _ => None,
                })
                .collect();
            for f in others {
                self.prover.assume(f);
            }
        }
        self.grant_new_object(st, &object, class, span)
    }
}

/// `idle(this)` or `running(this)`.
fn token(op: Builtin, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Builtin {
            op,
            args: vec![syn::this(span)],
        },
        span,
    }
}

fn write(span: Span) -> Expr {
    Expr {
        kind: ExprKind::PermLit(crate::syntax::PermLit::Write),
        span,
    }
}

fn this_store(object: &Value) -> Store {
    let mut store = Store::new();
    store.insert("this".to_string(), object.clone());
    store
}

/// The span of the first `\old(..)` in `e`.
fn first_old(e: &Expr) -> Option<Span> {
    let mut found = None;
    e.visit(&mut |x| {
        if let (None, ExprKind::Old(_)) = (&found, &x.kind) {
            found = Some(x.span);
        }
    });
    found
}
