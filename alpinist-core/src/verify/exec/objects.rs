//! Objects, threads and locks: `new C(args)` (a fresh object, the constructor's contract), the
//! start of a constructor's own body (write permission to every field of the new object at its
//! default value, and the `idle` token where the class has a `run` method), `fork t` /
//! `join t` (VerCors' thread tokens `idle(t)` and `running(t)`, and the `run` method's
//! contract), and locks: `commit o` (the invariant handed to the lock, `committed(o)` from then
//! on), `lock o` (requires `committed(o)` and that the lock is not held, gives `held(o)` and the
//! invariant), `unlock o` (takes `held(o)` and the invariant), `wait o` (the invariant handed
//! back and taken again), `notify o` (requires `held(o)`). A 1.x program, which never says
//! `commit`, commits where each constructor ends: every object outside its constructor is
//! committed.
//!
//! The tokens are held like predicate instances (`assertion.rs`, `token_location`): a new
//! object of a runnable class comes with `idle`; `fork` takes `idle` and the precondition of
//! `run` and gives `running`; `join` takes `running` and gives `idle` and the postcondition
//! of `run`. So a thread is joined at most once per fork, and only a started one.

use crate::syntax::{Builtin, Expr, ExprKind, MethodBody, Span, StmtKind};

use super::super::assertion::{self, Prover};
use super::super::expr::{unsupported, EncodeError};
use super::super::obligation::{Check, ObligationKind};
use super::super::program::{ProgramInfo, Routine};
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
        ghosts: Ghosts<'p>,
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let program = self.ctx.program;
        match program.constructor_of(class, args.len(), span)? {
            Some(ctor) => {
                if let Some(e) = program.ambiguous_in_contract(&ctor) {
                    return Err(e);
                }
                self.invoke(st, ctor, Callee::Constructor(class), args, ghosts, span)
            }
            None => {
                let object = self.allocate_object(&st.mask, &[&st.store], class);
                let mut st = self.grant_new_object(st, &object, class, span)?;
                if !program.explicit_commit {
                    // 1.x: the implicit constructor ends by committing the lock.
                    st = self.hand_to_lock(st, &object, class, span)?;
                }
                Ok((st, object))
            }
        }
    }

    /// A new object of `class` ([`Verifier::fresh_reference`]).
    pub(super) fn allocate_object(&mut self, mask: &Mask, stores: &[&Store], class: &str) -> Value {
        Value {
            term: Term::Ref(self.fresh_reference(mask, stores)),
            ty: Ty::Object(class.to_string()),
        }
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
        // What `run`'s `AutoValue`s lend is not given back at `join`, which reads them as
        // `Value` (a wildcard), like every contract but a method's own at a call.
        let (st, _lent) = self.exhale_at(st, &pre, this_store(&object), span)?;
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
        let (object, class) = self.object_of(&st, thread, "a thread")?;
        let Some(run) = self.ctx.program.run_of(&class) else {
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
        self.report_at(
            first,
            &[ObligationKind::InsufficientPermission],
            Some(kind),
            span,
        );
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
    /// In a 1.x program (no `commit`) a class's lock is committed where its constructor ends,
    /// so a constructor that hands `this` on before then is refused.
    pub(super) fn start_constructor(
        &mut self,
        st: State,
        ctor: &Routine<'p>,
    ) -> Result<State, EncodeError> {
        let (Some(class), Some(object)) = (ctor.class, st.store.get("this").cloned()) else {
            return Ok(st);
        };
        let program = self.ctx.program;
        if !program.explicit_commit && !program.lock_invariant(class).is_empty() {
            // The body only: the contract speaks of `this` without handing it to anyone.
            let mut leak = None;
            if let MethodBody::Block(b) = ctor.body() {
                for s in &b.stmts {
                    super::super::recursion::stmt_exprs(s, &mut |e| {
                        leak = leak.or_else(|| hands_this_on(program, e));
                    });
                }
            }
            if let Some(at) = leak {
                return Err(unsupported(
                    "`this` handed on in a constructor of a class with a lock invariant, in a \
                     program without `commit` (its lock is committed only where the \
                     constructor ends, so code it reaches could take the invariant before it \
                     holds)",
                    at,
                ));
            }
            self.commit_at_end = Some((class, ctor.method.name.span));
        }
        if let Term::Ref(r) = &object.term {
            for (name, v) in st.store.iter() {
                if let (true, Term::Ref(other)) = (name != "this", &v.term) {
                    self.prover.assume(r.eq(other).not());
                }
            }
        }
        self.grant_new_object(st, &object, class, ctor.method.name.span)
    }
}

impl<'c, 'p> Verifier<'c, 'p> {
    /// A lock operation on the object `o` (`stmt`: `lock`, `unlock`, `wait`, `notify` or
    /// `commit`):
    /// - `lock o`: `o` committed, its lock not held already (locks are not re-entrant), then
    ///   `held(o)` and the invariant;
    /// - `unlock o`: takes `held(o)`, then the invariant;
    /// - `wait o`: `held(o)` is needed; the invariant is handed to the lock while the thread
    ///   waits, and taken again when it wakes;
    /// - `notify o`: `held(o)` is needed;
    /// - `commit o`: hands the invariant to the lock; `committed(o)` from then on.
    pub(super) fn lock_operation(
        &mut self,
        st: State,
        stmt: &'p StmtKind,
        o: &'p Expr,
        span: Span,
    ) -> Result<State, EncodeError> {
        let (object, class) = self.object_of(&st, o, "a lock")?;
        let invariant = self.ctx.program.lock_invariant(&class);
        match stmt {
            StmtKind::Lock(_) => {
                self.may_lock(&st, &object, span);
                let held = token(Builtin::Held, span);
                let mut parts = vec![&held];
                parts.extend(invariant.iter().copied());
                self.inhale_as_this(st, &object, &parts)
            }
            StmtKind::Unlock(_) => {
                let st = self.take_held(st, &object, span)?;
                self.hand_to_lock(st, &object, &class, span)
            }
            StmtKind::Wait(_) => {
                self.take_held(st.clone(), &object, span)?;
                let st = self.hand_to_lock(st, &object, &class, span)?;
                self.inhale_as_this(st, &object, &invariant)
            }
            StmtKind::Notify(_) => {
                self.take_held(st.clone(), &object, span)?;
                Ok(st)
            }
            _ => self.hand_to_lock(st, &object, &class, span),
        }
    }

    /// What `lock object` needs: the lock is committed (in a 1.x program, every object but
    /// the one whose constructor is running is) and not held already.
    fn may_lock(&mut self, st: &State, object: &Value, span: Span) {
        let Term::Ref(r) = &object.term else {
            unreachable!("an object is a reference")
        };
        let w = &self.ctx.world;
        let committed = if self.ctx.program.explicit_commit {
            Some(w.committed(r))
        } else {
            self.committing_this(st).map(|this| r.eq(&this).not())
        };
        if let Some(goal) = committed {
            self.prover.check(Check {
                goal,
                kind: ObligationKind::LockNotCommitted,
                span,
                note: None,
            });
        }
        let (at, index) = w.token_location(r, Builtin::Held);
        self.prover.check(Check {
            goal: st.mask.amount(&at, &index).eq(real(0)),
            kind: ObligationKind::LockMayBeHeld,
            span,
            note: None,
        });
    }

    /// Takes `held(object)` from `st`; a shortfall is `lock_not_held` at the statement.
    fn take_held(&mut self, st: State, object: &Value, span: Span) -> Result<State, EncodeError> {
        let held = token(Builtin::Held, span);
        self.take_token(
            st,
            &held,
            &this_store(object),
            ObligationKind::LockNotHeld,
            span,
        )
    }

    /// Exhales the lock invariant of `object` (failures are `lock_invariant_failed` at `span`)
    /// and assumes `committed(object)`.
    pub(super) fn hand_to_lock(
        &mut self,
        st: State,
        object: &Value,
        class: &str,
        span: Span,
    ) -> Result<State, EncodeError> {
        let invariant = self.ctx.program.lock_invariant(class);
        let first = self.prover.obligations.len();
        let st = self.exhale_state(
            st,
            &[(invariant, Vec::new())],
            ObligationKind::LockInvariantFailed,
            Some(this_store(object)),
        )?;
        self.report_at(
            first,
            &[
                ObligationKind::InsufficientPermission,
                ObligationKind::LockInvariantFailed,
            ],
            Some(ObligationKind::LockInvariantFailed),
            span,
        );
        if let Term::Ref(r) = &object.term {
            self.prover.assume(self.ctx.world.committed(r));
        }
        Ok(st)
    }

    /// With the 1.x `resource lock_invariant() = R;` of a class without a constructor, in a
    /// program without `commit`: the implicit constructor commits the lock, so the fields'
    /// default values must establish R (checked here, where the class declares it, whether
    /// or not the program ever says `new`).
    pub(super) fn default_construction_commits(
        &mut self,
        predicate: &Routine<'p>,
        store: Store,
    ) -> Result<(), EncodeError> {
        let program = self.ctx.program;
        let (Some(class), Some(this)) = (predicate.class, store.get("this").cloned()) else {
            return Ok(());
        };
        let implicit = predicate.method.name.name == "lock_invariant"
            && !program.explicit_commit
            && !program.has_constructor(class);
        if !implicit {
            return Ok(());
        }
        let span = predicate.method.name.span;
        let st = self.fresh_state(store);
        let st = self.grant_new_object(st, &this, class, span)?;
        self.hand_to_lock(st, &this, class, span)?;
        Ok(())
    }

    /// The object `o` (`what`: a thread, a lock) evaluates to, checked non-null, and its class.
    fn object_of(
        &mut self,
        st: &State,
        o: &'p Expr,
        what: &str,
    ) -> Result<(Value, String), EncodeError> {
        let mut ev = self.code_eval(st);
        let (r, ty) = ev.non_null(o)?;
        self.flush(&mut ev);
        let Ty::Object(class) = ty else {
            return Err(unsupported(format!("{what} that is not an object"), o.span));
        };
        let object = Value {
            term: Term::Ref(r),
            ty: Ty::Object(class.clone()),
        };
        Ok((object, class))
    }

    /// In a 1.x constructor whose end commits the lock of `this`: `this`.
    fn committing_this(&self, st: &State) -> Option<z3::ast::Dynamic> {
        self.commit_at_end?;
        match st.store.get("this").map(|v| &v.term) {
            Some(Term::Ref(r)) => Some(r.clone()),
            _ => None,
        }
    }
}

/// The first place where `e` hands `this` on: `this` as a value (not as the object of a field
/// access), or a call of an instance method on the implicit `this`.
fn hands_this_on(program: &ProgramInfo<'_>, e: &Expr) -> Option<Span> {
    match &e.kind {
        ExprKind::This => Some(e.span),
        ExprKind::Field { base, .. } if matches!(base.kind, ExprKind::This) => None,
        ExprKind::Call {
            receiver: None,
            name,
            ..
        } if program
            .routine(&name.name)
            .is_some_and(|r| r.has_this() && !r.is_pure()) =>
        {
            Some(e.span)
        }
        _ => {
            let mut found = None;
            e.for_each_child(&mut |c| found = found.or_else(|| hands_this_on(program, c)));
            found
        }
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
