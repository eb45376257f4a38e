//! Symbolic execution of one method on one Z3 solver: statements, calls, loops, par blocks and
//! barriers, each reduced to inhale/exhale (`assertion.rs`) and checks.
//!
//! Paths: an `if` checks each branch under its condition and joins the two states with `ite`
//! (heap, mask and locals), so the work stays linear in the number of statements; the facts
//! assumed inside a branch are kept afterwards under the branch condition.
//!
//! Invariants:
//! - A loop body is checked in a *fresh* state holding only the invariant (and the pure facts
//!   about locals it does not assign); after the loop, the frame that was not in the invariant
//!   is untouched, assigned locals are havocked, and the invariant and the negated condition
//!   hold.
//! - A par block is checked for one arbitrary thread from an empty heap, in a scope of its own,
//!   *before* the caller exhales the threads' preconditions quantified over the iterators and
//!   inhales their postconditions: every obligation is checked under the assumptions of its
//!   own path only, never under something assumed later (the same holds for branches, loop
//!   bodies, barriers, calls, `invariant`/`atomic`, fold/unfold).
//! - A routine's postcondition reads its parameters (and `given` ones) at entry, as its callers
//!   do; `yields` parameters at exit.
//! - A barrier is checked globally (from all threads' preconditions, with no other permission,
//!   every postcondition is justified) and locally (exhale pre, inhale post).
//! - Every check is recorded with its verdict; nothing is skipped silently: what is not
//!   encoded is an [`EncodeError`] for the whole method.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use z3::ast::{Ast, Bool, Dynamic, Int};
use z3::{SatResult, Solver};

use crate::syntax::{
    Barrier, Block, ClauseKind, Contract, Decreases, Expr, ExprKind, MethodBody, ParBlock,
    ParGroupStyle, Span, Stmt, StmtKind,
};

use super::assertion::{self, Borrowed, Lent, Prover, RegionIter};
use super::expr::{
    self, coerce, unsupported, Decls, EncodeError, Eval, FunctionDecl, Functions, RecursiveCall,
};
use super::fraction;
use super::int32::{self, Plan};
use super::obligation::{Check, Obligation, ObligationKind, Status, Trusted, Warning};
use super::program::{clauses, post_clauses, pre_clauses, ty_of, ProgramInfo, Routine};
use super::recursion;
use super::solver::{model_value, Limits};
use super::state::{real, value_of, Heap, HeapStep, Mask, Snapshot, Store, Term, Ty, Value, World};
use super::termination;

mod effects;
mod objects;

/// Z3's budget for each candidate termination measure at a recursive call.
const PROBE_RLIMIT: u32 = 100_000;

/// Z3's budget for the reachability checks behind vacuity warnings.
const REACHABILITY_RLIMIT: u32 = 50_000;

/// The solver of one method, with everything it has checked.
pub struct SolverProver {
    solver: Solver,
    limits: Limits,
    /// Facts assumed since each open branch point, innermost last.
    frames: Vec<Vec<Bool>>,
    pub obligations: Vec<Obligation>,
    /// The locals reported in counterexamples.
    pub vars: Vec<(String, Term)>,
    /// Whether an obligation the method's solver leaves undecided is tried again in a fresh
    /// solver (see [`SolverProver::prove`]); off after the first retry that does not decide
    /// either, so a method Z3 cannot do costs at most one retry more.
    retry: std::cell::Cell<bool>,
    /// Inside a trial inhale ([`Verifier::framed_by`]): checks are assumed, not proved or
    /// recorded (the inhale that counts makes them again).
    trial: bool,
}

impl SolverProver {
    fn new(limits: &Limits) -> SolverProver {
        let solver = Solver::new();
        solver.set_params(&limits.params());
        SolverProver {
            solver,
            limits: *limits,
            frames: vec![Vec::new()],
            obligations: Vec::new(),
            vars: Vec::new(),
            retry: std::cell::Cell::new(true),
            trial: false,
        }
    }

    fn push_scope(&mut self) {
        self.solver.push();
        self.frames.push(Vec::new());
    }

    fn pop_scope(&mut self) -> Vec<Bool> {
        self.solver.pop(1);
        self.frames.pop().unwrap_or_default()
    }

    /// Whether the current path is provably unreachable (its facts contradict each other).
    /// Best effort, for warnings: a small budget, and "don't know" counts as reachable
    /// (satisfiability with quantified axioms is where Z3 is slowest).
    fn unreachable(&self) -> bool {
        self.with_rlimit(REACHABILITY_RLIMIT, || {
            self.solver.check() == SatResult::Unsat
        })
    }

    /// Whether `goal` is provable within a small budget (nothing recorded).
    fn probe(&self, goal: &Bool) -> bool {
        self.with_rlimit(PROBE_RLIMIT, || self.prove(goal, false) == Status::Verified)
    }

    /// Runs `f` with Z3's budget lowered to `rlimit`, then restores the method's limits.
    fn with_rlimit<R>(&self, rlimit: u32, f: impl FnOnce() -> R) -> R {
        let small = Limits {
            rlimit,
            ..self.limits
        };
        self.solver.set_params(&small.params());
        let r = f();
        self.solver.set_params(&self.limits.params());
        r
    }

    /// `refute e` with `goal` the value of `e`: records whether `goal` is *not* provable here.
    /// Verified only where Z3 finds a state of the path in which it is false; where Z3 proves
    /// it, the refutation fails; undecided stays unknown. Nothing is assumed after it.
    fn refute(&mut self, goal: &Bool, span: Span) {
        let start = Instant::now();
        let status = match self.prove(goal, true) {
            Status::Verified => Status::Failed { model: Vec::new() },
            Status::Failed { .. } => Status::Verified,
            undecided => undecided,
        };
        self.obligations.push(Obligation {
            kind: ObligationKind::RefuteFailed,
            span,
            status,
            time: start.elapsed(),
            note: None,
        });
    }

    /// Whether `goal` is valid without any of the method's facts, within a small budget.
    fn proves_alone(&self, goal: &Bool) -> bool {
        let solver = Solver::new();
        let small = Limits {
            rlimit: PROBE_RLIMIT,
            ..self.limits
        };
        solver.set_params(&small.params());
        solver.assert(goal.not());
        solver.check() == SatResult::Unsat
    }

    /// Checks `goal` against the method's facts; `retry`: an undecided answer is retried in
    /// fresh solvers with the method's budget (not for probes, whose small budget is the
    /// point and whose "don't know" is an answer).
    fn prove(&self, goal: &Bool, retry: bool) -> Status {
        // `trigger ⇒ ¬goal` checked under the assumption `trigger`, instead of push / assert /
        // pop: libz3 4.8.12 crashed in `pop` after some queries mixing sequences and
        // quantifiers. With `trigger` false the implication constrains nothing later.
        let trigger = Bool::fresh_const("obligation");
        self.solver.assert(trigger.implies(goal.not()));
        let result = self
            .solver
            .check_assumptions(std::slice::from_ref(&trigger));
        // The retries' solvers live until the implication is switched off below: freeing
        // their terms earlier hands their ids to the next terms, and Z3's search follows term
        // ids (a file that verified came back unknown when they were freed first).
        let (status, _retried) = match result {
            SatResult::Unknown if retry && self.retry.get() => self.prove_afresh(&trigger),
            _ => (self.status(result, &self.solver), Vec::new()),
        };
        // Switch the implication off for good: left open, every later query may branch on
        // `trigger` and have to refute this negated goal again (a quantified one can leave Z3
        // unable to decide a later query it would decide from scratch).
        self.solver.assert(trigger.not());
        status
    }

    /// The query `trigger` (the negated goal), undecided in the method's solver, again with
    /// the same assertions and nothing the method's solver keeps from earlier queries
    /// (instances, learned clauses, the monomials of `mul`'s definition): in a fresh solver of
    /// this context under the assumption `trigger`, then translated into a fresh context
    /// (new term ids, which Z3's search follows: `solver::check_in_fresh_context`), and last
    /// with the goal asserted in a fresh solver of this context (then Z3 preprocesses the
    /// whole query, simplifying the goal into the facts; terms behind an assumption, such as a
    /// lambda-defined mask read, are not instantiated alike). The symbolic row-major
    /// permissions of a linearised matrix (`m[Y * i + j]`, `m[X * j + i]`, the diagonal `m[N *
    /// i + i]`) are each decided by one of them at once. The fresh context comes before the
    /// asserted goal: its check keeps to the budget, while Z3's preprocessing of an asserted
    /// goal does not (42 s for a cell permission of three matrices that the fresh context
    /// decides in 50 ms). Same facts, same goal: as sound as the first try. A method where
    /// none decides stops retrying, so a file Z3 cannot do costs at most three checks more.
    /// Returns the fresh solvers with the status, latest first (the order they are freed in).
    fn prove_afresh(&self, trigger: &Bool) -> (Status, Vec<Solver>) {
        let fresh = || {
            let solver = Solver::new();
            solver.set_params(&self.limits.params());
            for a in self.solver.get_assertions() {
                solver.assert(&a);
            }
            solver
        };
        let assumed = fresh();
        let result = assumed.check_assumptions(std::slice::from_ref(trigger));
        if result != SatResult::Unknown {
            return (self.status(result, &assumed), vec![assumed]);
        }
        if let Some(status) = self.prove_in_fresh_context(&assumed, trigger) {
            return (status, vec![assumed]);
        }
        let asserted = fresh();
        asserted.assert(trigger);
        let result = asserted.check();
        if result != SatResult::Unknown {
            return (self.status(result, &asserted), vec![asserted, assumed]);
        }
        self.retry.set(false);
        (self.status(result, &asserted), vec![asserted, assumed])
    }

    /// `solver`'s assertions in a fresh context under the assumption `trigger`; `None` when
    /// undecided.
    fn prove_in_fresh_context(&self, solver: &Solver, trigger: &Bool) -> Option<Status> {
        let named: Vec<(String, String, bool)> = self
            .vars
            .iter()
            .filter_map(|(n, t)| match t {
                Term::Int(i) => Some((n.clone(), i.decl().name(), true)),
                Term::Bool(b) => Some((n.clone(), b.decl().name(), false)),
                _ => None,
            })
            .collect();
        let (answer, values) = super::solver::check_in_fresh_context(
            solver.get_assertions(),
            trigger,
            &self.limits,
            &named,
        );
        match answer {
            SatResult::Unsat => Some(Status::Verified),
            SatResult::Sat => Some(Status::Failed { model: values }),
            SatResult::Unknown => None,
        }
    }

    /// The status of `result` as `solver` answered it: its model's values of the reported
    /// locals, or its reason for not deciding.
    fn status(&self, result: SatResult, solver: &Solver) -> Status {
        match result {
            SatResult::Unsat => Status::Verified,
            SatResult::Sat => Status::Failed {
                model: match solver.get_model() {
                    Some(m) => self
                        .vars
                        .iter()
                        .filter_map(|(n, t)| model_value(&m, t).map(|v| (n.clone(), v)))
                        .collect(),
                    None => Vec::new(),
                },
            },
            SatResult::Unknown => Status::Unknown {
                reason: solver
                    .get_reason_unknown()
                    .map(|r| r.trim().to_string())
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "unknown (Z3 gave no reason)".to_string()),
            },
        }
    }
}

impl Prover for SolverProver {
    fn check(&mut self, check: Check) {
        if self.trial {
            self.assume(check.goal);
            return;
        }
        let start = Instant::now();
        let mut status = match check.span.start >= super::REACHABILITY_PROBES {
            true => self.with_rlimit(REACHABILITY_RLIMIT, || self.prove(&check.goal, false)),
            false => self.prove(&check.goal, true),
        };
        // An injectivity goal is arithmetic about the binders, usually valid by itself: where
        // Z3 cannot decide it among the method's facts (with a two-binder par contract, it
        // timed out once the body grew by one local), it is proved alone. Valid alone implies
        // valid in context. Only after the query in context, so that the solver sees the same
        // assertions either way (Z3's later searches depend on them).
        if matches!(status, Status::Unknown { .. })
            && matches!(check.kind, ObligationKind::NotInjective)
            && self.proves_alone(&check.goal)
        {
            status = Status::Verified;
        }
        self.obligations.push(Obligation {
            kind: check.kind,
            span: check.span,
            status,
            time: start.elapsed(),
            note: check.note.clone(),
        });
        // Checked (or reported): later checks may rely on it, so one mistake is one failure.
        self.assume(check.goal);
    }

    fn assume(&mut self, fact: Bool) {
        self.solver.assert(&fact);
        if let Some(f) = self.frames.last_mut() {
            f.push(fact);
        }
    }
}

/// Everything about one method's check that does not change while it runs.
pub struct Ctx<'p> {
    pub world: World,
    pub program: &'p ProgramInfo<'p>,
    pub functions: Functions,
    /// `--int32` (`int32.rs`), resolved against the program.
    pub int32: Option<&'p Plan>,
}

impl<'p> Ctx<'p> {
    fn decls(&self) -> Decls<'_> {
        Decls {
            world: &self.world,
            program: Some(self.program),
            functions: Some(&self.functions),
        }
    }
}

#[derive(Clone)]
struct State {
    store: Store,
    heap: Heap,
    mask: Mask,
    old: Snapshot,
}

impl State {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            heap: self.heap.clone(),
            mask: self.mask.clone(),
        }
    }
}

/// A call's ghost arguments: `with { x = e; }` (to `given`) and `then { r = y; }` (from
/// `yields`).
#[derive(Clone, Copy)]
struct Ghosts<'p> {
    given: &'p [crate::syntax::GhostArg],
    yields: &'p [crate::syntax::GhostArg],
}

/// How a routine is invoked: a method or function call (on this receiver, or on the
/// caller's `this`), or a constructor by `new C(..)` (no `this` until its postcondition).
#[derive(Clone, Copy)]
enum Callee<'p> {
    Method(Option<&'p Expr>),
    Constructor(&'p str),
}

enum Flow {
    Normal(State),
    Returned,
}

/// How many `goto`s one path may follow before the checker gives up (each is checked along
/// the whole rest of the method: a chain of jumps costs as much as its paths).
const MAX_JUMPS: usize = 16;

struct ParFrame {
    label: Option<String>,
    iters: Vec<RegionIter>,
}

/// The result of checking one method (or pure function).
pub struct MethodOutcome {
    pub obligations: Vec<Obligation>,
    pub trusted: Vec<Trusted>,
    pub warnings: Vec<Warning>,
    pub error: Option<EncodeError>,
}

/// Checks `routine` in the calling thread's current Z3 context.
pub fn check_routine<'p>(
    program: &'p ProgramInfo<'p>,
    routine: &Routine<'p>,
    limits: &Limits,
    int32: Option<&'p Plan>,
) -> MethodOutcome {
    let world = World::with_heap_kinds(&program.extra_heap_kinds());
    let mut prover = SolverProver::new(limits);
    for a in world.axioms() {
        prover.assume(a);
    }
    let mut warnings = Vec::new();
    let functions = declare_functions(
        &world,
        program,
        &routine.method.name.name,
        &mut prover,
        &mut warnings,
    );
    let ctx = Ctx {
        world,
        program,
        functions,
        int32,
    };
    let mut v = Verifier {
        ctx: &ctx,
        prover,
        pars: Vec::new(),
        everywhere: routine.everywhere(),
        post: Vec::new(),
        result_ty: None,
        trusted: Vec::new(),
        warnings,
        own: None,
        entry: Store::new(),
        self_calls: Vec::new(),
        in_precondition: false,
        invariants: Vec::new(),
        context: Vec::new(),
        code: false,
        fraction_locals: std::collections::BTreeMap::new(),
        ghost: false,
        own_measure: None,
        commit_at_end: None,
        precomputed: Vec::new(),
        body: &[],
        jumps: Vec::new(),
        method: None,
        borrowed: Default::default(),
        lending: None,
    };
    let error = if let Some(e) = program.ambiguous_use(routine) {
        Some(e)
    } else {
        v.routine(routine).err()
    };
    MethodOutcome {
        obligations: v.prover.obligations,
        trusted: v.trusted,
        warnings: v.warnings,
        error,
    }
}

struct Verifier<'c, 'p> {
    ctx: &'c Ctx<'p>,
    prover: SolverProver,
    pars: Vec<ParFrame>,
    everywhere: Vec<&'p Expr>,
    post: Vec<&'p Expr>,
    result_ty: Option<Ty>,
    trusted: Vec<Trusted>,
    warnings: Vec<Warning>,
    /// The routine being checked: its name, parameter types and parameter values.
    own: Option<(String, Vec<Ty>, Vec<Term>)>,
    /// Its parameters and `given` parameters with their values at entry, which its
    /// postcondition reads (the body may assign them; a caller binds them to its arguments).
    entry: Store,
    /// Its calls of itself: where, and which measures decrease there.
    self_calls: Vec<(Span, Vec<bool>)>,
    /// Inhaling or exhaling a precondition (see [`Verifier::as_precondition`]).
    in_precondition: bool,
    /// The invariant blocks around the statement: name, resource, locals at its start.
    invariants: Vec<(String, &'p Expr, Store)>,
    /// The routine's precondition and the invariants of the loops around the statement: where
    /// a par block's threads find their heap context (`Verifier::context_true_at`).
    context: Vec<&'p Expr>,
    /// `--int32` applies here: an executable routine, outside ghost code (`int32.rs`).
    code: bool,
    /// The locals and parameters declared `frac` or `zfrac` (by name, the latest
    /// declaration): what is assigned to them must lie in the type's range.
    fraction_locals: std::collections::BTreeMap<String, crate::syntax::TypeKind>,
    /// Inside a `ghost` statement (whose termination is checked where it starts).
    ghost: bool,
    /// The routine's own `decreases` clause, which its recursive calls must respect.
    own_measure: Option<OwnMeasure>,
    /// A 1.x constructor of a class with a lock invariant (no `commit` in the program): its
    /// end hands the invariant to the lock (`objects.rs`), before the postcondition.
    commit_at_end: Option<(&'p str, Span)>,
    /// Values of the nodes of the code expression being evaluated that were evaluated in
    /// their turn around its calls and allocations, by node address (`effects.rs`).
    precomputed: Vec<(usize, Value)>,
    /// The statements of the method's body, where `goto` finds its label.
    body: &'p [Stmt],
    /// The labels whose continuations are being followed, innermost last (`goto`).
    jumps: Vec<&'p str>,
    /// The routine's declaration (what a vector block's lanes may name).
    method: Option<&'p crate::syntax::Method>,
    /// The amounts the routine's precondition borrowed with `AutoValue`, by location: what
    /// its postcondition gives back.
    borrowed: Lent,
    /// While a callee's precondition is exhaled ([`Verifier::exhale_at`]): the amounts its
    /// `AutoValue`s lend, which its postcondition gives back to the caller.
    lending: Option<Lent>,
}

/// A method's `decreases` clause as its recursive calls see it.
enum OwnMeasure {
    /// `decreases e1, .., en;`: the measure's values at entry.
    Checked(Vec<Int>),
    /// `decreases assume;`: recursive calls are trusted to terminate.
    Trusted,
}

fn eval<'c>(ctx: &'c Ctx<'_>, st: &State, definedness: bool) -> Eval<'c> {
    let mut e = Eval::new(ctx.decls(), st.store.clone());
    e.heap = Some(st.heap.clone());
    e.mask = Some(st.mask.clone());
    e.old = Some(st.old.clone());
    e.definedness = definedness;
    e
}

impl<'c, 'p> Verifier<'c, 'p> {
    /// An evaluator for executable code: with definedness checks and, under `--int32` in an
    /// executable routine outside ghost code, the 32-bit obligations.
    fn code_eval(&self, st: &State) -> Eval<'c> {
        let mut e = eval(self.ctx, st, true);
        if self.code {
            e.int32 = self.ctx.int32.map(|p| &p.mode);
        }
        e.precomputed.clone_from(&self.precomputed);
        e
    }

    fn fresh_state(&self, store: Store) -> State {
        let heap = Heap::fresh(&self.ctx.world);
        let mask = Mask::empty(&self.ctx.world);
        State {
            old: Snapshot {
                heap: heap.clone(),
                mask: mask.clone(),
            },
            store,
            heap,
            mask,
        }
    }

    fn flush(&mut self, ev: &mut Eval<'_>) {
        for a in ev.take_axioms() {
            self.prover.assume(a);
        }
        for c in std::mem::take(&mut ev.checks) {
            self.prover.check(c);
        }
    }

    fn set_vars(&mut self, store: &Store) {
        self.prover.vars = store
            .iter()
            .filter(|(_, v)| !v.ty.is_ref())
            .map(|(n, v)| (n.clone(), v.term.clone()))
            .collect();
    }

    /// For each parameter declared with a size, `int[n] a` (1.x), the fact that the array
    /// is null or has length `n` (`n` over the parameters in `store`), and the parameter's
    /// position: assumed where the routine starts, proved by every caller.
    fn declared_lengths(
        &self,
        params: &'p [crate::syntax::Param],
        store: &Store,
    ) -> Result<Vec<(Bool, usize)>, EncodeError> {
        let mut facts = Vec::new();
        for (k, p) in params.iter().enumerate() {
            let crate::syntax::TypeKind::Array {
                size: Some(size), ..
            } = &p.ty.kind
            else {
                continue;
            };
            let Some(Term::Ref(r)) = store.get(&p.name.name).map(|v| &v.term) else {
                continue;
            };
            let mut ev = Eval::new(self.ctx.decls(), store.clone());
            let n = ev.int(size)?;
            let w = &self.ctx.world;
            facts.push((Bool::or(&[r.eq(&w.null), w.len_of(r).eq(&n)]), k));
        }
        Ok(facts)
    }

    /// References of two different types (`int[]` and `int[][]`, an array and an object) are
    /// equal only when both are null: PVL has no subtyping. The permission mask is one map
    /// over (reference, index) for every kind of location, so without this fact a row
    /// permission of `\matrix(m, ..)` at `(m, k)` could be the cell `a[k]` of an `int[]`
    /// parameter `a`, and exhaling the one took permission from the other.
    fn assume_typed_references_differ(&mut self, store: &Store) {
        let refs: Vec<(&Ty, &Dynamic)> = store
            .values()
            .filter_map(|v| match &v.term {
                Term::Ref(r) if v.ty.is_ref() && v.ty != Ty::Null => Some((&v.ty, r)),
                _ => None,
            })
            .collect();
        let null = &self.ctx.world.null;
        let mut facts = Vec::new();
        for (k, (ty, r)) in refs.iter().enumerate() {
            for (other_ty, other) in &refs[k + 1..] {
                if ty != other_ty {
                    let (r, other): (&Dynamic, &Dynamic) = (r, other);
                    facts.push(r.eq(other).implies(r.eq(null)));
                }
            }
        }
        if !facts.is_empty() {
            self.prover.assume(Bool::and(&facts));
        }
    }

    fn with_everywhere(&self, exprs: Vec<&'p Expr>) -> Vec<&'p Expr> {
        let mut all = self.everywhere.clone();
        all.extend(exprs);
        all
    }

    // ----- methods -----

    fn routine(&mut self, routine: &Routine<'p>) -> Result<(), EncodeError> {
        self.method = Some(routine.method);
        let mut store = Store::new();
        if let (true, Some(class)) = (routine.has_this(), routine.class) {
            let this = self.ctx.world.fresh("this", &Ty::Object(class.to_string()));
            if let Term::Ref(r) = &this.term {
                self.prover.assume(r.eq(&self.ctx.world.null).not());
            }
            store.insert("this".to_string(), this);
        }
        for p in &routine.method.params {
            let ty = ty_of(&p.ty)?;
            let v = self.ctx.world.fresh(&p.name.name, &ty);
            if let Some(fact) = fraction::range(&p.ty.kind, &v) {
                self.prover.assume(fact);
            }
            if fraction::has_range(&p.ty.kind) {
                self.fraction_locals
                    .insert(p.name.name.clone(), p.ty.kind.clone());
            }
            store.insert(p.name.name.clone(), v);
        }
        for (fact, _) in self.declared_lengths(&routine.method.params, &store)? {
            self.prover.assume(fact);
        }
        for c in &routine.contract.clauses {
            match &c.kind {
                ClauseKind::Given(p) | ClauseKind::Yields(p) => {
                    let ty = ty_of(&p.ty)?;
                    let v = self.ctx.world.fresh(&p.name.name, &ty);
                    if let Some(fact) = fraction::range(&p.ty.kind, &v) {
                        self.prover.assume(fact);
                    }
                    store.insert(p.name.name.clone(), v);
                }
                ClauseKind::LockInvariant(_) => {
                    return Err(unsupported("lock invariants", c.span));
                }
                _ => {}
            }
        }
        self.assume_typed_references_differ(&store);
        if routine
            .method
            .return_type
            .as_ref()
            .is_some_and(|t| t.kind == crate::syntax::TypeKind::Resource)
        {
            // A predicate: its body must be self-framing and well-defined (every read covered
            // by a permission inhaled before it), which is all there is to check.
            if let MethodBody::Expr(body) = routine.body() {
                let st = self.fresh_state(store.clone());
                self.check_framing(&st, &[body])?;
            }
            self.default_construction_commits(routine, store)?;
            return Ok(());
        }
        self.result_ty = match &routine.method.return_type {
            Some(t) if t.kind != crate::syntax::TypeKind::Void => Some(ty_of(t)?),
            _ => None,
        };
        self.set_vars(&store);
        if let Some(plan) = self.ctx.int32 {
            let name = &routine.method.name.name;
            self.code = !routine.is_pure() && plan.executable.contains(name);
            if self.code && plan.entries.contains(name) {
                // An entry's `int` parameters come from the host as C `int`s.
                for p in &routine.method.params {
                    if let Some(Term::Int(i)) = store.get(&p.name.name).map(|v| &v.term) {
                        self.prover.assume(int32::in_range(i));
                    }
                }
            }
        }
        let mut tys = Vec::new();
        let mut terms = Vec::new();
        for p in &routine.method.params {
            let v = &store[&p.name.name];
            tys.push(v.ty.clone());
            terms.push(v.term.clone());
        }
        self.own = Some((routine.method.name.name.clone(), tys, terms));
        // In the contract a parameter (and a `given` ghost parameter) means its value at entry,
        // whatever the body assigns to it later: that is what every caller assumes of the
        // argument it passed. `yields` parameters are the exception: their final value.
        self.entry = routine
            .method
            .params
            .iter()
            .map(|p| &p.name.name)
            .chain(
                routine
                    .contract
                    .clauses
                    .iter()
                    .filter_map(|c| match &c.kind {
                        ClauseKind::Given(p) => Some(&p.name.name),
                        _ => None,
                    }),
            )
            .filter_map(|name| store.get(name).map(|v| (name.clone(), v.clone())))
            .collect();
        let pre = self.with_everywhere(routine.pre());
        self.context = routine.pre();
        self.post = self.with_everywhere(routine.post());
        self.post.extend(self.ctx.program.implicit_post(routine));
        let mut st = self.fresh_state(store);
        if routine.is_constructor() {
            st = self.start_constructor(st, routine)?;
        }
        let mut ev = eval(self.ctx, &st, true);
        ev.old_is_now = true;
        if !routine.is_pure() {
            ev.borrowed = Borrowed::Lend(Default::default());
        }
        let reads_heap = routine.is_pure()
            && self
                .ctx
                .functions
                .get(&routine.method.name.name)
                .is_some_and(|f| f.reads_heap);
        let before_pre = self.prover.obligations.len();
        st.mask = if reads_heap {
            assertion::inhale_unbounded(&mut self.prover, &mut ev, st.mask, &pre)?
        } else {
            assertion::inhale(&mut self.prover, &mut ev, st.mask, &pre, &[])?
        };
        if let Borrowed::Lend(taken) = std::mem::take(&mut ev.borrowed) {
            self.borrowed = taken;
        }
        st.old = st.snapshot();
        // A precondition that is not well defined (a read without permission) already fails,
        // and what its failed checks assumed may be what contradicts: no second error.
        let pre_well_defined = self.prover.obligations[before_pre..]
            .iter()
            .all(|o| matches!(o.status, Status::Verified));
        if pre_well_defined && self.prover.unreachable() {
            // As VerCors: `requires false` says so on purpose (trusted, listed); any other
            // unsatisfiable precondition is a mistake that would make everything verify.
            let intended = pre
                .iter()
                .any(|e| matches!(e.kind, ExprKind::BoolLit(false)));
            if intended {
                self.trusted.push(Trusted {
                    what: format!(
                        "`{}`: `requires false`, so everything about its body holds vacuously",
                        routine.method.name.name
                    ),
                    span: routine.span,
                });
            } else {
                self.prover.obligations.push(Obligation {
                    kind: ObligationKind::PreconditionUnsatisfiable,
                    span: routine.method.name.span,
                    status: Status::Failed { model: Vec::new() },
                    time: std::time::Duration::ZERO,
                    note: None,
                });
            }
        }
        self.own_measure = self.own_measure(routine, &st)?;
        if routine.is_pure() {
            self.check_function_post_framing(&st)?;
        } else {
            self.check_post_framing(&st)?;
        }
        match routine.body() {
            MethodBody::Abstract => {
                self.trusted.push(Trusted {
                    what: format!(
                        "`{}` has no body: its contract is assumed at every call",
                        routine.method.name.name
                    ),
                    span: routine.span,
                });
            }
            MethodBody::Expr(body) => {
                // An inline function's body is checked where it is called (`Eval::inline_body`).
                let inline_function = routine.is_inline() && routine.is_pure();
                let mut ev = eval(self.ctx, &st, !inline_function);
                ev.defining = Some(routine.method.name.name.clone());
                ev.one_heap = true;
                let v = ev.value(body)?;
                let v = ev.settle(v, self.result_ty.as_ref(), body.span)?;
                let calls = std::mem::take(&mut ev.recursive_calls);
                self.flush(&mut ev);
                self.check_function_measure(routine, &st, &calls)?;
                if routine.is_inline() {
                    // As VerCors: an inline function is its body; its contract is neither
                    // checked nor used anywhere (calls unfold the body).
                    if !self.post.is_empty() {
                        self.warnings.push(Warning {
                            message: format!(
                                "the postcondition of the inline function `{}` is ignored (as \
                                 in VerCors, an inline function is its body)",
                                routine.method.name.name
                            ),
                            span: routine.span,
                        });
                    }
                } else {
                    self.exhale_post(st, Some(v))?;
                }
            }
            MethodBody::Block(block) => {
                self.body = &block.stmts;
                if let Flow::Normal(st) = self.block(st, block)? {
                    let failed = self
                        .prover
                        .obligations
                        .iter()
                        .any(|o| o.status != Status::Verified);
                    // After a failure the checker assumes what failed: no vacuity claim then.
                    if !failed && self.prover.unreachable() {
                        self.warnings.push(Warning {
                            message: format!(
                                "the end of `{}` is unreachable: its postcondition holds vacuously",
                                routine.method.name.name
                            ),
                            span: routine.span,
                        });
                    }
                    self.exhale_post(st, None)?;
                }
            }
        }
        self.check_self_calls();
        Ok(())
    }

    /// A method's `decreases` clause, evaluated in the state after its precondition.
    fn own_measure(
        &mut self,
        routine: &Routine<'p>,
        st: &State,
    ) -> Result<Option<OwnMeasure>, EncodeError> {
        let Some((decreases, span)) = termination::explicit(routine.contract) else {
            return Ok(None);
        };
        Ok(Some(match decreases {
            Decreases::Assume => {
                self.trusted.push(Trusted {
                    what: format!(
                        "`{}`: `decreases assume;`, its termination is assumed",
                        routine.method.name.name
                    ),
                    span,
                });
                OwnMeasure::Trusted
            }
            Decreases::Measure(measure) => {
                let mut ev = eval(self.ctx, st, true);
                let values = measure
                    .iter()
                    .map(|e| ev.int(e))
                    .collect::<Result<_, _>>()?;
                self.flush(&mut ev);
                OwnMeasure::Checked(values)
            }
        }))
    }

    /// A pure function's `decreases e1, .., en;` at each recursive application of its body,
    /// under the application's path condition. (Without a clause, `exec::definition` looks
    /// for a measure itself and leaves the definition unused when there is none.)
    fn check_function_measure(
        &mut self,
        routine: &Routine<'p>,
        st: &State,
        calls: &[RecursiveCall],
    ) -> Result<(), EncodeError> {
        if let Some(instance) = self
            .ctx
            .functions
            .get(&routine.method.name.name)
            .and_then(|d| d.depth_measure.clone())
        {
            return self.check_depth_measure(routine, st, calls, &instance);
        }
        let Some(OwnMeasure::Checked(old)) = &self.own_measure else {
            return Ok(());
        };
        let old = old.clone();
        let Some((Decreases::Measure(exprs), _)) = termination::explicit(routine.contract) else {
            return Ok(());
        };
        if !self.ctx.functions.contains_key(&routine.method.name.name) {
            return Ok(());
        }
        for call in calls {
            let mut ev = self.eval_at_call(routine, st, call);
            let new = exprs
                .iter()
                .map(|e| ev.int(e))
                .collect::<Result<Vec<_>, _>>()?;
            self.decrease_at_call(call, &new, &old, "at this recursive application");
        }
        Ok(())
    }

    /// An evaluation in `st` with `routine`'s parameters bound to a recursive application's
    /// arguments (its measure there).
    fn eval_at_call(&self, routine: &Routine<'p>, st: &State, call: &RecursiveCall) -> Eval<'_> {
        let mut ev = eval(self.ctx, st, false);
        if let Some(decl) = self.ctx.functions.get(&routine.method.name.name) {
            for ((n, _), v) in decl.params.iter().zip(&call.args) {
                ev.store.insert(n.clone(), v.clone());
            }
        }
        ev
    }

    /// `check_decrease` at a recursive application, under its path condition.
    fn decrease_at_call(&mut self, call: &RecursiveCall, new: &[Int], old: &[Int], what: &str) {
        self.prover.push_scope();
        self.prover.assume(call.guard.clone());
        self.check_decrease(new, old, call.span, what);
        let facts = Bool::and(&self.prover.pop_scope());
        self.prover.assume(call.guard.implies(&facts));
    }

    /// A function whose recursion goes through `\unfolding` ([`FunctionDecl::depth_measure`]):
    /// at each recursive application, the instance its precondition holds is lower than the
    /// one the function's own precondition holds (the unfolding gave it).
    fn check_depth_measure(
        &mut self,
        routine: &Routine<'p>,
        st: &State,
        calls: &[RecursiveCall],
        guarded: &Expr,
    ) -> Result<(), EncodeError> {
        let (condition, instance) = recursion::guarded_instance(guarded);
        let Some((receiver, pred, args)) = super::inline::predicate_call(instance) else {
            return Ok(());
        };
        let world = &self.ctx.world;
        // A height is never negative (an instance that is not held has none to speak of:
        // 0, say); what must be proved is only that it falls. Under a condition `c`, the
        // measure is `c ? height + 1 : 0`: a call whose instance is not held (`next` is null)
        // is lower than any held one.
        let height = |ev: &mut Eval<'_>| -> Result<(Int, Int), EncodeError> {
            let (r, i, _) = ev.predicate_location(receiver, pred, args, instance.span)?;
            let depth = world.depth(&r, &i);
            let measure = match condition {
                Some(c) => ev
                    .bool(c)?
                    .ite(&Int::add(&[&depth, &Int::from_i64(1)]), &Int::from_i64(0)),
                None => depth.clone(),
            };
            Ok((depth, measure))
        };
        let (depth, old) = height(&mut eval(self.ctx, st, false))?;
        self.prover.assume(depth.ge(Int::from_i64(0)));
        let what = format!(
            "at this recursive application (the measure: the height of the instance \
             `{}` of the precondition, which only an `\\unfolding` of it lowers)",
            crate::syntax::print_expr(guarded)
        );
        for call in calls {
            let (_, new) = height(&mut self.eval_at_call(routine, st, call))?;
            self.decrease_at_call(call, &[new], std::slice::from_ref(&old), &what);
        }
        Ok(())
    }

    /// A termination measure is non-negative (`old`, where it must decrease: checked
    /// separately for a single measure, inside the lexicographic order for a tuple) and `new`
    /// is strictly smaller. `what` says where (a recursive call, a loop iteration).
    fn check_decrease(&mut self, new: &[Int], old: &[Int], span: Span, what: &str) {
        if let [o] = old {
            self.prover.check(Check {
                goal: o.ge(Int::from_i64(0)),
                kind: ObligationKind::DecreasesNotBounded,
                span,
                note: Some(format!("the measure must be non-negative {what}")),
            });
        }
        let note = if old.is_empty() {
            format!("`decreases;` promises termination without recursion, but there is {what}")
        } else if old.len() > 1 {
            format!("the measure must decrease lexicographically {what}")
        } else {
            format!("the measure must decrease {what}")
        };
        self.prover.check(Check {
            goal: recursion::lex_decrease(new, old),
            kind: ObligationKind::DecreasesFailed,
            span,
            note: Some(note),
        });
    }

    /// A recursive routine's own calls use its postcondition. For executable code that is
    /// partial correctness; a routine that ghost code may run must also terminate, so there
    /// (the only place `self_calls` is filled) some measure must decrease at every one of them.
    fn check_self_calls(&mut self) {
        let Some(first) = self.self_calls.first() else {
            return;
        };
        let n = first.1.len();
        let common = (0..n).any(|m| self.self_calls.iter().all(|(_, ok)| ok[m]));
        let status = if common {
            Status::Verified
        } else {
            Status::Failed { model: Vec::new() }
        };
        for (span, _) in std::mem::take(&mut self.self_calls) {
            self.prover.obligations.push(Obligation {
                kind: ObligationKind::RecursionMayNotTerminate,
                span,
                status: status.clone(),
                time: std::time::Duration::ZERO,
                note: None,
            });
        }
    }

    /// The postcondition is self-framing: inhaled into an empty mask, every read is covered.
    fn check_post_framing(&mut self, st: &State) -> Result<(), EncodeError> {
        let post = self.post.clone();
        self.check_framing(st, &post)
    }

    /// A pure function's postcondition is framed by its precondition (it describes the
    /// result in the state the function is applied in): every read is covered in `st`, the
    /// state after inhaling the precondition.
    fn check_function_post_framing(&mut self, st: &State) -> Result<(), EncodeError> {
        self.prover.push_scope();
        let mut ev = eval(self.ctx, st, true);
        ev.result = self
            .result_ty
            .as_ref()
            .map(|t| self.ctx.world.fresh("result", t));
        let post = self.post.clone();
        let r = assertion::inhale_unbounded(&mut self.prover, &mut ev, st.mask.clone(), &post);
        self.prover.pop_scope();
        r.map(|_| ())
    }

    /// `assertions` are self-framing: inhaled into an empty mask and a heap about which nothing
    /// is known (with `\old` meaning `st`'s old state), every read is covered.
    fn check_framing(&mut self, st: &State, assertions: &[&'p Expr]) -> Result<(), EncodeError> {
        self.check_framing_with(st, assertions, true, &[])
    }

    /// The framing check of a resource invariant (`invariant name(R)`): every read of R is
    /// covered by R's own permissions, checked as [`Verifier::check_framing`] does; the
    /// definedness of R's values (`a.length` needs `a != null`) is checked where R is handed
    /// over instead ([`Verifier::hand_over_invariant`]: where the block starts, where each
    /// atomic block ends), as VerCors does. Sound: R is inhaled only after a hand-over, and
    /// what it reads cannot change in between — R holds a positive share of each location, so
    /// no one can write it — and its locals are read as at the block's start.
    fn check_invariant_framing(&mut self, st: &State, inv: &'p Expr) -> Result<(), EncodeError> {
        self.check_framing_with(st, &[inv], false, &[])
    }

    /// The framing check, with `facts` (read with their stores) assumed of the unknown heap
    /// first: they hold wherever `assertions` are inhaled (a par block's postcondition and the
    /// heap context its thread keeps, [`Verifier::framed_by`]).
    fn check_framing_with(
        &mut self,
        st: &State,
        assertions: &[&'p Expr],
        value_checks: bool,
        facts: &[(&'p Expr, Store)],
    ) -> Result<(), EncodeError> {
        self.prover.push_scope();
        let mut fresh = self.fresh_state(st.store.clone());
        fresh.old = st.old.clone();
        self.assume_of(&fresh, facts);
        let mut ev = eval(self.ctx, &fresh, true);
        ev.value_checks = value_checks;
        ev.result = self
            .result_ty
            .as_ref()
            .map(|t| self.ctx.world.fresh("result", t));
        let r = assertion::inhale(&mut self.prover, &mut ev, fresh.mask, assertions, &[]);
        self.prover.pop_scope();
        r.map(|_| ())
    }

    /// Exhales the routine's postcondition at an exit with `result`: its parameters read as
    /// at entry ([`Verifier::entry`]), everything else (fields, `yields`) as now.
    fn exhale_post(&mut self, st: State, result: Option<Value>) -> Result<(), EncodeError> {
        let st = match (self.commit_at_end, st.store.get("this").cloned()) {
            (Some((class, span)), Some(this)) => self.hand_to_lock(st, &this, class, span)?,
            _ => st,
        };
        let mut ev = eval(self.ctx, &st, false);
        ev.store.extend(self.entry.clone());
        ev.result = result;
        ev.borrowed = Borrowed::Return(self.borrowed.clone());
        let post = self.post.clone();
        assertion::exhale(
            &mut self.prover,
            &mut ev,
            st.mask.clone(),
            &post,
            &[],
            ObligationKind::PostconditionFailed,
        )?;
        Ok(())
    }

    /// Exhales `parts` (each an assertion list over a region) from `st`, all evaluated in `st`,
    /// and forgets the heap where no permission is left.
    fn exhale_state(
        &mut self,
        st: State,
        parts: &[(Vec<&Expr>, Vec<RegionIter>)],
        kind: ObligationKind,
        ev_store: Option<Store>,
    ) -> Result<State, EncodeError> {
        self.exhale_parts(st, parts, kind, ev_store, Forget::Unowned, false)
    }

    /// Hands a resource invariant `inv` (read with the locals of `store`) over from `st`:
    /// exhaled, with the definedness of its values checked here (null, bounds, division,
    /// functions' pure preconditions), where its framing check deferred them
    /// ([`Verifier::check_invariant_framing`]).
    fn hand_over_invariant(
        &mut self,
        st: State,
        inv: &'p Expr,
        kind: ObligationKind,
        store: Store,
    ) -> Result<State, EncodeError> {
        let parts = [(vec![inv], Vec::new())];
        self.exhale_parts(st, &parts, kind, Some(store), Forget::Unowned, true)
    }

    fn exhale_parts(
        &mut self,
        st: State,
        parts: &[(Vec<&Expr>, Vec<RegionIter>)],
        kind: ObligationKind,
        ev_store: Option<Store>,
        forget: Forget,
        definedness: bool,
    ) -> Result<State, EncodeError> {
        let mut mask = st.mask.clone();
        let mut removed = Vec::new();
        for (exprs, region) in parts {
            let mut ev = eval(self.ctx, &st, definedness);
            ev.old_is_now = self.in_precondition;
            if let Some(s) = &ev_store {
                ev.store = s.clone();
            }
            if let Some(taken) = self.lending.take() {
                ev.borrowed = Borrowed::Lend(taken);
            }
            let exhaled = assertion::exhale(&mut self.prover, &mut ev, mask, exprs, region, kind);
            if let Borrowed::Lend(taken) = std::mem::take(&mut ev.borrowed) {
                self.lending = Some(taken);
            }
            let (m, r) = exhaled?;
            mask = m;
            removed.extend(r);
        }
        let heap = if !removed.is_empty() && forget == Forget::Unowned {
            let (heap, facts) = st.heap.havoc_unowned(&self.ctx.world, &mask, &removed);
            for f in facts {
                self.prover.assume(f);
            }
            // Others may write only what this method no longer holds.
            self.record_heap_change(&st.heap, &heap, &mask);
            heap
        } else {
            st.heap.clone()
        };
        Ok(State { heap, mask, ..st })
    }

    fn inhale_state(
        &mut self,
        mut st: State,
        exprs: &[&Expr],
        region: &[RegionIter],
        definedness: bool,
    ) -> Result<State, EncodeError> {
        let mut ev = eval(self.ctx, &st, definedness);
        ev.old_is_now = self.in_precondition;
        st.mask = assertion::inhale(&mut self.prover, &mut ev, st.mask, exprs, region)?;
        Ok(st)
    }

    /// Runs `f` on a precondition (a routine's, a call's, a par block's): its pre-state is the
    /// state it is inhaled into or exhaled from, so there `\old(e)` means `e` — on both sides,
    /// the side that proves it and the side that assumes it.
    fn as_precondition<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.in_precondition, true);
        let r = f(self);
        self.in_precondition = saved;
        r
    }

    // ----- statements -----

    fn block(&mut self, mut st: State, block: &'p Block) -> Result<Flow, EncodeError> {
        for s in &block.stmts {
            match self.stmt(st, s)? {
                Flow::Normal(n) => st = n,
                Flow::Returned => return Ok(Flow::Returned),
            }
        }
        Ok(Flow::Normal(st))
    }

    fn stmt(&mut self, mut st: State, s: &'p Stmt) -> Result<Flow, EncodeError> {
        self.set_vars(&st.store);
        match &s.kind {
            StmtKind::LocalDecl { ty: declared, vars } => {
                let ty = ty_of(declared)?;
                for v in vars {
                    let value = match &v.init {
                        Some(init) => {
                            let (next, value) = self.rhs(st, init)?;
                            st = next;
                            let value = coerce(&self.ctx.world, value, &ty, init.span)?;
                            self.fraction_assigned(&declared.kind, &v.name.name, &value, init);
                            value
                        }
                        None => self.ctx.world.fresh(&v.name.name, &ty),
                    };
                    if fraction::has_range(&declared.kind) {
                        self.fraction_locals
                            .insert(v.name.name.clone(), declared.kind.clone());
                    } else {
                        self.fraction_locals.remove(&v.name.name);
                    }
                    st.store.insert(v.name.name.clone(), value);
                }
                Ok(Flow::Normal(st))
            }
            StmtKind::Assign { target, value } => {
                let (st, v) = self.rhs(st, value)?;
                if let ExprKind::Name(id) = &target.kind {
                    if let Some(kind) = self.fraction_locals.get(&id.name).cloned() {
                        if st.store.contains_key(&id.name) {
                            let v = fraction::convert(&kind, v.clone());
                            self.fraction_assigned(&kind, &id.name, &v, value);
                        }
                    }
                }
                Ok(Flow::Normal(self.assign(st, target, v)?))
            }
            StmtKind::Increment(target) | StmtKind::Decrement(target) => {
                let mut ev = self.code_eval(&st);
                let old = ev.int(target)?;
                self.flush(&mut ev);
                let one = Int::from_i64(1);
                let (new, op) = if matches!(s.kind, StmtKind::Increment(_)) {
                    (Int::add(&[old, one]), "++")
                } else {
                    (Int::sub(&[old, one]), "--")
                };
                if self.code && self.ctx.int32.is_some() {
                    self.prover.check(Check {
                        goal: int32::in_range(&new),
                        kind: ObligationKind::Int32Overflow,
                        span: s.span,
                        note: Some(format!("`{op}` may overflow 32 bits")),
                    });
                }
                Ok(Flow::Normal(self.assign(st, target, Value::int(new))?))
            }
            StmtKind::Expr(e) => {
                let (st, _) = self.rhs(st, e)?;
                Ok(Flow::Normal(st))
            }
            StmtKind::If {
                cond,
                then_branch,
                else_branch,
            } => self.branch(st, cond, then_branch, else_branch.as_deref()),
            StmtKind::While {
                contract,
                cond,
                body,
            } => self.exec_loop(st, contract, Some(cond), body, None),
            StmtKind::For {
                contract,
                init,
                cond,
                update,
                body,
            } => {
                if let Some(init) = init {
                    match self.stmt(st, init)? {
                        Flow::Normal(n) => st = n,
                        Flow::Returned => return Ok(Flow::Returned),
                    }
                }
                self.exec_loop(st, contract, cond.as_ref(), body, update.as_deref())
            }
            StmtKind::Block(b) => self.block(st, b),
            StmtKind::Return(value) => {
                if !self.pars.is_empty() {
                    return Err(unsupported("`return` inside a par block", s.span));
                }
                let result = match value {
                    Some(e) => {
                        let (next, v) = self.rhs(st, e)?;
                        st = next;
                        // At the declared type: `return null;` returns a `List`.
                        match &self.result_ty {
                            Some(ty) => Some(coerce(&self.ctx.world, v, ty, e.span)?),
                            None => Some(v),
                        }
                    }
                    None => None,
                };
                self.exhale_post(st, result)?;
                Ok(Flow::Returned)
            }
            StmtKind::Par(group) if group.style == ParGroupStyle::Sequential => {
                // One block after another, like consecutive par statements.
                let mut st = st;
                for block in &group.blocks {
                    match self.par(st, std::slice::from_ref(block))? {
                        Flow::Normal(next) => st = next,
                        Flow::Returned => return Ok(Flow::Returned),
                    }
                }
                Ok(Flow::Normal(st))
            }
            StmtKind::Par(group) if super::vector::needs_contract(s) => {
                // Still without a contract: the inference refused the body (or it touches no
                // cell at all, and the empty contract is the inferred one).
                let outer = self
                    .method
                    .map(super::vector::method_names)
                    .unwrap_or_default();
                for block in &group.blocks {
                    let held = Default::default();
                    if let Err(refusal) = super::vector::infer(block, &outer, &held) {
                        return Err(unsupported(refusal.what, refusal.span));
                    }
                }
                self.par(st, &group.blocks)
            }
            StmtKind::Par(group) if group.style == ParGroupStyle::Vector => {
                let mut st = st;
                for block in &group.blocks {
                    st = self.vector_read_share(st, block)?;
                }
                self.par(st, &group.blocks)
            }
            StmtKind::Par(group) => self.par(st, &group.blocks),
            StmtKind::Barrier(b) => self.barrier(st, b, s.span),
            StmtKind::Assert(e) => {
                // An asserted permission is checked, not taken away.
                let mut ev = eval(self.ctx, &st, true);
                assertion::exhale(
                    &mut self.prover,
                    &mut ev,
                    st.mask.clone(),
                    &[e],
                    &[],
                    ObligationKind::AssertFailed,
                )?;
                Ok(Flow::Normal(st))
            }
            StmtKind::Refute(e) => {
                let (st, goal) = self.rhs_bool(st, e)?;
                self.prover.refute(&goal, s.span);
                Ok(Flow::Normal(st))
            }
            StmtKind::Assume(e) | StmtKind::Inhale(e) => {
                let what = match s.kind {
                    StmtKind::Inhale(_) => "`inhale`",
                    _ => "`assume`",
                };
                self.trusted.push(Trusted {
                    what: what.to_string(),
                    span: s.span,
                });
                Ok(Flow::Normal(self.inhale_state(st, &[e], &[], true)?))
            }
            StmtKind::Exhale(e) => {
                let parts = [(vec![e], Vec::new())];
                let st = self.exhale_parts(
                    st,
                    &parts,
                    ObligationKind::ExhaleFailed,
                    None,
                    Forget::Unowned,
                    true,
                )?;
                Ok(Flow::Normal(st))
            }
            StmtKind::Ghost(inner) => {
                if !self.ghost {
                    self.check_ghost_terminates(inner);
                }
                let code = std::mem::replace(&mut self.code, false);
                let ghost = std::mem::replace(&mut self.ghost, true);
                let r = self.stmt(st, inner);
                self.code = code;
                self.ghost = ghost;
                r
            }
            StmtKind::GpuOpt(_) => Ok(Flow::Normal(st)),
            StmtKind::Fold(e) | StmtKind::Unfold(e) => {
                let fold = matches!(s.kind, StmtKind::Fold(_));
                self.fold(st, e, fold).map(Flow::Normal)
            }
            StmtKind::Invariant { name, inv, body } => self.invariant_block(st, name, inv, body),
            StmtKind::Atomic { name, body } => self.atomic(st, name, body),
            // `check` refuses models (E0227) before the checker sees a program.
            StmtKind::Action { .. } => Err(unsupported("an `action` block", s.span)),
            StmtKind::Lock(o)
            | StmtKind::Unlock(o)
            | StmtKind::Commit(o)
            | StmtKind::Wait(o)
            | StmtKind::Notify(o) => self
                .lock_operation(st, &s.kind, o, s.span)
                .map(Flow::Normal),
            StmtKind::Fork(t) => self.fork(st, t, s.span).map(Flow::Normal),
            StmtKind::Label(_) => Ok(Flow::Normal(st)),
            StmtKind::Goto(label) => self.goto(st, label),
            StmtKind::Join(t) => self.join(st, t, s.span).map(Flow::Normal),
        }
    }

    /// Ghost code is erased from the program that runs, so it must terminate: a ghost loop
    /// or lemma that never ends would "prove" whatever its exit or postcondition says
    /// (`termination.rs`). A failure is reported where the ghost code may not terminate.
    fn check_ghost_terminates(&mut self, inner: &'p Stmt) {
        let within = self
            .own
            .as_ref()
            .and_then(|(name, ..)| self.ctx.program.routine(name));
        if let Some(found) =
            termination::ghost_may_not_terminate(inner, within, &self.ctx.program.may_not_terminate)
        {
            self.prover.obligations.push(Obligation {
                kind: ObligationKind::GhostMayNotTerminate,
                span: found.span,
                status: Status::Failed { model: Vec::new() },
                time: std::time::Duration::ZERO,
                note: Some(found.reason),
            });
        }
    }

    /// `invariant name(R) { body }`: R (self-framing) is exhaled where the block starts — its
    /// resources then belong to the invariant, not to any thread — and inhaled again where it
    /// ends. Inside, `atomic(name)` has them. R's locals are read as they were at the start.
    fn invariant_block(
        &mut self,
        st: State,
        name: &'p crate::syntax::Ident,
        inv: &'p Expr,
        body: &'p Block,
    ) -> Result<Flow, EncodeError> {
        self.check_invariant_framing(&st, inv)?;
        let store = st.store.clone();
        let st = self.hand_over_invariant(
            st,
            inv,
            ObligationKind::InvariantNotEstablished,
            store.clone(),
        )?;
        self.invariants
            .push((name.name.clone(), inv, store.clone()));
        let flow = self.block(st, body);
        self.invariants.pop();
        match flow? {
            Flow::Normal(st) => Ok(Flow::Normal(self.inhale_with(st, inv, store)?)),
            Flow::Returned => Ok(Flow::Returned),
        }
    }

    /// `atomic(name) { body }`: the invariant's resources are inhaled, the body runs, the
    /// invariant is exhaled again (it must be maintained). The invariant is out of reach inside
    /// (a nested `atomic` of it would hold its resources twice).
    fn atomic(
        &mut self,
        st: State,
        name: &'p crate::syntax::Ident,
        body: &'p Block,
    ) -> Result<Flow, EncodeError> {
        let Some(k) = self.invariants.iter().rposition(|(n, ..)| *n == name.name) else {
            return Err(unsupported(
                "an atomic block outside the invariant block it names (or inside an atomic block \
                 of it)",
                name.span,
            ));
        };
        let entry = self.invariants.remove(k);
        let (_, inv, store) = entry.clone();
        let st = self.inhale_with(st, inv, store.clone());
        let flow = st.and_then(|st| self.block(st, body));
        self.invariants.insert(k, entry);
        match flow? {
            Flow::Normal(st) => {
                let st = self.hand_over_invariant(
                    st,
                    inv,
                    ObligationKind::InvariantNotMaintained,
                    store,
                )?;
                Ok(Flow::Normal(st))
            }
            Flow::Returned => Err(unsupported(
                "a `return` or `goto` leaving an atomic block",
                name.span,
            )),
        }
    }

    /// Inhales `e` with the locals of `store` (an invariant's, as at its block's start).
    fn inhale_with(
        &mut self,
        mut st: State,
        e: &'p Expr,
        store: Store,
    ) -> Result<State, EncodeError> {
        let mut ev = eval(self.ctx, &st, false);
        ev.store = store;
        st.mask = assertion::inhale(&mut self.prover, &mut ev, st.mask, &[e], &[])?;
        Ok(st)
    }

    /// `fold P(args)`: exhale the body (for the arguments), inhale the instance; `unfold`:
    /// the other way round. Nothing leaves this method, so the heap is kept: the values
    /// under a folded instance cannot change while it is held here (writing them needs its
    /// permissions), and every exhale of a predicate instance forgets the heap wherever no
    /// permission is left (`assertion.rs`), so they are forgotten once it leaves.
    fn fold(&mut self, st: State, e: &'p Expr, fold: bool) -> Result<State, EncodeError> {
        let what = if fold { "fold" } else { "unfold" };
        let kind = if fold {
            ObligationKind::FoldFailed
        } else {
            ObligationKind::UnfoldFailed
        };
        // An inline predicate is a macro: folding or unfolding it (at any scale) checks that
        // its expansion is held, exhaling it and inhaling it again.
        if let Some(expanded) = super::inline::inline_application(e, self.ctx.program) {
            let parts = [(vec![&expanded], Vec::new())];
            let st = self.exhale_parts(st, &parts, kind, None, Forget::Nothing, false)?;
            return self.inhale_state(st, &[&expanded], &[], true);
        }
        let body = super::inline::applied_body(e, self.ctx.program, what)?;
        let (out, into) = if fold { (&body, e) } else { (e, &body) };
        let st = self.exhale_parts(
            st,
            &[(vec![out], Vec::new())],
            kind,
            None,
            Forget::Nothing,
            false,
        )?;
        self.inhale_state(st, &[into], &[], true)
    }

    /// `new T[n]`, `new T[m][n]`: the sizes checked non-negative, the cells zero.
    fn new_array(
        &mut self,
        st: State,
        elem: Ty,
        dims: &'p [Expr],
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let mut ev = self.code_eval(&st);
        let mut sizes = Vec::new();
        for d in dims {
            sizes.push(ev.int(d)?);
        }
        self.flush(&mut ev);
        for (n, d) in sizes.iter().zip(dims) {
            self.prover.check(Check {
                goal: n.ge(Int::from_i64(0)),
                kind: ObligationKind::IndexNegative,
                span: d.span,
                note: None,
            });
        }
        if let [n] = &sizes[..] {
            let zero = self.zero_of(&elem);
            return self.allocate(st, elem, n.clone(), &|_| zero.clone(), span);
        }
        self.allocate_nested(st, elem, &sizes, span)
    }

    /// A new array of `n` cells: a reference nobody holds anything of, with full permission to
    /// its cells, which are zero (or false, or null).
    fn allocate(
        &mut self,
        mut st: State,
        elem: Ty,
        n: Int,
        init: &dyn Fn(&Int) -> Dynamic,
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let r = self.fresh_reference(&st.mask, &[&st.store]);
        let ty = Ty::Array(Box::new(elem.clone()));
        let w = &self.ctx.world;
        self.prover.assume(w.len_of(&r).eq(&n));
        let (rr, kk) = (r.clone(), n.clone());
        let mask = st.mask.clone();
        let (new_mask, fact) = Mask::from_fn(w, |r2, k2| {
            let inside = Bool::and(&[r2.eq(&rr), k2.ge(Int::from_i64(0)), k2.lt(&kk)]);
            inside.ite(&real(1), &mask.amount(r2, k2))
        });
        self.prover.assume(fact);
        st.mask = new_mask;
        let kind = w.heap_kind(&elem, span)?;
        let k3 = Int::fresh_const("k");
        let cell = st.heap.read(kind, &r, &k3);
        let inside = Bool::and(&[k3.ge(Int::from_i64(0)), k3.lt(&n)]);
        self.prover.assume(super::expr::close(
            std::slice::from_ref(&k3),
            &inside.implies(cell.eq(init(&k3))),
        ));
        Ok((
            st,
            Value {
                term: Term::Ref(r),
                ty,
            },
        ))
    }

    /// A new reference (an array's or an object's): non-null, different from every reference
    /// in `stores` (locals are among the references that exist already; the mask fact says the
    /// same, but needs quantifier reasoning), and nothing of it held in `mask`, the state
    /// before the allocation — so it differs from every object anything is held of.
    fn fresh_reference(&mut self, mask: &Mask, stores: &[&Store]) -> Dynamic {
        let w = &self.ctx.world;
        let r = Dynamic::fresh_const("new", &w.ref_sort);
        self.prover.assume(r.eq(&w.null).not());
        for v in stores.iter().flat_map(|s| s.values()) {
            if let Term::Ref(other) = &v.term {
                self.prover.assume(r.eq(other).not());
            }
        }
        let k = Int::fresh_const("k");
        self.prover.assume(super::expr::close(
            std::slice::from_ref(&k),
            &mask.amount(&r, &k).eq(real(0)),
        ));
        r
    }

    /// Failures recorded since obligation `first` whose kind is one of `kinds` are reported
    /// at `span` (a call, `fork`, `lock`, ..), as `as_kind` where given.
    fn report_at(
        &mut self,
        first: usize,
        kinds: &[ObligationKind],
        as_kind: Option<ObligationKind>,
        span: Span,
    ) {
        for o in &mut self.prover.obligations[first..] {
            if kinds.contains(&o.kind) {
                o.kind = as_kind.unwrap_or(o.kind);
                o.span = span;
            }
        }
    }

    /// The default value of a new cell of type `elem`: zero, false, or null.
    fn zero_of(&self, elem: &Ty) -> Dynamic {
        match elem {
            Ty::Int => Dynamic::from_ast(&Int::from_i64(0)),
            Ty::Bool => Dynamic::from_ast(&Bool::from_bool(false)),
            Ty::Perm => Dynamic::from_ast(&real(0)),
            _ => self.ctx.world.null.clone(),
        }
    }

    /// `new T[d0][d1]..[dk]`: an array of `d0` cells holding distinct new arrays of `d1`
    /// cells, and so on; the innermost cells are zero. The arrays of level `l` (1 ≤ l ≤ k) are
    /// `node_l(i1, .., il)` for indices in range: each non-null, of length `dl`, new (nothing
    /// was held of it before this level), different from every reference in a local, with
    /// full permission to its cells. Inverse functions make each level's nodes distinct and
    /// give the mask without enumeration, so the sizes may be symbolic.
    fn allocate_nested(
        &mut self,
        st: State,
        inner: Ty,
        dims: &[Int],
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let depth = dims.len();
        // The element type of the arrays of level l.
        let elem_at = |l: usize| (l + 1..depth).fold(inner.clone(), |t, _| Ty::Array(Box::new(t)));
        let w = &self.ctx.world;
        let id = super::solver::declaration_id();
        let int_sort = z3::Sort::int();
        let nodes: Vec<z3::FuncDecl> = (1..depth)
            .map(|l| {
                let domain: Vec<&z3::Sort> = (0..l).map(|_| &int_sort).collect();
                z3::FuncDecl::new(format!("node{id}_{l}"), &domain, &w.ref_sort)
            })
            .collect();
        let apply = |f: &z3::FuncDecl, xs: &[Int]| {
            let args: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
            f.apply(&args)
        };
        let (mut st, outer) = self.allocate(
            st,
            elem_at(0),
            dims[0].clone(),
            &|k| apply(&nodes[0], std::slice::from_ref(k)),
            span,
        )?;
        let Term::Ref(outer_ref) = &outer.term else {
            unreachable!("an array is a reference")
        };
        for l in 1..depth {
            let w = &self.ctx.world;
            let xs: Vec<Int> = (0..l).map(|m| Int::fresh_const(&format!("i{m}"))).collect();
            let range = Bool::and(
                &xs.iter()
                    .zip(dims)
                    .map(|(x, d)| Bool::and(&[x.ge(Int::from_i64(0)), x.lt(d)]))
                    .collect::<Vec<_>>(),
            );
            let node = apply(&nodes[l - 1], &xs);
            let k = Int::fresh_const("k");
            let mut facts = vec![
                node.eq(&w.null).not(),
                node.eq(outer_ref).not(),
                w.len_of(&node).eq(&dims[l]),
                super::expr::close(
                    std::slice::from_ref(&k),
                    &st.mask.amount(&node, &k).eq(real(0)),
                ),
            ];
            for v in st.store.values() {
                if let Term::Ref(other) = &v.term {
                    facts.push(node.eq(other).not());
                }
            }
            let inverses: Vec<z3::FuncDecl> = (0..l)
                .map(|m| {
                    z3::FuncDecl::new(format!("node{id}_{l}_inv{m}"), &[&w.ref_sort], &int_sort)
                })
                .collect();
            for (inv, x) in inverses.iter().zip(&xs) {
                facts.push(
                    inv.apply(&[&node as &dyn Ast])
                        .as_int()
                        .expect("an int")
                        .eq(x),
                );
            }
            // The cells: the next level's nodes, or zero.
            let kind = w.heap_kind(&elem_at(l), span)?;
            let cell = st.heap.read(kind, &node, &k);
            let value = match nodes.get(l) {
                Some(next) => {
                    let mut below = xs.clone();
                    below.push(k.clone());
                    apply(next, &below)
                }
                None => self.zero_of(&inner),
            };
            let in_row = Bool::and(&[k.ge(Int::from_i64(0)), k.lt(&dims[l])]);
            facts.push(super::expr::close(
                std::slice::from_ref(&k),
                &in_row.implies(cell.eq(&value)),
            ));
            self.prover
                .assume(super::expr::close(&xs, &range.implies(Bool::and(&facts))));
            // Full permission to the cells of every node of this level.
            let mask = st.mask.clone();
            let (new_mask, fact) = Mask::from_fn(w, |r, c| {
                let ys: Vec<Int> = inverses
                    .iter()
                    .map(|inv| inv.apply(&[r as &dyn Ast]).as_int().expect("an int"))
                    .collect();
                let in_range = Bool::and(
                    &ys.iter()
                        .zip(dims)
                        .map(|(y, d)| Bool::and(&[y.ge(Int::from_i64(0)), y.lt(d)]))
                        .collect::<Vec<_>>(),
                );
                let is_node = apply(&nodes[l - 1], &ys).eq(r);
                let cell_in = Bool::and(&[c.ge(Int::from_i64(0)), c.lt(&dims[l])]);
                Bool::and(&[in_range, is_node, cell_in]).ite(&real(1), &mask.amount(r, c))
            });
            self.prover.assume(fact);
            st.mask = new_mask;
        }
        Ok((st, outer))
    }

    fn assign(&mut self, mut st: State, target: &'p Expr, v: Value) -> Result<State, EncodeError> {
        match &target.kind {
            ExprKind::Name(id) if !st.store.contains_key(&id.name) => {
                // A bare field name: `this.f`.
                self.write_location(st, target, v)
            }
            ExprKind::Name(id) => {
                let Some(old) = st.store.get(&id.name) else {
                    return Err(EncodeError::UnboundName {
                        name: id.name.clone(),
                        span: target.span,
                    });
                };
                let v = coerce(&self.ctx.world, v, &old.ty, target.span)?;
                st.store.insert(id.name.clone(), v);
                Ok(st)
            }
            ExprKind::Index { .. } | ExprKind::Field { .. } => self.write_location(st, target, v),
            _ => Err(unsupported("assignment to this target", target.span)),
        }
    }

    /// `target = v` for a heap location, with the write-permission check.
    fn write_location(
        &mut self,
        mut st: State,
        target: &'p Expr,
        v: Value,
    ) -> Result<State, EncodeError> {
        let mut ev = self.code_eval(&st);
        let (r, i, ty) = ev.location(target)?;
        self.flush(&mut ev);
        self.prover.check(Check {
            goal: st.mask.amount(&r, &i).eq(real(1)),
            kind: ObligationKind::InsufficientWritePermission,
            span: target.span,
            note: None,
        });
        let v = coerce(&self.ctx.world, v, &ty, target.span)?;
        let kind = self.ctx.world.heap_kind(&ty, target.span)?;
        let before = st.heap.clone();
        st.heap = st.heap.write(kind, &r, &i, &v.term.as_dynamic());
        // The location is held whole here, so it is in no held predicate instance.
        self.record_heap_change(&before, &st.heap, &st.mask);
        Ok(st)
    }

    /// [`join`], recorded as a step of the heap where it joined two heaps
    /// ([`Verifier::record_heap_change`]).
    fn join_paths(&mut self, c: &Bool, a: State, b: State) -> State {
        let (then, other) = (a.heap.clone(), b.heap.clone());
        let joined = join(c, a, b);
        if self.frames_recorded() && !then.same(&other) {
            self.ctx.world.record_heap_step(HeapStep::Join {
                cond: c.clone(),
                then,
                other,
                joined: joined.heap.clone(),
            });
        }
        joined
    }

    /// Whether heap steps are recorded: only where some function is framed, since a
    /// recorded step keeps its terms alive, which changes the ids of later terms and with
    /// them Z3's search (a broken insertion sort without functions went from failed in 0.6 s
    /// to unknown after 7 s).
    fn frames_recorded(&self) -> bool {
        self.ctx.functions.values().any(|d| d.framed)
    }

    /// The heap changed from `before` to `after` only where nothing `mask` holds is (or at a
    /// location it holds whole): recorded, so that an application of a heap function in
    /// `after` can keep the value it had in `before` (`expr::Eval::frames`).
    fn record_heap_change(&mut self, before: &Heap, after: &Heap, mask: &Mask) {
        if !self.frames_recorded() {
            return;
        }
        self.ctx.world.record_heap_step(HeapStep::Change {
            before: before.clone(),
            after: after.clone(),
            mask: mask.clone(),
        });
    }

    fn call(
        &mut self,
        st: State,
        receiver: Option<&'p Expr>,
        name: &str,
        args: &'p [Expr],
        ghosts: Ghosts<'p>,
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let callee = *self
            .ctx
            .program
            .routine(name)
            .expect("checked by the caller");
        self.invoke(st, callee, Callee::Method(receiver), args, ghosts, span)
    }

    /// A call of `callee`: its precondition exhaled, its postcondition inhaled. For a
    /// constructor (`Callee::Constructor`), the new object is allocated between the two: it
    /// is `this` in the postcondition and the value of the call.
    fn invoke(
        &mut self,
        st: State,
        callee: Routine<'p>,
        how: Callee<'p>,
        args: &'p [Expr],
        Ghosts { given, yields }: Ghosts<'p>,
        span: Span,
    ) -> Result<(State, Value), EncodeError> {
        let name = callee.method.name.name.as_str();
        let mut ev = self.code_eval(&st);
        let mut store = Store::new();
        if let (true, Callee::Method(receiver)) = (callee.has_this(), how) {
            let this = match receiver {
                Some(r) => {
                    let v = ev.value(r)?;
                    if let Term::Ref(t) = &v.term {
                        ev.require_not_null(t, r.span);
                    }
                    Some(v)
                }
                None => st.store.get("this").cloned(),
            };
            match this {
                Some(v) => {
                    store.insert("this".to_string(), v);
                }
                None => {
                    return Err(unsupported(
                        "a call of an instance method without an object",
                        span,
                    ))
                }
            }
        }
        for (p, a) in callee.method.params.iter().zip(args) {
            let ty = ty_of(&p.ty)?;
            let v = coerce(&self.ctx.world, ev.value(a)?, &ty, a.span)?;
            fraction_argument(&mut ev, p, &v, a.span);
            store.insert(p.name.name.clone(), v);
        }
        for (fact, k) in self.declared_lengths(&callee.method.params, &store)? {
            ev.require_noted(
                fact,
                ObligationKind::PreconditionFailed,
                args.get(k).map_or(span, |a| a.span),
                Some("the array's length must be the size its parameter declares".into()),
            );
        }
        // Ghost arguments are specification: no 32-bit obligations. They are parameters too:
        // of their declared type, with its range to prove.
        ev.int32 = None;
        for g in given {
            let declared = callee.contract.clauses.iter().find_map(|c| match &c.kind {
                ClauseKind::Given(p) if p.name.name == g.name.name => Some(p),
                _ => None,
            });
            let v = ev.value(&g.value)?;
            let v = match declared {
                Some(p) => {
                    let v = coerce(&self.ctx.world, v, &ty_of(&p.ty)?, g.value.span)?;
                    fraction_argument(&mut ev, p, &v, g.value.span);
                    v
                }
                None => v,
            };
            store.insert(g.name.name.clone(), v);
        }
        self.flush(&mut ev);
        for c in &callee.contract.clauses {
            match &c.kind {
                // A ghost argument not passed: any value of its type (the callee assumes the
                // range of a fraction type; any value in it is one the caller could pass).
                ClauseKind::Given(p) if !store.contains_key(&p.name.name) => {
                    let ty = ty_of(&p.ty)?;
                    let v = self.ctx.world.fresh(&p.name.name, &ty);
                    if let Some(fact) = fraction::range(&p.ty.kind, &v) {
                        self.prover.assume(fact);
                    }
                    store.insert(p.name.name.clone(), v);
                }
                // A ghost result: whatever the postcondition says about it.
                ClauseKind::Yields(p) => {
                    let ty = ty_of(&p.ty)?;
                    store.insert(p.name.name.clone(), self.ctx.world.fresh(&p.name.name, &ty));
                }
                _ => {}
            }
        }
        if let (Some((own, ..)), Some(measure)) = (&self.own, &self.own_measure) {
            if own == name {
                if let OwnMeasure::Checked(old) = measure {
                    let old = old.clone();
                    let mut ev = eval(self.ctx, &st, true);
                    ev.store = store.clone();
                    let decreases = termination::explicit(callee.contract);
                    let Some((Decreases::Measure(exprs), _)) = decreases else {
                        unreachable!("the routine's own clause")
                    };
                    let new = exprs
                        .iter()
                        .map(|e| ev.int(e))
                        .collect::<Result<Vec<_>, _>>()?;
                    self.flush(&mut ev);
                    self.check_decrease(&new, &old, span, "at this recursive call");
                }
            }
        } else if let Some((own, tys, terms)) = &self.own {
            // Only a routine that ghost code may run must terminate; elsewhere a recursive
            // call uses the contract under partial correctness (`termination.rs`).
            if own == name && self.ctx.program.ghost_reached.contains(own) {
                let args: Vec<Term> = callee
                    .method
                    .params
                    .iter()
                    .filter_map(|p| store.get(&p.name.name).map(|v| v.term.clone()))
                    .collect();
                // The first site picks the first measure that decreases there (cheap
                // probes: these are small linear facts); later sites must agree with it.
                let measures = recursion::measures(tys, &self.ctx.world.len);
                let chosen = self
                    .self_calls
                    .first()
                    .and_then(|(_, ok)| ok.iter().position(|b| *b));
                let mut ok = vec![false; measures.len()];
                for (m, measure) in measures.iter().enumerate() {
                    if chosen.is_some_and(|c| c != m)
                        || (!self.self_calls.is_empty() && chosen.is_none())
                    {
                        continue;
                    }
                    if let Some(goal) = recursion::decrease(measure, terms, &args) {
                        if self.prover.probe(&goal) {
                            ok[m] = true;
                            break;
                        }
                    }
                }
                self.self_calls.push((span, ok));
            }
        }
        let mut pre = callee.everywhere();
        pre.extend(callee.pre());
        let mut post = callee.everywhere();
        post.extend(callee.post());
        post.extend(self.ctx.program.implicit_post(&callee));
        let before = st.snapshot();
        let before_mask = st.mask.clone();
        let (mut after, lent) = self.exhale_at(st, &pre, store.clone(), span)?;
        let result = match (&callee.method.return_type, how) {
            (_, Callee::Constructor(class)) => {
                let object = self.allocate_object(&before_mask, &[&after.store, &store], class);
                store.insert("this".to_string(), object.clone());
                object
            }
            (Some(t), _) if t.kind != crate::syntax::TypeKind::Void => {
                self.ctx.world.fresh("result", &ty_of(t)?)
            }
            _ => Value::bool(Bool::from_bool(true)),
        };
        let mut ev = eval(self.ctx, &after, false);
        ev.store = store.clone();
        ev.old = Some(before);
        ev.result = Some(result.clone());
        ev.borrowed = Borrowed::Return(lent);
        after.mask = assertion::inhale(&mut self.prover, &mut ev, after.mask, &post, &[])?;
        // `then { r = y; }`: the caller's local `r` receives the callee's yields `y`.
        for g in yields {
            let ExprKind::Name(y) = &g.value.kind else {
                return Err(unsupported(
                    "a `then` value that is not a yields name",
                    g.span,
                ));
            };
            let (Some(v), Some(old)) = (store.get(&y.name), after.store.get(&g.name.name)) else {
                return Err(unsupported("a `then` target that is not a local", g.span));
            };
            let v = coerce(&self.ctx.world, v.clone(), &old.ty, g.span)?;
            after.store.insert(g.name.name.clone(), v);
        }
        Ok((after, result))
    }

    /// Exhales a callee's precondition; failures are reported at the call. Returns the
    /// amounts its `AutoValue`s lent, which its postcondition gives back.
    fn exhale_at(
        &mut self,
        st: State,
        pre: &[&'p Expr],
        store: Store,
        span: Span,
    ) -> Result<(State, Lent), EncodeError> {
        let first = self.prover.obligations.len();
        self.lending = Some(Default::default());
        let st = self.as_precondition(|v| {
            v.exhale_state(
                st,
                &[(pre.to_vec(), Vec::new())],
                ObligationKind::PreconditionFailed,
                Some(store),
            )
        });
        let lent = self.lending.take().unwrap_or_default();
        let st = st?;
        self.report_at(
            first,
            &[
                ObligationKind::PreconditionFailed,
                ObligationKind::InsufficientPermission,
            ],
            None,
            span,
        );
        Ok((st, lent))
    }

    fn branch(
        &mut self,
        st: State,
        cond: &'p Expr,
        then_branch: &'p Stmt,
        else_branch: Option<&'p Stmt>,
    ) -> Result<Flow, EncodeError> {
        let (st, c) = self.rhs_bool(st, cond)?;

        self.prover.push_scope();
        self.prover.assume(c.clone());
        let a = self.stmt(st.clone(), then_branch)?;
        let facts_a = Bool::and(&self.prover.pop_scope());

        self.prover.push_scope();
        self.prover.assume(c.not());
        let b = match else_branch {
            Some(e) => self.stmt(st.clone(), e)?,
            None => Flow::Normal(st.clone()),
        };
        let facts_b = Bool::and(&self.prover.pop_scope());

        Ok(match (a, b) {
            (Flow::Normal(x), Flow::Normal(y)) => {
                self.prover.assume(c.implies(&facts_a));
                self.prover.assume(c.not().implies(&facts_b));
                Flow::Normal(self.join_paths(&c, x, y))
            }
            (Flow::Normal(x), Flow::Returned) => {
                self.prover.assume(c);
                self.prover.assume(facts_a);
                Flow::Normal(x)
            }
            (Flow::Returned, Flow::Normal(y)) => {
                self.prover.assume(c.not());
                self.prover.assume(facts_b);
                Flow::Normal(y)
            }
            (Flow::Returned, Flow::Returned) => Flow::Returned,
        })
    }

    /// `goto l;`: the rest of the method from `label l;` is checked from here, and this path
    /// ends (as with `return`, the method's end exhales the postcondition). The label must be
    /// a statement of the method's body itself, so that its continuation is the rest of that
    /// list; a path that comes back to a label it is following (a loop made of jumps, which
    /// would need an invariant) is not encoded.
    fn goto(&mut self, st: State, label: &'p crate::syntax::Ident) -> Result<Flow, EncodeError> {
        if !self.pars.is_empty() {
            return Err(unsupported("`goto` inside a par block", label.span));
        }
        if !self.invariants.is_empty() {
            // Its continuation would run with the invariant still open (and its resources
            // neither back with the method nor closed again).
            return Err(unsupported("`goto` inside an invariant block", label.span));
        }
        let Some(at) = self
            .body
            .iter()
            .position(|s| matches!(&s.kind, StmtKind::Label(l) if l.name == label.name))
        else {
            return Err(unsupported(
                "a `goto` to a label inside a nested statement (only labels of the method's \
                 body itself are followed)",
                label.span,
            ));
        };
        if self.jumps.contains(&label.name.as_str()) || self.jumps.len() >= MAX_JUMPS {
            return Err(unsupported(
                "a `goto` that may come back to where it jumped from (a loop made of jumps: \
                 write a `while` loop with an invariant)",
                label.span,
            ));
        }
        self.jumps.push(&label.name);
        let body = self.body;
        let mut flow = Flow::Normal(st);
        for s in &body[at + 1..] {
            let Flow::Normal(st) = flow else { break };
            flow = self.stmt(st, s)?;
        }
        if let Flow::Normal(st) = flow {
            self.exhale_post(st, None)?;
        }
        self.jumps.pop();
        Ok(Flow::Returned)
    }

    /// Binds [`super::vector::READ_SHARE`] for a vector block whose inferred contract reads
    /// cells: the method must hold some permission to each cell any lane reads (checked, at
    /// the cell), and the share is a positive amount no larger than any of those — one exists,
    /// the lanes being finitely many. A block with a written contract binds nothing.
    fn vector_read_share(
        &mut self,
        mut st: State,
        block: &'p ParBlock,
    ) -> Result<State, EncodeError> {
        let cells = super::vector::read_cells(block);
        if cells.is_empty() {
            return Ok(st);
        }
        // The mask named by a constant, so that its amounts can be patterns (a mask term holds
        // `ite`s, which patterns may not): the block's exhale reads the same constant.
        let named = Dynamic::fresh_const("vec_mask", &st.mask.array.get_sort());
        self.prover
            .assume(named.eq(Dynamic::from_ast(&st.mask.array)));
        st.mask = crate::verify::state::Mask {
            array: named.as_array().expect("a mask is an array"),
        };
        // Each lane: its iterators fresh constants within their ranges, quantified below
        // (evaluated once for all the cells).
        let mut lanes = st.store.clone();
        let mut binders = Vec::new();
        let mut in_range = Vec::new();
        let mut ev = self.code_eval(&st);
        for it in &block.iters {
            let lo = ev.int(&it.lo)?;
            let hi = ev.int(&it.hi)?;
            let lane = Int::fresh_const(&it.name.name);
            in_range.push(Bool::and(&[lane.ge(&lo), lane.lt(&hi)]));
            lanes.insert(
                it.name.name.clone(),
                Value {
                    term: Term::Int(lane.clone()),
                    ty: Ty::Int,
                },
            );
            binders.push(lane);
        }
        self.flush(&mut ev);
        let range = Bool::and(&in_range);
        let vars: Vec<&dyn Ast> = binders.iter().map(|b| b as &dyn Ast).collect();
        let mut bounds = Vec::new();
        for (cell, name) in cells {
            let share = self.ctx.world.fresh(name, &Ty::Perm);
            let Term::Real(amount) = share.term.clone() else {
                return Err(unsupported("a vector block's read share", block.span));
            };
            self.prover.assume(amount.gt(real(0)));
            st.store.insert(name.to_string(), share);
            let mut inner = eval(self.ctx, &st, false);
            inner.store = lanes.clone();
            let (r, i, _) = inner.location(cell)?;
            let held = st.mask.amount(&r, &i);
            let some = z3::ast::forall_const(&vars, &[], &range.implies(held.gt(real(0))));
            self.prover.check(Check {
                goal: some,
                kind: ObligationKind::InsufficientPermission,
                span: cell.span,
                note: Some("a vector lane reads this cell: the method must hold some of it".into()),
            });
            // At most half of what the method holds: it keeps some of each cell across the
            // block, so the cells' values stay framed (the lanes only read them).
            let half = z3::ast::Real::mul(&[&amount, &real(2)]);
            // Instantiated wherever the block's exhale reads the method's amount at a cell.
            bounds.push(super::state::forall_on(
                &vars,
                &held,
                &range.implies(half.le(&held)),
            ));
        }
        for b in bounds {
            self.prover.assume(b);
        }
        Ok(st)
    }

    fn exec_loop(
        &mut self,
        st: State,
        contract: &'p Contract,
        cond: Option<&'p Expr>,
        body: &'p Stmt,
        update: Option<&'p Stmt>,
    ) -> Result<Flow, EncodeError> {
        for c in &contract.clauses {
            if !matches!(
                c.kind,
                ClauseKind::LoopInvariant(_) | ClauseKind::Context(_) | ClauseKind::Decreases(_)
            ) {
                let what = if super::iteration::is_iteration_contract(contract) {
                    "an iteration contract (`requires`/`ensures` on a loop) on a loop of this \
                     shape: it is checked as a par block only for `for (int i = lo; i < hi; \
                     i++)` with `requires`, `ensures` and `context` clauses, whose bound stays \
                     fixed and whose body assigns no local declared before the loop and does \
                     not return or jump (otherwise write `loop_invariant`s)"
                } else {
                    "this clause on a loop (only loop_invariant and context are encoded)"
                };
                return Err(unsupported(what, c.span));
            }
        }
        let own_invs = clauses(contract, |k| match k {
            ClauseKind::LoopInvariant(e) | ClauseKind::Context(e) => Some(e),
            _ => None,
        });
        let invs = self.with_everywhere(own_invs.clone());
        // Every local the body (or update) may assign, however nested: in ghost code,
        // `invariant`/`atomic` blocks, `then { r = y; }` on calls (`Stmt::assigned_locals`).
        // The condition's calls are part of every iteration too.
        let mut assigned: Vec<String> = Vec::new();
        let mut note = |name: &str| {
            if !assigned.iter().any(|a| a == name) {
                assigned.push(name.to_string());
            }
        };
        for a in std::iter::once(body)
            .chain(update)
            .flat_map(|s| s.assigned_locals())
        {
            note(&a.name);
        }
        if let Some(c) = cond {
            c.ghost_result_targets(&mut |target| note(&target.name));
        }
        let havoc = |w: &World, st: &mut State| {
            for name in &assigned {
                if let Some(v) = st.store.get(name) {
                    let fresh = w.fresh(name, &v.ty.clone());
                    st.store.insert(name.clone(), fresh);
                }
            }
        };

        let st = self.exhale_state(
            st,
            &[(invs.clone(), Vec::new())],
            ObligationKind::LoopInvariantNotEstablished,
            None,
        )?;

        // The body, from the invariant alone.
        self.prover.push_scope();
        let mut inner = self.fresh_state(st.store.clone());
        inner.old = st.old.clone();
        havoc(&self.ctx.world, &mut inner);
        self.set_vars(&inner.store);
        let inner = self.inhale_state(inner, &invs, &[], true)?;
        // The invariant holds before each evaluation of the condition, whose calls run then.
        let (inner, c) = self.condition(inner, cond)?;
        self.prover.assume(c);
        // The measure where the iteration starts, the guard holding.
        let measure = match termination::explicit(contract) {
            Some((Decreases::Measure(exprs), span)) => {
                let mut ev = eval(self.ctx, &inner, true);
                let start = exprs
                    .iter()
                    .map(|e| ev.int(e))
                    .collect::<Result<Vec<_>, _>>()?;
                self.flush(&mut ev);
                Some((exprs, start, span))
            }
            Some((Decreases::Assume, span)) => {
                self.trusted.push(Trusted {
                    what: "a loop with `decreases assume;`: its termination is assumed".into(),
                    span,
                });
                None
            }
            None => None,
        };
        let outer_context = self.context.len();
        self.context.extend(own_invs);
        let flow = self.stmt(inner, body);
        self.context.truncate(outer_context);
        let mut flow = flow?;
        if let (Flow::Normal(s), Some(u)) = (&flow, update) {
            flow = self.stmt(s.clone(), u)?;
        }
        if let (Flow::Normal(s), Some((exprs, start, span))) = (&flow, &measure) {
            let mut ev = eval(self.ctx, s, true);
            let end = exprs
                .iter()
                .map(|e| ev.int(e))
                .collect::<Result<Vec<_>, _>>()?;
            self.flush(&mut ev);
            self.check_decrease(&end, start, *span, "at the end of every iteration");
        }
        if let Flow::Normal(s) = flow {
            self.exhale_state(
                s,
                &[(invs.clone(), Vec::new())],
                ObligationKind::LoopInvariantNotMaintained,
                None,
            )?;
        }
        self.prover.pop_scope();

        // After the loop: the frame, the invariant and the negated condition.
        let mut after = st;
        havoc(&self.ctx.world, &mut after);
        let after = self.inhale_state(after, &invs, &[], false)?;
        let (after, c) = self.condition(after, cond)?;
        self.prover.assume(c.not());
        Ok(Flow::Normal(after))
    }

    fn condition(
        &mut self,
        st: State,
        cond: Option<&'p Expr>,
    ) -> Result<(State, Bool), EncodeError> {
        match cond {
            Some(c) => self.rhs_bool(st, c),
            None => Ok((st, Bool::from_bool(true))),
        }
    }

    /// Blocks launched together (`par A .. and B ..`, `parallel { }`, or one block).
    fn par(&mut self, st: State, group: &'p [ParBlock]) -> Result<Flow, EncodeError> {
        let mut blocks = Vec::new();
        for block in group {
            let mut ev = self.code_eval(&st);
            let mut iters = Vec::new();
            for it in &block.iters {
                if !matches!(it.ty.kind, crate::syntax::TypeKind::Int) {
                    return Err(unsupported(
                        "a par iterator that is not an `int`",
                        it.ty.span,
                    ));
                }
                let lo = ev.int(&it.lo)?;
                let hi = ev.int(&it.hi)?;
                iters.push(RegionIter {
                    name: it.name.name.clone(),
                    lo,
                    hi,
                });
            }
            self.flush(&mut ev);
            // A block's `context_everywhere` is part of its threads' contract and of every
            // contract inside it (loop invariants, barriers), like a method's.
            let everywhere = clauses(&block.contract, |k| match k {
                ClauseKind::ContextEverywhere(e) => Some(e),
                _ => None,
            });
            let mut pre = self.with_everywhere(everywhere.clone());
            pre.extend(pre_clauses(&block.contract));
            let mut post = self.with_everywhere(everywhere.clone());
            post.extend(post_clauses(&block.contract));
            for c in &block.contract.clauses {
                if !matches!(
                    c.kind,
                    ClauseKind::Requires(_)
                        | ClauseKind::Ensures(_)
                        | ClauseKind::Context(_)
                        | ClauseKind::ContextEverywhere(_)
                ) {
                    return Err(unsupported("this clause on a par block", c.span));
                }
            }
            blocks.push(Launch {
                block,
                iters,
                pre,
                post,
                everywhere,
            });
        }

        let context = self.context_true_at(&st);

        // One arbitrary thread of each block, from an empty heap, checked *before* the caller
        // assumes anything about the block's end: each thread's obligations hold under the
        // assumptions of its own path only (the caller's state before the launch), so a
        // thread postcondition that contradicts the caller's knowledge (`ensures false`,
        // `ensures tid < 0` with `0 < n`) cannot make the thread's check vacuous. Everything
        // the thread assumes is popped with its scope. (A fork of the solver for the thread
        // was tried: with `Solver::clone` libz3 4.8.12 crashed building models on
        // Kogge-Stone-16; with the assertions copied one by one, blelloch_2d ran for minutes.)
        let mut kept = Vec::new();
        for launch in &blocks {
            self.prover.push_scope();
            let checked = self.thread(&st, launch, &context);
            self.prover.pop_scope();
            kept.extend(checked?);
        }

        // The caller: all threads' preconditions out, all postconditions in (their truth is
        // what the threads' checks above established).
        let before = st.snapshot();
        let parts: Vec<_> = blocks
            .iter()
            .map(|b| (b.pre.clone(), b.iters.clone()))
            .collect();
        let mut after = self.as_precondition(|v| {
            v.exhale_state(
                st.clone(),
                &parts,
                ObligationKind::ParPreconditionFailed,
                None,
            )
        })?;
        self.assume_of(&after, &kept);
        for Launch { iters, post, .. } in &blocks {
            let mut ev = eval(self.ctx, &after, false);
            ev.old = Some(before.clone());
            after.mask = assertion::inhale(&mut self.prover, &mut ev, after.mask, post, iters)?;
        }
        Ok(Flow::Normal(after))
    }

    /// One arbitrary thread of `block`, in a scope of the routine's solver that
    /// [`Verifier::par`] pops before the caller assumes anything about the block's end. Its
    /// heap context: the facts of `context` its precondition frames are assumed where it
    /// starts; returned are those it proves at its end that its postcondition frames
    /// ([`Verifier::framed_by`]).
    fn thread(
        &mut self,
        st: &State,
        launch: &Launch<'p>,
        context: &[(&'p Expr, Store)],
    ) -> Result<Vec<(&'p Expr, Store)>, EncodeError> {
        let Launch {
            block,
            iters,
            pre,
            post,
            everywhere,
        } = launch;
        let mut store = st.store.clone();
        for it in iters {
            let t = Int::fresh_const(&it.name);
            self.prover.assume(Bool::and(&[it.lo.le(&t), t.lt(&it.hi)]));
            store.insert(it.name.clone(), Value::int(t));
        }
        let thread = self.fresh_state(store);
        self.set_vars(&thread.store);
        let framed = self.framed_by(&thread, pre, context);
        self.assume_of(&thread, &framed);
        let mut thread = self.as_precondition(|v| v.inhale_state(thread, pre, &[], true))?;
        thread.old = thread.snapshot();
        let start = thread.clone();
        // The facts of the context the postcondition frames: what the thread may keep. Where
        // there are none the postcondition's framing is checked here, before the body (in a
        // solver holding few facts yet); else at the end, with the facts the thread keeps.
        let keepable = if context.is_empty() {
            Vec::new()
        } else {
            let given_back = self.fresh_state(start.store.clone());
            self.framed_by(&given_back, post, context)
        };
        if keepable.is_empty() {
            self.check_framing(&start, post)?;
        }
        self.pars.push(ParFrame {
            label: block.label.as_ref().map(|l| l.name.clone()),
            iters: iters.to_vec(),
        });
        let outer = self.everywhere.len();
        self.everywhere.extend(everywhere);
        let flow = self.block(thread, &block.body);
        self.everywhere.truncate(outer);
        self.pars.pop();
        let flow = flow?;
        // What the thread keeps of its heap context, checked before its postcondition's
        // framing: the caller assumes those facts before it inhales the postcondition.
        let kept = match &flow {
            Flow::Normal(end) => self.true_in(end, &keepable),
            Flow::Returned => Vec::new(),
        };
        if !keepable.is_empty() {
            // The caller assumes the kept facts before it inhales the postcondition.
            self.check_framing_with(&start, post, true, &kept)?;
        }
        if let Flow::Normal(end) = flow {
            self.exhale_state(
                end,
                &[(post.to_vec(), Vec::new())],
                ObligationKind::ParPostconditionFailed,
                None,
            )?;
        }
        Ok(kept)
    }

    /// The pure facts of the context around a par block that read the heap and are provably
    /// true where the block starts (`st`): the conjuncts of the routine's precondition, of the
    /// enclosing loops' invariants and of the enclosing invariant blocks' resources (with
    /// their locals), each with the store it is read in. Candidates for
    /// [`Verifier::framed_by`]; a probe that does not decide drops the fact, never more.
    fn context_true_at(&mut self, st: &State) -> Vec<(&'p Expr, Store)> {
        let mut candidates: Vec<(&'p Expr, Store)> = Vec::new();
        for e in self.context.clone() {
            for c in context_facts(e) {
                candidates.push((c, st.store.clone()));
            }
        }
        for (_, inv, store) in self.invariants.clone() {
            for c in context_facts(inv) {
                candidates.push((c, store.clone()));
            }
        }
        // In a scope of its own, as the other probes: the routine's solver is left as it was.
        self.prover.push_scope();
        let candidates = self.true_in(st, &candidates);
        self.prover.pop_scope();
        candidates
    }

    /// The facts of `candidates` that `assertions` frame: every read of the fact is defined,
    /// with a positive permission to each location it reads, in the state `assertions` give
    /// when inhaled into `st` (a trial inhale, in a scope of its own, probed; undecided drops
    /// the fact). A par block's heap context (VerCors' `--infer-heap-context-into-frame`, on by
    /// default): a fact of the context true where the block starts
    /// ([`Verifier::context_true_at`]) that a thread's precondition frames holds in the
    /// thread's initial heap, which agrees with the caller's on every location the
    /// precondition gives it (the thread starts where the block starts); one the thread proves
    /// at its end that its postcondition frames holds in the caller's heap after the block,
    /// which agrees with the thread's final heap on every location the postcondition gives
    /// back. A fact that the precondition does not frame for every thread (the caller's
    /// `y[i] == 0` for all `i`, where a thread holds `y[tid]`; `c.v == 0` where only thread 0
    /// holds `c.v`) stays the caller's.
    fn framed_by(
        &mut self,
        st: &State,
        assertions: &[&'p Expr],
        candidates: &[(&'p Expr, Store)],
    ) -> Vec<(&'p Expr, Store)> {
        if candidates.is_empty() {
            return Vec::new();
        }
        self.prover.push_scope();
        self.prover.trial = true;
        let trial = self.as_precondition(|v| v.inhale_state(st.clone(), assertions, &[], false));
        self.prover.trial = false;
        let framed = match trial {
            Ok(trial) => candidates
                .iter()
                .filter(|(c, store)| match self.fact_in(&trial, c, store, true) {
                    Some((_, defined)) => self.prover.probe(&Bool::and(&defined)),
                    None => false,
                })
                .cloned()
                .collect(),
            Err(_) => Vec::new(),
        };
        self.prover.pop_scope();
        framed
    }

    /// The facts of `candidates` provably true in `st` (each read with its store).
    fn true_in(&mut self, st: &State, candidates: &[(&'p Expr, Store)]) -> Vec<(&'p Expr, Store)> {
        candidates
            .iter()
            .filter(|(c, store)| match self.fact_in(st, c, store, false) {
                Some((value, _)) => self.prover.probe(&value),
                None => false,
            })
            .cloned()
            .collect()
    }

    /// Assumes `facts` of the heap of `st` (see [`Verifier::framed_by`] for why they hold).
    fn assume_of(&mut self, st: &State, facts: &[(&'p Expr, Store)]) {
        for (c, store) in facts {
            if let Some((value, _)) = self.fact_in(st, c, store, false) {
                self.prover.assume(value);
            }
        }
    }

    /// The value of the fact `c` in `st`, read with the locals of `store` (the definitions its
    /// evaluation needs assumed), and with `definedness` the goals of its definedness checks;
    /// `None` where it has no encoding (the fact is then not used).
    fn fact_in(
        &mut self,
        st: &State,
        c: &Expr,
        store: &Store,
        definedness: bool,
    ) -> Option<(Bool, Vec<Bool>)> {
        let mut ev = eval(self.ctx, st, definedness);
        ev.store = store.clone();
        let value = ev.bool(c).ok()?;
        for a in ev.take_axioms() {
            self.prover.assume(a);
        }
        let checks = std::mem::take(&mut ev.checks);
        Some((value, checks.into_iter().map(|check| check.goal).collect()))
    }

    fn barrier(&mut self, st: State, b: &'p Barrier, span: Span) -> Result<Flow, EncodeError> {
        let Some(frame) = self
            .pars
            .iter()
            .rev()
            .find(|f| f.label.as_deref() == Some(b.label.name.as_str()))
        else {
            return Err(unsupported(
                "a barrier outside the par block it names",
                b.label.span,
            ));
        };
        let iters = frame.iters.clone();
        if let Some(inner) = self.pars.last().filter(|f| f.label != frame.label) {
            return Err(EncodeError::BarrierInNestedPar {
                label: b.label.name.clone(),
                inner: inner
                    .label
                    .as_ref()
                    .map_or("without a label".into(), |l| format!("`{l}`")),
                span: b.label.span,
            });
        }
        if !b.body.stmts.is_empty() || !b.invariants.is_empty() {
            return Err(unsupported("a barrier with a body or invariants", span));
        }
        let pre = self.with_everywhere(pre_clauses(&b.contract));
        let post = self.with_everywhere(post_clauses(&b.contract));

        // Each side is self-framing.
        for side in [&pre, &post] {
            self.prover.push_scope();
            let fresh = self.fresh_state(st.store.clone());
            let r = self.inhale_state(fresh, side, &[], true);
            self.prover.pop_scope();
            r?;
        }

        // Global: all threads' preconditions justify all postconditions, with nothing else.
        self.prover.push_scope();
        let fresh = self.fresh_state(st.store.clone());
        let global = self.inhale_state(fresh, &pre, &iters, false)?;
        let r = self.exhale_state(
            global,
            &[(post.clone(), iters.clone())],
            ObligationKind::BarrierNotJustified,
            None,
        );
        self.prover.pop_scope();
        r?;

        // Local: this thread gives up the precondition and receives the postcondition.
        let st = self.exhale_state(
            st,
            &[(pre, Vec::new())],
            ObligationKind::BarrierPreconditionFailed,
            None,
        )?;
        Ok(Flow::Normal(self.inhale_state(st, &post, &[], false)?))
    }
}

impl Verifier<'_, '_> {
    /// `v`, assigned to the local `name` of type `kind` by `source`, lies in that type's range.
    fn fraction_assigned(
        &mut self,
        kind: &crate::syntax::TypeKind,
        name: &str,
        v: &Value,
        source: &Expr,
    ) {
        if let Some(range) = fraction::range(kind, v) {
            self.prover.check(Check {
                goal: range,
                kind: ObligationKind::FractionOutOfRange,
                span: source.span,
                note: fraction::note(kind, name),
            });
        }
    }
}

/// The range of the fraction parameter `p`, bound to `v` at a call: part of the callee's
/// precondition (it assumes the range), so a `precondition_failed` obligation at `span`.
fn fraction_argument(ev: &mut Eval<'_>, p: &crate::syntax::Param, v: &Value, span: Span) {
    if let Some(range) = fraction::range(&p.ty.kind, v) {
        ev.checks.push(Check {
            goal: range,
            kind: ObligationKind::PreconditionFailed,
            span,
            note: fraction::note(&p.ty.kind, &p.name.name),
        });
    }
}

/// The conjuncts of `e` (through `**` and `&&`) that may serve as a par block's heap context
/// ([`Verifier::context_true_at`]): pure, read some location (a field, a cell, a length or an
/// application), and mean the same in every state that agrees on what they read — no
/// `\old`, no `perm(..)`, no `\result`.
fn context_facts(e: &Expr) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ExprKind::Binary {
                op: crate::syntax::BinaryOp::Star | crate::syntax::BinaryOp::And,
                lhs,
                rhs,
            } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            _ if assertion::is_pure(e) => {
                let mut reads = false;
                let mut stateful = false;
                e.visit(&mut |x| match &x.kind {
                    ExprKind::Field { .. }
                    | ExprKind::Index { .. }
                    | ExprKind::Length(_)
                    | ExprKind::Call { .. } => {
                        reads = true;
                        if let ExprKind::Call { name, .. } = &x.kind {
                            stateful |= name.name == "perm";
                        }
                    }
                    ExprKind::Old(_) | ExprKind::Result => stateful = true,
                    _ => {}
                });
                if reads && !stateful {
                    out.push(e);
                }
            }
            _ => {}
        }
    }
    out
}

/// A par block about to be launched: its iterators' ranges and its threads' contract (with
/// the `context_everywhere` clauses around and its own).
struct Launch<'p> {
    block: &'p ParBlock,
    iters: Vec<RegionIter>,
    pre: Vec<&'p Expr>,
    post: Vec<&'p Expr>,
    everywhere: Vec<&'p Expr>,
}

/// The join of two states after an `if`: `c ? a : b` everywhere (a heap that neither path
/// changed stays the same term: `Verifier::join_paths`).
fn join(c: &Bool, a: State, b: State) -> State {
    let mut store = Store::new();
    for (name, va) in &a.store {
        if let Some(vb) = b.store.get(name) {
            store.insert(
                name.clone(),
                Value {
                    term: Term::ite(c, &va.term, &vb.term),
                    ty: va.ty.clone(),
                },
            );
        }
    }
    State {
        store,
        heap: Heap::ite(c, &a.heap, &b.heap),
        mask: Mask::ite(c, &a.mask, &b.mask),
        old: a.old,
    }
}

/// Declares every pure function and assumes its definition where that is sound (the body has
/// an encoding and every recursive call decreases a non-negative integer parameter), and its
/// postcondition unless it is the routine being `checking` (where that would be circular) or
/// in a cycle of calls through other routines. For a function that reads the heap both are
/// only marked usable: they are instantiated at each application (`Eval::apply`), because an
/// axiom quantified over heap arrays leaves Z3's array theory incomplete and every failure
/// in the method would come back unknown.
fn declare_functions(
    world: &World,
    program: &ProgramInfo<'_>,
    checking: &str,
    prover: &mut SolverProver,
    report: &mut Vec<Warning>,
) -> Functions {
    let mut warnings = Vec::new();
    let mut functions = Functions::new();
    for f in program.functions() {
        let params: Result<Vec<(String, Ty)>, _> = f
            .method
            .params
            .iter()
            .map(|p| ty_of(&p.ty).map(|t| (p.name.name.clone(), t)))
            .collect();
        let ret = f.method.return_type.as_ref().map(ty_of);
        let (Ok(mut params), Some(Ok(ret))) = (params, ret) else {
            continue;
        };
        // Axioms quantify over a parameter's whole sort, and a map's sort holds non-maps (an
        // entry of two values), a bag's negative multiplicities: a fact true of every map or
        // bag need not hold there. Its calls are refused.
        if params
            .iter()
            .any(|(_, t)| matches!(t, Ty::Map(..) | Ty::Bag(_)))
        {
            continue;
        }
        // A precondition that holds permissions or a predicate instance: the function reads
        // the heap they cover.
        let pre: Vec<Expr> = expr::function_pre(f)
            .into_iter()
            .map(|e| super::inline::expand(e, program).unwrap_or_else(|| e.clone()))
            .collect();
        let no_permissions = pre.iter().all(assertion::is_pure);
        let reads_heap =
            !no_permissions || pre.iter().any(|e| assertion::applies_predicate(e, program));
        // Kept across heap changes that leave its footprint unchanged: the locations its
        // `Perm`s and `Value`s name (read in the heap before the change) and the predicate
        // instances it holds. Other resources (`PointsTo`, `\matrix`, tokens) are not read.
        let framed = reads_heap && pre.iter().all(assertion::only_locations_and_instances);
        // Only a function that reads the heap can depend on `this` (through its fields); the
        // others keep their signature, and with it Z3's search on the proofs that use them.
        if let (true, true, Some(class)) = (reads_heap, f.has_this(), f.class) {
            params.insert(0, ("this".to_string(), Ty::Object(class.to_string())));
        }
        let heap_sorts = if reads_heap {
            Heap::fresh(world).terms()
        } else {
            Vec::new()
        };
        let sorts: Vec<z3::Sort> = heap_sorts
            .iter()
            .map(|h| h.get_sort())
            .chain(
                params
                    .iter()
                    .map(|(_, t)| world.fresh("s", t).term.as_dynamic().get_sort()),
            )
            .collect();
        let sort_refs: Vec<&z3::Sort> = sorts.iter().collect();
        let ret_sort = world.fresh("s", &ret).term.as_dynamic().get_sort();
        let name = &f.method.name.name;
        functions.insert(
            name.clone(),
            FunctionDecl {
                full: z3::FuncDecl::new(format!("fn_{name}"), &sort_refs, &ret_sort),
                limited: z3::FuncDecl::new(format!("fn_{name}_limited"), &sort_refs, &ret_sort),
                params,
                ret,
                reads_heap,
                terminates: false,
                post_usable: false,
                depth_measure: None,
                framed,
            },
        );
    }
    // The definitions used so far (of the functions that read no heap: the others are
    // instantiated at their applications), which the termination check of a later function
    // that applies them may use: `!is_empty(s)` guarding `f(s.tail)` says that `s` is not empty.
    let mut defined: BTreeMap<String, Bool> = BTreeMap::new();
    for f in program.functions() {
        let name = &f.method.name.name;
        let MethodBody::Expr(body) = &f.method.body else {
            continue;
        };
        if program.cyclic.contains(name) {
            warnings.push(Warning {
                message: format!(
                    "the definition of `{name}` is not used: it is mutually recursive with \
                     another routine, and such recursion is not proved to terminate"
                ),
                span: f.span,
            });
            continue;
        }
        let Some(decl) = functions.get(name) else {
            continue;
        };
        match definition(world, program, &functions, decl, f, body, &defined) {
            Ok((axioms, termination)) => {
                let at_applications = decl.reads_heap;
                let terminates = termination != Termination::Unproved;
                if let Some(decl) = functions.get_mut(name) {
                    decl.terminates = terminates;
                    if let Termination::ByDepth(instance) = termination {
                        decl.depth_measure = Some(instance);
                    }
                }
                if !at_applications {
                    prover.assume(axioms.0);
                }
                if terminates {
                    if !at_applications {
                        defined.insert(name.clone(), axioms.1.clone());
                        prover.assume(axioms.1);
                    }
                } else {
                    warnings.push(Warning {
                        message: format!(
                            "the definition of `{name}` is not used: its recursion is not proved to terminate (no integer parameter, difference of two, sequence length, or distance of an integer parameter to an array's or sequence's length decreases at every recursive call while staying non-negative)"
                        ),
                        span: f.span,
                    });
                }
            }
            Err(e) => warnings.push(Warning {
                message: format!("the definition of `{name}` is not used: {e}"),
                span: f.span,
            }),
        }
    }
    for f in program.functions() {
        let name = &f.method.name.name;
        let Some(decl) = functions.get(name) else {
            continue;
        };
        if name == checking {
            continue;
        }
        if program.cyclic.contains(name) {
            if !f.post().is_empty() {
                warnings.push(Warning {
                    message: format!(
                        "the postcondition of `{name}` is not used: it is mutually recursive \
                         with another routine, and such recursion is not proved to terminate"
                    ),
                    span: f.span,
                });
            }
            continue;
        }
        if decl.reads_heap {
            if let Some(decl) = functions.get_mut(name) {
                decl.post_usable = true;
            }
            continue;
        }
        match post_axiom(world, program, &functions, decl, f) {
            Ok(Some(axiom)) => prover.assume(axiom),
            Ok(None) => {}
            Err(e) => warnings.push(Warning {
                message: format!("the postcondition of `{name}` is not used: {e}"),
                span: f.span,
            }),
        }
    }
    // A function's warnings belong in its own report, not in every routine's.
    let own = program.routine(checking).map(|r| r.span);
    report.extend(warnings.into_iter().filter(|w| Some(w.span) == own));
    functions
}

type Axioms = (Bool, Bool);

/// What an exhale forgets of the heap.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Forget {
    /// Every location of a kind it took permission from (all kinds, for a predicate
    /// instance) where no permission is left: others may write it now.
    Unowned,
    /// Nothing: the permissions stay in this method (`fold`, `unfold`).
    Nothing,
}

/// Why a function's recursion terminates, as far as its definition is concerned.
#[derive(PartialEq)]
enum Termination {
    /// No recursion, `decreases assume;`, or a measure proved decreasing here.
    Proved,
    /// Every recursive application is inside `\unfolding` of the predicate of this
    /// instance of the precondition: its height is the measure, proved lower at each
    /// application by the function's own check (`check_function_measure`), which fails the
    /// function, and so the program, where it is not.
    ByDepth(Expr),
    Unproved,
}

fn definition(
    world: &World,
    program: &ProgramInfo<'_>,
    functions: &Functions,
    decl: &FunctionDecl,
    f: &Routine<'_>,
    body: &Expr,
    defined: &BTreeMap<String, Bool>,
) -> Result<(Axioms, Termination), EncodeError> {
    let name = &f.method.name.name;
    let (heap, store, xs) = bound_arguments(world, decl);
    let decls = Decls {
        world,
        program: Some(program),
        functions: Some(functions),
    };
    let mut ev = Eval::new(decls, store.clone());
    ev.heap = heap.clone();
    ev.defining = Some(name.clone());
    // A heap function's axioms are instantiated at its applications, not assumed from here:
    // `pre` only serves the termination check, which a hypothesis weakened by reading its
    // predicate instances as `true` makes harder, never easier.
    ev.predicate_reading = if decl.reads_heap {
        expr::PredicateReading::True
    } else {
        expr::PredicateReading::Refused
    };
    let pre = expr::function_hypothesis(&mut ev, f)?;
    ev.recursive_calls.clear();
    let value = ev.value(body)?;
    let result = f.method.return_type.as_ref().and_then(|t| ty_of(t).ok());
    let value = ev.settle(value, result.as_ref(), body.span)?;
    let calls = std::mem::take(&mut ev.recursive_calls);
    let args: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
    let full = decl.full.apply(&args);
    let limited = decl.limited.apply(&args);
    let pattern = z3::Pattern::new(&[&full as &dyn Ast]);
    let ax1 = z3::ast::forall_const(&args, &[&pattern], &full.eq(&limited));
    let ax2 = z3::ast::forall_const(
        &args,
        &[&pattern],
        &pre.implies(full.eq(value.term.as_dynamic())),
    );
    // What the termination checks may assume: the precondition and the definitions of the
    // functions before this one that its body applies (only those: the definitions of a whole
    // lemma library, quantifiers over sequences among them, crashed libz3 4.8.12 here).
    let mut applied = BTreeSet::new();
    body.visit(&mut |x| {
        if let ExprKind::Call { name, .. } = &x.kind {
            applied.insert(name.name.clone());
        }
    });
    let hypothesis = Bool::and(
        &std::iter::once(pre.clone())
            .chain(
                defined
                    .iter()
                    .filter(|(n, _)| applied.contains(*n))
                    .map(|(_, d)| d.clone()),
            )
            .collect::<Vec<_>>(),
    );
    let terminates = calls.is_empty()
        || match termination::explicit(f.contract) {
            Some((Decreases::Assume, _)) => true,
            Some((Decreases::Measure(exprs), _)) => {
                let measure_at = |store: Store| -> Result<Vec<Int>, EncodeError> {
                    let mut ev = Eval::new(decls, store);
                    ev.heap = heap.clone();
                    exprs.iter().map(|e| ev.int(e)).collect()
                };
                let old = measure_at(store.clone())?;
                let mut at_calls = Vec::new();
                for call in &calls {
                    let mut at = store.clone();
                    for ((n, _), v) in decl.params.iter().zip(&call.args) {
                        at.insert(n.clone(), v.clone());
                    }
                    at_calls.push((call.guard.clone(), measure_at(at)?));
                }
                recursion::measure_decreases(&hypothesis, &old, &at_calls)
            }
            None => {
                let by_params: Vec<(Bool, Vec<Value>)> = calls
                    .iter()
                    .map(|c| (c.guard.clone(), c.args.clone()))
                    .collect();
                recursion::terminates(&decl.params, &store, &hypothesis, &by_params, &world.len)
            }
        };
    if terminates {
        return Ok(((ax1, ax2), Termination::Proved));
    }
    // Recursion through the unfolding of a predicate instance the precondition holds.
    let instance = decl
        .reads_heap
        .then(|| {
            expr::function_pre(f).into_iter().find_map(|e| {
                let expanded = super::inline::expand(e, program);
                recursion::held_instance(expanded.as_ref().unwrap_or(e), program)
            })
        })
        .flatten();
    let by_depth = instance.filter(|i| {
        let (_, instance) = recursion::guarded_instance(i);
        let pred = super::inline::predicate_call(instance).map(|(_, n, _)| n);
        calls
            .iter()
            .all(|c| c.unfolded.iter().any(|u| Some(u.as_str()) == pred))
    });
    Ok((
        (ax1, ax2),
        by_depth.map_or(Termination::Unproved, Termination::ByDepth),
    ))
}

/// Fresh constants for a pure function's arguments, to quantify its axioms over: the heap's
/// arrays when it reads the heap, then its parameters (by name in the store). Returns the
/// heap, the store, and all the constants in argument order.
fn bound_arguments(world: &World, decl: &FunctionDecl) -> (Option<Heap>, Store, Vec<Dynamic>) {
    let heap = decl.reads_heap.then(|| Heap::fresh(world));
    let mut xs = heap.as_ref().map(Heap::terms).unwrap_or_default();
    let mut store = Store::new();
    for (p, t) in &decl.params {
        let v = world.bound(p, t);
        xs.push(v.term.as_dynamic());
        store.insert(p.clone(), v);
    }
    (heap, store, xs)
}

/// `∀ args. pre ⇒ post[\result := f(args)]`, triggered by `f(args)` (see
/// [`expr::function_fact`] for why the permissions in `pre` may be dropped).
fn post_axiom(
    world: &World,
    program: &ProgramInfo<'_>,
    functions: &Functions,
    decl: &FunctionDecl,
    f: &Routine<'_>,
) -> Result<Option<Bool>, EncodeError> {
    let (heap, store, xs) = bound_arguments(world, decl);
    let decls = Decls {
        world,
        program: Some(program),
        functions: Some(functions),
    };
    let args: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
    let full = decl.full.apply(&args);
    let app = value_of(&decl.ret, full.clone());
    let vals: Vec<Value> = decl.params.iter().map(|(p, _)| store[p].clone()).collect();
    let Some(fact) = expr::function_fact(
        decls,
        heap,
        f,
        &decl.params,
        &vals,
        &app,
        expr::PredicateReading::Refused,
    )?
    else {
        return Ok(None);
    };
    let pattern = z3::Pattern::new(&[&full as &dyn Ast]);
    Ok(Some(z3::ast::forall_const(&args, &[&pattern], &fact)))
}
