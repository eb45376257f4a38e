//! Inhale and exhale of assertions: permissions move between the mask and the assertion, pure
//! parts are assumed or checked.
//!
//! An assertion is walked down to *atoms*: a permission `Perm(loc, p)` or a pure boolean, each
//! under the guards (`c ==> A`, `c ? A : B`) and quantifier binders (`\forall* x; c; A`) above
//! it. A permission atom with binders is a quantified permission: its location must be
//! injective in the binders (checked), and the mask is updated through inverse functions
//! (Viper's quantified permissions), never by enumeration, so symbolic sizes work.
//!
//! A *region* (the threads of a par block, or of a barrier's block) quantifies an assertion
//! over iterators: each atom only over the iterators it mentions; a permission atom that does
//! not mention an iterator is scaled by that iterator's number of values, and a pure atom that
//! does not mention it is checked once (under "the range is not empty").
//!
//! Invariants: every amount is checked non-negative; inhale assumes the total per location
//! stays ≤ 1 (which is what makes `Perm(x, 1) ** Perm(x, 1)` false); exhale checks the mask
//! holds at least the amount before subtracting it; `read` is a wildcard — a fresh positive
//! amount, on exhale smaller than what is held.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use z3::ast::{Ast, Bool, Dynamic, Int, Real};
use z3::{FuncDecl, Sort as Z3Sort};

use crate::syntax::{
    print_expr, BinaryOp, Builtin, Expr, ExprKind, LetScope, PermLit, QuantifierKind, TypeKind,
};

use super::expr::{close, unsupported, EncodeError, Eval};
use super::inline;
use super::obligation::{Check, ObligationKind};
use super::one_point;
use super::state::{define_array, pattern_safe, real, HeapKind, Mask, Term, Ty, HEAP_KINDS};
use super::syn;
use super::tiles;

/// Where checks go and facts come from: the method's solver.
pub trait Prover {
    /// Proves `check` in the current state (and assumes it afterwards).
    fn check(&mut self, check: Check);
    fn assume(&mut self, fact: Bool);
}

/// One iterator of a region, with its range as terms of the caller's state.
#[derive(Clone, Debug)]
pub struct RegionIter {
    pub name: String,
    pub lo: Int,
    pub hi: Int,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Inhale,
    Exhale(ObligationKind),
}

enum Amount {
    Exact(Real),
    Wildcard,
}

/// What a permission location holds.
enum Held {
    /// A field or array cell of this type: at most one full permission, and a positive one
    /// makes its reference non-null.
    Value(Ty),
    /// A predicate instance: no bound on how many are held (as in Viper).
    Instance,
    /// A thread or lock token `idle(t)`, `running(t)`, `held(t)` (`World::token_location`):
    /// held like a predicate instance, and like a field it is never held at null (the
    /// inhale assumes `t != null`, so an exhale at null fails for want of the token) —
    /// VerCors does not ask `t` to be non-null where the token is written.
    Token,
}

impl Held {
    fn heap_kind(&self) -> Option<HeapKind> {
        match self {
            Held::Value(ty) => Some(ty.heap_kind()),
            _ => None,
        }
    }
}

/// The amounts a method's precondition borrowed with `AutoValue`, by the location's text.
pub type Lent = BTreeMap<String, Real>;

/// What `AutoValue(loc)` means where an assertion is walked ([`Eval::borrowed`]).
#[derive(Clone, Debug, Default)]
pub enum Borrowed {
    /// Anywhere but a method's own precondition and postcondition (a function's precondition,
    /// a thread's `run` contract at `fork` and `join`): `Value(loc)`, a wildcard read.
    #[default]
    AsValue,
    /// A method's precondition: each `AutoValue(loc)` takes an amount of its own — inhaled
    /// (the method's entry), any positive amount; exhaled (a call), a wildcard below what the
    /// caller holds — recorded by the location's text.
    Lend(Lent),
    /// The postcondition of the same method: each `AutoValue(loc)` is exactly the amount its
    /// precondition took, so the callee gives back what it borrowed and the caller holds
    /// after the call what it held before.
    Return(Lent),
}

/// Inhales `assertions` into `mask`, evaluated by `eval` (whose mask is kept equal to the
/// growing mask, so a read is framed by the permissions inhaled before it: with
/// `eval.definedness` set this is the self-framing check). Returns the new mask.
pub fn inhale(
    prover: &mut dyn Prover,
    eval: &mut Eval<'_>,
    mask: Mask,
    assertions: &[&Expr],
    region: &[RegionIter],
) -> Result<Mask, EncodeError> {
    let mut walker = Walker::new(prover, eval, mask, Mode::Inhale, region);
    for a in assertions {
        walker.walk_expanded(a)?;
    }
    walker.finish();
    Ok(walker.mask)
}

/// [`inhale`] without assuming that each location holds at most one permission: a pure
/// function's precondition, whose permissions only frame its reads. What the function proves
/// becomes an axiom with the permissions dropped from its hypothesis (`expr::function_fact`),
/// so it must not rest on the non-aliasing that the bound implies (`Perm(x.f, 1) **
/// Perm(y.f, 1)` gives `x != y` only under the bound).
pub fn inhale_unbounded(
    prover: &mut dyn Prover,
    eval: &mut Eval<'_>,
    mask: Mask,
    assertions: &[&Expr],
) -> Result<Mask, EncodeError> {
    let mut walker = Walker::new(prover, eval, mask, Mode::Inhale, &[]);
    walker.bounded = false;
    for a in assertions {
        walker.walk_expanded(a)?;
    }
    walker.finish();
    Ok(walker.mask)
}

/// Exhales `assertions` from `mask`; pure parts failing are reported as `kind`. Everything is
/// evaluated in `eval`'s state (the state before the exhale). Returns the new mask and the heap
/// kinds of the locations that lost an exact amount (the caller forgets the heap of those kinds
/// where nothing is left). A wildcard exhale removes less than is held, so it leaves every
/// location owned that was: it counts for no kind.
pub fn exhale(
    prover: &mut dyn Prover,
    eval: &mut Eval<'_>,
    mask: Mask,
    assertions: &[&Expr],
    region: &[RegionIter],
    kind: ObligationKind,
) -> Result<(Mask, Vec<HeapKind>), EncodeError> {
    let mut walker = Walker::new(prover, eval, mask, Mode::Exhale(kind), region);
    for a in assertions {
        walker.walk_expanded(a)?;
    }
    walker.finish();
    Ok((walker.mask, walker.removed))
}

/// True when `e` holds no permission (no `Perm`, `PointsTo`, `Value`, `\matrix` or thread
/// token).
pub fn is_pure(e: &Expr) -> bool {
    !uses_builtin(
        e,
        &[
            Builtin::Perm,
            Builtin::PointsTo,
            Builtin::Matrix,
            Builtin::Value,
            Builtin::AutoValue,
            Builtin::Idle,
            Builtin::Running,
            Builtin::Held,
        ],
    )
}

/// True when the only resources of `e` are `Perm` and `Value` (locations) and predicate
/// instances: what a heap function's frame can read as "unchanged" (`Eval::unchanged_in`).
pub fn only_locations_and_instances(e: &Expr) -> bool {
    !uses_builtin(
        e,
        &[
            Builtin::PointsTo,
            Builtin::Matrix,
            Builtin::Idle,
            Builtin::Running,
            Builtin::Held,
        ],
    )
}

fn uses_builtin(e: &Expr, ops: &[Builtin]) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if let ExprKind::Builtin { op, .. } = &x.kind {
            found = found || ops.contains(op);
        }
    });
    found
}

/// A conjunct of `body` (through `**` and `&&` only) is `Perm(loc, write)` or
/// `PointsTo(loc, write, v)` (`write` or `1`).
fn holds_write_unconditionally(body: &Expr) -> bool {
    match &body.kind {
        ExprKind::Binary {
            op: BinaryOp::Star | BinaryOp::And,
            lhs,
            rhs,
        } => holds_write_unconditionally(lhs) || holds_write_unconditionally(rhs),
        ExprKind::Builtin {
            op: Builtin::Perm | Builtin::PointsTo,
            args,
        } if args.len() >= 2 => match &args[1].kind {
            ExprKind::PermLit(PermLit::Write) => true,
            ExprKind::IntLit(n) => n.to_string() == "1",
            _ => false,
        },
        _ => false,
    }
}

/// `Perm(a[*], p)` (also `PointsTo`, `Value`) as the quantified permission it stands for:
/// `(\forall* int i; 0 <= i && i < a.length; Perm(a[i], p))`, the binder a name no source can
/// write. `None` for any other atom.
pub(super) fn every_cell(op: Builtin, args: &[Expr]) -> Option<Expr> {
    if !matches!(op, Builtin::Perm | Builtin::PointsTo | Builtin::Value) {
        return None;
    }
    let (first, rest) = args.split_first()?;
    let ExprKind::Index { base, index } = &first.peel_triggers().kind else {
        return None;
    };
    if !matches!(index.kind, ExprKind::AllIndices) {
        return None;
    }
    let s = first.span;
    let i = "cell'";
    let cell = syn::index((**base).clone(), Expr::name(i, index.span), s);
    let mut atom_args = vec![cell];
    atom_args.extend(rest.iter().cloned());
    let in_range = syn::and(
        syn::bin(BinaryOp::Le, syn::int(0, s), Expr::name(i, s), s),
        syn::bin(
            BinaryOp::Lt,
            Expr::name(i, s),
            syn::length((**base).clone(), s),
            s,
        ),
        s,
    );
    let atom = Expr {
        kind: ExprKind::Builtin {
            op,
            args: atom_args,
        },
        span: s,
    };
    Some(syn::forall(
        QuantifierKind::ForallStar,
        &[i],
        in_range,
        atom,
        s,
    ))
}

/// Whether `e` applies an abstract predicate, outside the instance an `unfolding` names (that
/// one is only read: the value is what is asserted).
pub fn applies_predicate(e: &Expr, program: &super::program::ProgramInfo<'_>) -> bool {
    match &e.kind {
        ExprKind::Unfolding { body, .. } => applies_predicate(body, program),
        ExprKind::Call { name, .. }
            if inline::abstract_predicate(program, &name.name).is_some() =>
        {
            true
        }
        _ => {
            let mut found = false;
            e.for_each_child(&mut |c| found = found || applies_predicate(c, program));
            found
        }
    }
}

struct Walker<'w, 'a> {
    prover: &'w mut dyn Prover,
    eval: &'w mut Eval<'a>,
    mask: Mask,
    mode: Mode,
    /// Heap kinds of the locations an exact amount was exhaled from.
    removed: Vec<HeapKind>,
    /// The region's iterators: name, and number of values (≥ 0). They are the first binders
    /// and the first guards of `eval` while walking.
    region: Vec<(String, Int)>,
    /// Names in the walker-level guards above the current atom.
    guard_names: Vec<BTreeSet<String>>,
    /// Names of the `\forall*` binders above the current atom, outermost first (the binders
    /// of `eval` after the region's).
    binder_names: Vec<String>,
    /// The `\let`s and binders above the current atom: every decision of whether a part of
    /// the assertion depends on an iterator or a binder asks it, so a `\let k = tid` cannot
    /// hide the thread id and a `\let tid = 0` does not fake it.
    scope: LetScope,
    mark: (usize, usize, usize),
    /// Inhale assumes at most one permission per location ([`inhale_unbounded`] does not).
    bounded: bool,
}

impl<'w, 'a> Walker<'w, 'a> {
    fn new(
        prover: &'w mut dyn Prover,
        eval: &'w mut Eval<'a>,
        mask: Mask,
        mode: Mode,
        region: &[RegionIter],
    ) -> Walker<'w, 'a> {
        let mark = eval.mark();
        assert_eq!(
            mark,
            (0, 0, 0),
            "assertions are walked from the top of an expression"
        );
        if mode == Mode::Inhale {
            eval.mask = Some(mask.clone());
        }
        let mut iters = Vec::new();
        for it in region {
            let t = eval.bind_quantified(&it.name);
            eval.push_guard(Bool::and(&[it.lo.le(&t), t.lt(&it.hi)]));
            let zero = Int::from_i64(0);
            let size = Int::sub(&[it.hi.clone(), it.lo.clone()]);
            iters.push((it.name.clone(), size.lt(&zero).ite(&zero, &size)));
        }
        Walker {
            prover,
            eval,
            mask,
            mode,
            removed: Vec::new(),
            region: iters,
            guard_names: Vec::new(),
            binder_names: Vec::new(),
            scope: LetScope::default(),
            mark,
            bounded: true,
        }
    }

    fn finish(&mut self) {
        self.eval.restore(self.mark);
    }

    fn flush(&mut self) {
        for a in self.eval.take_axioms() {
            self.prover.assume(a);
        }
        for c in std::mem::take(&mut self.eval.checks) {
            self.prover.check(c);
        }
    }

    /// [`Walker::walk`] after expanding inline predicates (`inline.rs`).
    fn walk_expanded(&mut self, e: &Expr) -> Result<(), EncodeError> {
        match self.eval.decls.program.and_then(|p| inline::expand(e, p)) {
            Some(expanded) => self.walk(&expanded),
            None => self.walk(e),
        }
    }

    /// Whether `e` applies an (abstract) predicate: an instance is a resource, not a value.
    fn has_predicate(&self, e: &Expr) -> bool {
        let Some(program) = self.eval.decls.program else {
            return false;
        };
        applies_predicate(e, program)
    }

    fn walk(&mut self, e: &Expr) -> Result<(), EncodeError> {
        if is_pure(e) && !self.has_predicate(e) {
            return self.pure_atom(e);
        }
        if let ExprKind::Builtin { op, args } = &e.kind {
            if let Some(quantified) = every_cell(*op, args) {
                return self.walk(&quantified);
            }
        }
        match &e.kind {
            ExprKind::Binary {
                op: BinaryOp::And | BinaryOp::Star,
                lhs,
                rhs,
            } => {
                self.walk(lhs)?;
                self.walk(rhs)
            }
            ExprKind::Binary {
                op: BinaryOp::Implies,
                lhs,
                rhs,
            } => {
                let c = self.eval.bool(lhs)?;
                self.flush();
                self.guarded(c, lhs, |w| w.walk(rhs))
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.eval.bool(cond)?;
                self.flush();
                self.guarded(c.clone(), cond, |w| w.walk(then_expr))?;
                self.guarded(c.not(), cond, |w| w.walk(else_expr))
            }
            ExprKind::Quantifier(q)
                if matches!(q.kind, QuantifierKind::ForallStar | QuantifierKind::Forall) =>
            {
                let mark = self.eval.mark();
                let depth = (
                    self.guard_names.len(),
                    self.binder_names.len(),
                    self.scope.len(),
                );
                let r = self.quantified(q);
                self.eval.restore(mark);
                self.guard_names.truncate(depth.0);
                self.binder_names.truncate(depth.1);
                self.scope.truncate(depth.2);
                r
            }
            ExprKind::Let {
                ty,
                name,
                value,
                body,
            } => {
                let v = self.eval.let_value(ty, name, value)?;
                self.flush();
                let mark = self.eval.mark();
                let depth = self.scope.len();
                self.eval.bind(&name.name, v);
                self.scope.push_let(&name.name, value);
                let r = self.walk(body);
                self.scope.truncate(depth);
                self.eval.restore(mark);
                r
            }
            ExprKind::Trigger(inner, _) => self.walk(inner),
            ExprKind::Builtin {
                op: Builtin::Perm,
                args,
            } if args.len() == 2 => self.acc(e, &args[0], Some(&args[1]), None),
            // `Value(loc)`: read-only access, Viper's `acc(loc, wildcard)` — as `Perm(loc, read)`.
            ExprKind::Builtin {
                op: Builtin::Value,
                args,
            } if args.len() == 1 => {
                let read = Expr {
                    kind: ExprKind::PermLit(PermLit::Read),
                    span: e.span,
                };
                self.acc(e, &args[0], Some(&read), None)
            }
            ExprKind::Builtin {
                op: Builtin::AutoValue,
                args,
            } if args.len() == 1 => self.auto_value(e, &args[0]),
            ExprKind::Builtin {
                op: Builtin::PointsTo,
                args,
            } if args.len() == 3 => {
                self.acc(e, &args[0], Some(&args[1]), None)?;
                let cell = self.eval.value(&args[0])?;
                let v = self.eval.value(&args[2])?;
                let v = self.eval.settle(v, Some(&cell.ty), args[2].span)?;
                self.flush();
                let eq = cell.term.as_dynamic().eq(v.term.as_dynamic());
                self.pure_term(eq, e)
            }
            ExprKind::Builtin {
                op: Builtin::Matrix,
                args,
            } if args.len() == 3 => self.matrix(e, &args[0], &args[1], &args[2]),
            ExprKind::Builtin {
                op: op @ (Builtin::Idle | Builtin::Running | Builtin::Held),
                args,
            } if args.len() == 1 => {
                let (t, _) = self.eval.reference(&args[0])?;
                self.flush();
                let (r, i) = self.eval.decls.world.token_location(&t, *op);
                self.acc_at(e, e, (r, i, Held::Token), Amount::Exact(real(1)))
                    .map(drop)
            }
            ExprKind::Scaled { .. } => Err(unsupported(
                "a scaled predicate `[p]P(..)` of a predicate that is not inline (or of a thread \
                 or lock token)",
                e.span,
            )),
            _ => match inline::predicate_call(e) {
                Some((receiver, name, args)) => {
                    let at = self.predicate_instance(receiver, name, args, e.span)?;
                    self.lower_than_parent(&at);
                    if let Mode::Exhale(_) = self.mode {
                        // Whoever receives the instance may unfold it and write what it
                        // holds, of any kind: the heap kept under it (`fold` forgets
                        // nothing) is forgotten wherever no permission is left.
                        HEAP_KINDS.into_iter().for_each(|kind| self.forget(kind));
                    }
                    let before = self.mask.amount(&at.0, &at.1);
                    self.acc(e, e, None, Some(at.clone()))?;
                    self.bound_instance(name, &before);
                    Ok(())
                }
                None => Err(unsupported(
                    "this form of resource assertion (permissions under `||` or `\\exists` are \
                     not encoded yet)",
                    e.span,
                )),
            },
        }
    }

    /// `\matrix(m, rows, cols)`: `m` is a non-null array of `rows` rows, a wildcard read
    /// permission on each row reference `m[x]`, each row non-null of length `cols`, and the
    /// rows pairwise distinct (what makes `Perm(m[i][j], p)` over `i` and `j` injective).
    /// Distinctness is inhaled as a fresh inverse `row(m[x]) == x` (one instantiation per
    /// row, never a pairwise quantifier) and exhaled as the pairwise check. Inhaled too: no
    /// row is `m` itself (their types differ), which spares Z3 from deriving it through the
    /// permission bound whenever a cell permission's inverse lands on `m`.
    fn matrix(&mut self, e: &Expr, m: &Expr, rows: &Expr, cols: &Expr) -> Result<(), EncodeError> {
        let s = e.span;
        // Binder names no source can write (`'` is not an identifier character).
        let (x, y) = ("row'", "other row'");
        let row = |v: &str| syn::index(m.clone(), Expr::name(v, s), s);
        let in_rows = |v: &str| {
            syn::and(
                syn::bin(BinaryOp::Le, syn::int(0, s), Expr::name(v, s), s),
                syn::bin(BinaryOp::Lt, Expr::name(v, s), rows.clone(), s),
                s,
            )
        };
        let shape = syn::and(
            syn::bin(BinaryOp::Neq, m.clone(), syn::null(s), s),
            syn::bin(BinaryOp::Eq, syn::length(m.clone(), s), rows.clone(), s),
            s,
        );
        let row_perms = syn::forall(
            QuantifierKind::ForallStar,
            &[x],
            in_rows(x),
            syn::perm(row(x), syn::read(s), s),
            s,
        );
        let row_shape = syn::forall(
            QuantifierKind::Forall,
            &[x],
            in_rows(x),
            syn::and(
                syn::bin(BinaryOp::Neq, row(x), syn::null(s), s),
                syn::bin(BinaryOp::Eq, syn::length(row(x), s), cols.clone(), s),
                s,
            ),
            s,
        );
        for part in [&shape, &row_perms, &row_shape] {
            self.walk(part)?;
        }
        match self.mode {
            Mode::Exhale(_) => {
                let distinct = syn::forall(
                    QuantifierKind::Forall,
                    &[x, y],
                    syn::and(
                        syn::and(in_rows(x), in_rows(y), s),
                        syn::bin(BinaryOp::Neq, Expr::name(x, s), Expr::name(y, s), s),
                        s,
                    ),
                    syn::bin(BinaryOp::Neq, row(x), row(y), s),
                    s,
                );
                self.walk(&distinct)
            }
            Mode::Inhale => {
                let rows_n = self.eval.int(rows)?;
                self.flush();
                let outer_bound = self.eval.bound().to_vec();
                let mut outer_guard = self.eval.guard();
                // Under a region only, and not mentioning its iterators: the fact holds once
                // some thread exists. Stated so, it needs no outer quantifier (one Z3 could
                // never instantiate: its variables would be in no pattern).
                let mut names = BTreeSet::new();
                self.scope.names(e, &mut names);
                let n = self.region.len();
                let flat = outer_bound.len() == n
                    && self.eval.guards().len() == n
                    && !self.region.iter().any(|(it, _)| names.contains(it));
                if flat {
                    outer_guard = Bool::and(
                        &self
                            .region
                            .iter()
                            .map(|(_, size)| size.gt(Int::from_i64(0)))
                            .collect::<Vec<_>>(),
                    );
                }
                let mark = self.eval.mark();
                let k = self.eval.bind_quantified(x);
                self.eval
                    .push_guard(Bool::and(&[Int::from_i64(0).le(&k), k.lt(&rows_n)]));
                let mut read = (|| {
                    let (reference, row_ty) = self.eval.reference(&row(x))?;
                    let (outer, _) = self.eval.reference(m)?;
                    Ok::<_, EncodeError>((reference, row_ty, outer))
                })();
                // A heap that is a join or a havoc (an `ite`, a lambda) cannot be read in the
                // pattern: the rows are read through a name for it instead (equal to it, so
                // E-matching still finds every row read of the heap itself).
                let mut named = false;
                if let (Ok((reference, ..)), Some(heap)) = (&read, self.eval.heap.clone()) {
                    if !pattern_safe(reference) {
                        let (renamed, fact) = heap.named(HeapKind::Ref);
                        self.prover.assume(fact);
                        self.eval.heap = Some(renamed);
                        read = (|| {
                            let (reference, row_ty) = self.eval.reference(&row(x))?;
                            let (outer, _) = self.eval.reference(m)?;
                            Ok::<_, EncodeError>((reference, row_ty, outer))
                        })();
                        self.eval.heap = Some(heap);
                        named = true;
                    }
                }
                self.eval.restore(mark);
                let (reference, row_ty, outer) = read?;
                // Nor any variable of another reference type (`b` of a `\matrix(b, ..)`
                // beside, an object): without it, two matrices' contracts left Z3 unable to
                // tell a row of one from the other matrix. (Built here, before the inverse is
                // declared: Z3's search on `matrix_scale.pvl` depends on the terms' order.)
                let mut distinct = vec![reference.eq(&outer).not()];
                for v in self.eval.store.values() {
                    match &v.term {
                        Term::Ref(other) if v.ty.is_ref() && v.ty != Ty::Null && v.ty != row_ty => {
                            distinct.push(reference.eq(other).not())
                        }
                        _ => {}
                    }
                }
                self.flush();
                let id = super::solver::declaration_id();
                let w = self.eval.decls.world;
                let inverse = Rc::new(FuncDecl::new(
                    format!("row{id}"),
                    &[&w.ref_sort],
                    &Z3Sort::int(),
                ));
                if let Some(heap) = self.eval.heap.as_ref().filter(|_| flat && !named) {
                    w.register_matrix(&outer, heap.array(HeapKind::Ref), inverse.clone());
                }
                let back = inverse
                    .apply(&[&reference as &dyn Ast])
                    .as_int()
                    .expect("int");
                // A row (a `T[]`) is never the matrix (a `T[][]`) itself. Triggered by the
                // row read `m[x]`: that is the term the permission updates' inverses build.
                distinct.push(back.eq(&k));
                let body = Bool::and(&[outer_guard, Int::from_i64(0).le(&k), k.lt(&rows_n)])
                    .implies(Bool::and(&distinct));
                let pattern = z3::Pattern::new(&[&reference as &dyn Ast]);
                let fact = z3::ast::forall_const(&[&k as &dyn Ast], &[&pattern], &body);
                if flat {
                    self.prover.assume(fact);
                } else {
                    self.prover.assume(close(&outer_bound, &fact));
                }
                Ok(())
            }
        }
    }

    /// The location of the predicate instance `receiver.name(args)` (an abstract predicate:
    /// inline ones were expanded), with `this` (the receiver, or the current `this`) first for
    /// a predicate of a class. See `World::predicate_location`.
    fn predicate_instance(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        args: &[Expr],
        span: crate::syntax::Span,
    ) -> Result<(Dynamic, Int), EncodeError> {
        let (r, i, facts) = self.eval.predicate_location(receiver, name, args, span)?;
        self.flush();
        for f in facts {
            self.prover.assume(f);
        }
        Ok((r, i))
    }

    /// After inhaling an instance of `name` at `at`: if the predicate's body holds a write
    /// permission unconditionally, no state holds more than one of the instance (unfolding
    /// `q` of it gives `q` of that permission), which spares Z3 the case of two held
    /// instances that are one (`a.list() ** b.list()` with `a == b`). Not in a function's
    /// own check ([`inhale_unbounded`]), nor under a quantifier.
    fn bound_instance(&mut self, name: &str, before: &Real) {
        if self.mode != Mode::Inhale || !self.bounded || !self.eval.bound().is_empty() {
            return;
        }
        let Some(program) = self.eval.decls.program else {
            return;
        };
        let Some((_, Some(body))) = inline::abstract_predicate(program, name) else {
            return;
        };
        if !holds_write_unconditionally(body) {
            return;
        }
        // A whole instance is inhaled (where the guards hold): none may have been held before.
        let fact = Bool::and(self.eval.guards()).implies(before.le(real(0)));
        self.prover.assume(fact);
    }

    /// After an exhale, the heap of `kind` may be written by others where no permission is
    /// left ([`exhale`]'s second result).
    fn forget(&mut self, kind: HeapKind) {
        if !self.removed.contains(&kind) {
            self.removed.push(kind);
        }
    }

    /// Inhaling the body of an unfolded instance (`Eval::unfolding_parent`): the instance at
    /// `at`, inhaled on this path, is lower than it ([`World::depth`]). Only in a pure
    /// function's own check (`Eval::one_heap`), the one place the fact is needed (its
    /// recursion's measure) and sound; not under a quantifier (no fact then: fewer facts are
    /// always sound).
    fn lower_than_parent(&mut self, at: &(Dynamic, Int)) {
        if !self.eval.one_heap {
            return;
        }
        let (Mode::Inhale, Some((pr, pi))) = (&self.mode, &self.eval.unfolding_parent) else {
            return;
        };
        if !self.eval.bound().is_empty() {
            return;
        }
        let world = self.eval.decls.world;
        let (child, parent) = (world.depth(&at.0, &at.1), world.depth(pr, pi));
        let lower = Bool::and(&[child.ge(Int::from_i64(0)), child.lt(&parent)]);
        let fact = Bool::and(self.eval.guards()).implies(&lower);
        self.prover.assume(fact);
    }

    fn guarded(
        &mut self,
        c: Bool,
        source: &Expr,
        f: impl FnOnce(&mut Self) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let mut ns = BTreeSet::new();
        self.scope.names(source, &mut ns);
        self.eval.push_guard(c);
        self.guard_names.push(ns);
        let r = f(self);
        self.guard_names.pop();
        self.eval.pop_guard();
        r
    }

    fn quantified(&mut self, q: &crate::syntax::Quantifier) -> Result<(), EncodeError> {
        let mut ns = BTreeSet::new();
        for b in &q.binders {
            if b.ty.kind != TypeKind::Int {
                return Err(unsupported(
                    "a quantified permission over a binder that is not an `int`",
                    b.ty.span,
                ));
            }
            let range = match &b.range {
                Some((lo, hi)) => {
                    self.scope.names(lo, &mut ns);
                    self.scope.names(hi, &mut ns);
                    let r = (self.eval.int(lo)?, self.eval.int(hi)?);
                    Some(r)
                }
                None => None,
            };
            self.flush();
            let x = self.eval.bind_quantified(&b.name.name);
            self.binder_names.push(b.name.name.clone());
            self.scope.push_binder(&b.name.name);
            if let Some((lo, hi)) = range {
                self.eval.push_guard(Bool::and(&[lo.le(&x), x.lt(&hi)]));
            }
        }
        if let Some(c) = &q.cond {
            self.scope.names(c, &mut ns);
            let c = self.eval.bool(c)?;
            self.flush();
            self.eval.push_guard(c);
        }
        self.guard_names.push(ns);
        self.walk(&q.body)
    }

    fn pure_atom(&mut self, e: &Expr) -> Result<(), EncodeError> {
        let mark = self.eval.mark();
        // Inhaled facts flat (see `Eval::open_forall`); checked goals as written.
        let opened = match self.mode {
            Mode::Inhale => self.eval.open_forall(e)?,
            Mode::Exhale(_) => None,
        };
        let b = match opened {
            Some(body) => body,
            None => self.eval.bool(e)?,
        };
        self.flush();
        // A flat `∀` inhaled over tiles: also its instance at the tile of each cell.
        let tiled = match self.mode {
            Mode::Inhale => tiles::instances(self.eval.bound(), self.eval.guards(), &b),
            Mode::Exhale(_) => Vec::new(),
        };
        let done = self.pure_term(b, e);
        for fact in tiled {
            self.prover.assume(fact);
        }
        self.eval.restore(mark);
        done
    }

    fn pure_term(&mut self, b: Bool, e: &Expr) -> Result<(), EncodeError> {
        let goal = self.eval.close(&b);
        match self.mode {
            Mode::Inhale => self.prover.assume(goal),
            Mode::Exhale(kind) => self.prover.check(Check {
                goal,
                kind,
                span: e.span,
                note: None,
            }),
        }
        Ok(())
    }

    /// `AutoValue(loc)`: as [`Borrowed`] says where it is walked. Its amount is one term for
    /// the whole contract, so it may not be quantified over (a `\forall*` binder, a par
    /// block's threads); `check` refuses it there and everywhere outside a routine's contract.
    fn auto_value(&mut self, atom: &Expr, loc: &Expr) -> Result<(), EncodeError> {
        if matches!(self.eval.borrowed, Borrowed::AsValue) {
            let read = Expr {
                kind: ExprKind::PermLit(PermLit::Read),
                span: atom.span,
            };
            return self.acc(atom, loc, Some(&read), None);
        }
        if !self.binder_names.is_empty() || !self.region.is_empty() {
            return Err(unsupported("`AutoValue` under a quantifier", atom.span));
        }
        let key = print_expr(loc.peel_triggers());
        let returned =
            match &self.eval.borrowed {
                Borrowed::Lend(taken) if taken.contains_key(&key) => {
                    return Err(unsupported(
                        "a second `AutoValue` of the same location in one precondition",
                        atom.span,
                    ))
                }
                Borrowed::Return(taken) => match taken.get(&key) {
                    Some(amount) => Some(amount.clone()),
                    None => return Err(unsupported(
                        "`AutoValue` in a postcondition whose precondition does not borrow the \
                         location",
                        atom.span,
                    )),
                },
                _ => None,
            };
        let place = self.place(loc.peel_triggers(), None)?;
        self.flush();
        let amount = returned.clone().map_or(Amount::Wildcard, Amount::Exact);
        let moved = self.acc_at(atom, loc.peel_triggers(), place, amount)?;
        if let (Borrowed::Lend(taken), None) = (&mut self.eval.borrowed, returned) {
            taken.insert(key, moved);
        }
        Ok(())
    }

    /// A permission atom `Perm(loc, amount)`.
    ///
    /// With `at`, the location is given (a predicate instance, whose atom is `loc`): it holds no
    /// heap value and exists by construction.
    fn acc(
        &mut self,
        atom: &Expr,
        loc: &Expr,
        amount: Option<&Expr>,
        at: Option<(Dynamic, Int)>,
    ) -> Result<(), EncodeError> {
        let loc = loc.peel_triggers();
        let place = self.place(loc, at)?;
        let amount = match amount.map(|a| &a.kind) {
            None | Some(ExprKind::PermLit(PermLit::Write)) => Amount::Exact(real(1)),
            Some(ExprKind::PermLit(PermLit::Read)) => Amount::Wildcard,
            Some(_) => Amount::Exact(self.eval.real(amount.expect("matched Some"))?),
        };
        self.flush();
        self.acc_at(atom, loc, place, amount).map(drop)
    }

    /// The location of a permission atom: reference, index and the type of what it holds
    /// (`None` for a predicate instance, given as `at`).
    fn place(
        &mut self,
        loc: &Expr,
        at: Option<(Dynamic, Int)>,
    ) -> Result<(Dynamic, Int, Held), EncodeError> {
        Ok(match at {
            Some((r, i)) => (r, i, Held::Instance),
            None => {
                let (r, i, ty) = self.eval.permission_location(loc)?;
                (r, i, Held::Value(ty))
            }
        })
    }

    /// [`Walker::acc`] with its location and amount evaluated; returns the amount moved (a
    /// wildcard's fresh constant, or the exact amount scaled by the threads that do not
    /// mention the atom).
    fn acc_at(
        &mut self,
        atom: &Expr,
        loc: &Expr,
        (r, i, holds): (Dynamic, Int, Held),
        mut amount: Amount,
    ) -> Result<Real, EncodeError> {
        let is_cell = matches!(loc.kind, ExprKind::Index { .. });

        // Binders and guards of this atom: the region iterators it mentions, then the
        // walker's own.
        let mut mentioned = BTreeSet::new();
        self.scope.names(atom, &mut mentioned);
        for ns in &self.guard_names {
            mentioned.extend(ns.iter().cloned());
        }
        let n = self.region.len();
        let all_bound = self.eval.bound().to_vec();
        let all_guards = self.eval.guards().to_vec();
        let mut binders = Vec::new();
        let mut binder_names = Vec::new();
        let mut guards = Vec::new();
        let mut scale: Vec<Int> = Vec::new();
        for (k, (name, size)) in self.region.iter().enumerate() {
            if mentioned.contains(name) {
                binders.push(all_bound[k].clone());
                binder_names.push(name.clone());
                guards.push(all_guards[k].clone());
            } else {
                scale.push(size.clone());
            }
        }
        binders.extend(all_bound[n..].iter().cloned());
        binder_names.extend(self.binder_names.iter().cloned());
        guards.extend(all_guards[n..].iter().cloned());
        // A binder its guard defines (a tile's thread `t` in `i / T == t`) is substituted
        // away; not one the location mentions, whose shape is analysed by name below.
        let (r, i) = if one_point::has_candidate(&binders, &guards) {
            let movable: Vec<bool> = binder_names
                .iter()
                .map(|x| !self.scope.mentions(loc, x))
                .collect();
            let mut uses = vec![r, Dynamic::from_ast(&i)];
            if let Amount::Exact(p) = &amount {
                uses.push(Dynamic::from_ast(p));
            }
            let kept = one_point::eliminate(&mut binders, &movable, &mut guards, &mut uses);
            let mut kept = kept.into_iter();
            binder_names.retain(|_| kept.next().unwrap_or(true));
            if let (Amount::Exact(p), Some(q)) = (&mut amount, uses.get(2)) {
                *p = q.as_real().expect("an amount");
            }
            (uses[0].clone(), uses[1].as_int().expect("an index"))
        } else {
            (r, i)
        };
        let mut guard = Bool::and(&guards);
        // Some thread exists: each size positive (linear, unlike their product).
        let nonempty = Bool::and(
            &scale
                .iter()
                .map(|s| s.gt(Int::from_i64(0)))
                .collect::<Vec<_>>(),
        );
        let scale = if scale.is_empty() {
            None
        } else {
            Some(Int::mul(&scale))
        };

        let wildcard = matches!(amount, Amount::Wildcard);
        let p = match amount {
            Amount::Exact(p) => {
                let p = match &scale {
                    Some(s) => Real::mul(&[p, Real::from_int(s)]),
                    None => p,
                };
                self.prover.check(Check {
                    goal: close(&binders, &guard.implies(p.ge(real(0)))),
                    kind: ObligationKind::NegativePermission,
                    span: atom.span,
                    note: None,
                });
                p
            }
            Amount::Wildcard => {
                if scale.is_some() {
                    guard = Bool::and(&[guard, nonempty]);
                }
                let w = Real::fresh_const("wildcard");
                self.prover.assume(w.gt(real(0)));
                if let Mode::Exhale(_) = self.mode {
                    // Sufficient: something is held; the wildcard is less than that.
                    let held = self.mask.amount(&r, &i);
                    self.prover.check(Check {
                        goal: close(&binders, &guard.implies(held.gt(real(0)))),
                        kind: ObligationKind::InsufficientPermission,
                        span: atom.span,
                        note: None,
                    });
                    self.prover
                        .assume(close(&binders, &guard.implies(w.lt(&held))));
                }
                w
            }
        };
        let positive = Bool::and(&[guard.clone(), p.gt(real(0))]);
        // A single binder with an index linear in it (`a[2 * t + 1]`) has an exact inverse:
        // no inverse functions, and injective by construction.
        // One binder whose value the index determines linearly (`a[2 * t + 1]`, `m[i][j]` for
        // `j`): it is solved exactly; only the others need inverse functions. With no other
        // binder the location is injective by construction.
        let linear = match &loc.kind {
            ExprKind::Index { base, index } => {
                binder_names.iter().enumerate().find_map(|(k, x)| {
                    let others_in_index = binder_names
                        .iter()
                        .any(|y| y != x && self.scope.mentions(index, y));
                    if self.scope.mentions(base, x) || others_in_index {
                        return None;
                    }
                    linear_coefficient(index, x, &self.scope)
                        .filter(|c| *c != 0)
                        .map(|c| (k, c))
                })
            }
            _ => None,
        };
        // Two binders laid out row-major, `a[c * row + col + e]`: solved by `div` and `mod`
        // for a constant c > 1; for a row length `c` that is a term free of the binders
        // (`m[N * i + j]`, what matrix linearisation writes) by inverse functions, since Z3
        // cannot divide by a symbol. Either way the layout's side condition is checked where
        // the atom is (see `check_row_major`).
        let row_major = match (&loc.kind, &binder_names[..]) {
            (ExprKind::Index { base, index }, [x, y])
                if !self.scope.mentions(base, x) && !self.scope.mentions(base, y) =>
            {
                let symbolic = |row: usize, col: usize| {
                    let zero = Int::from_i64(0);
                    let one = Int::from_i64(1);
                    let at = |r: &Int| i.substitute(&[(&binders[row], r), (&binders[col], &zero)]);
                    RowMajor {
                        row,
                        col,
                        width: RowWidth::Symbolic(Int::sub(&[at(&one), at(&zero)]).simplify()),
                    }
                };
                match (
                    linear_coefficient(index, x, &self.scope),
                    linear_coefficient(index, y, &self.scope),
                ) {
                    (Some(c), Some(1)) if c > 1 => Some(RowMajor {
                        row: 0,
                        col: 1,
                        width: RowWidth::Literal(c),
                    }),
                    (Some(1), Some(c)) if c > 1 => Some(RowMajor {
                        row: 1,
                        col: 0,
                        width: RowWidth::Literal(c),
                    }),
                    (None, Some(1)) if affine_with_symbolic_slope(index, x, y, &self.scope) => {
                        Some(symbolic(0, 1))
                    }
                    (Some(1), None) if affine_with_symbolic_slope(index, y, x, &self.scope) => {
                        Some(symbolic(1, 0))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let linear = if row_major.is_some() { None } else { linear };
        // `m[x][col]` with `x` a binder and `m` an inhaled `\matrix` (same reference heap):
        // `x` is solved by that matrix's row inverse, no inverse function of its own.
        let matrix_row = match (&loc.kind, &row_major) {
            (ExprKind::Index { base, index: col }, None) => match &base.kind {
                ExprKind::Index {
                    base: outer,
                    index: row,
                } => match &row.kind {
                    ExprKind::Name(id)
                        if !self.scope.binds_let(&id.name)
                            && !self.scope.mentions(outer, &id.name)
                            && !self.scope.mentions(col, &id.name) =>
                    {
                        binder_names
                            .iter()
                            .position(|b| *b == id.name)
                            .filter(|k| linear.is_none_or(|(lk, _)| lk != *k))
                            .and_then(|k| {
                                let saved = std::mem::replace(&mut self.eval.definedness, false);
                                let outer = self.eval.reference(outer).ok();
                                self.eval.definedness = saved;
                                self.eval.checks.clear();
                                let heap = self.eval.heap.as_ref()?;
                                let (m, _) = outer?;
                                let f = w_matrix_inverse(self.eval, &m, heap)?;
                                Some((k, f))
                            })
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        let injective_by_construction = linear.is_some() && binders.len() == 1;
        if let Some(layout) = &row_major {
            self.check_row_major(&binders, layout, &positive, &i, atom);
        } else if !binders.is_empty() && !injective_by_construction {
            self.check_injective(&binders, &positive, &r, &i, atom);
        }
        let held = self.mask.amount(&r, &i);
        let w = self.eval.decls.world;
        match self.mode {
            Mode::Exhale(_) if !wildcard => {
                let gives_back = matches!(self.eval.borrowed, Borrowed::Return(_))
                    && matches!(
                        &atom.kind,
                        ExprKind::Builtin {
                            op: Builtin::AutoValue,
                            ..
                        }
                    );
                let note = gives_back.then(|| {
                    "`AutoValue` gives back, when the method ends, the whole amount its \
                     precondition borrowed"
                        .to_string()
                });
                self.prover.check(Check {
                    goal: close(&binders, &guard.implies(held.ge(&p))),
                    kind: ObligationKind::InsufficientPermission,
                    span: atom.span,
                    note,
                });
            }
            Mode::Exhale(_) => {}
            // A cell exists (its definedness was checked where it was written). A field's
            // receiver was not checked: a positive permission makes it non-null (Viper's
            // reading of `acc(x.f, p)`); no permission is held at null, so an exhale of one
            // fails for want of permission.
            Mode::Inhale if matches!(holds, Held::Value(_)) && is_cell => {
                let exists = [
                    r.eq(&w.null).not(),
                    i.ge(Int::from_i64(0)),
                    i.lt(w.len_of(&r)),
                ];
                self.prover
                    .assume(close(&binders, &guard.implies(Bool::and(&exists))));
            }
            Mode::Inhale if matches!(holds, Held::Value(_) | Held::Token) => {
                self.prover
                    .assume(close(&binders, &positive.implies(r.eq(&w.null).not())));
            }
            Mode::Inhale => {}
        }
        let add = self.mode == Mode::Inhale;
        self.mask = self.update(
            &binders, linear, row_major, matrix_row, &positive, &r, &i, &p, add,
        );
        match self.mode {
            Mode::Exhale(_) => {
                if let Some(kind) = holds.heap_kind().filter(|_| !wildcard) {
                    self.forget(kind);
                }
            }
            Mode::Inhale => {
                // Heap locations hold at most one full permission; predicate instances have
                // no such bound (as in Viper: `fold` of a predicate with a pure body may be
                // repeated).
                if matches!(holds, Held::Value(_)) && self.bounded {
                    let now = self.mask.amount(&r, &i);
                    self.prover
                        .assume(close(&binders, &positive.implies(now.le(real(1)))));
                }
                self.eval.mask = Some(self.mask.clone());
            }
        }
        Ok(p)
    }

    /// The side condition of a row-major layout, wherever the amount is positive. For a
    /// literal row length, the `div`/`mod` solution of the index gives back the binders (so
    /// the layout is also injective); it fails where a column may leave `0 .. c`, even in a
    /// layout that is injective otherwise: the mask update relies on the solution. For a
    /// symbolic row length `c`, the column stays within `0 .. c`: then `c * row + col + e`
    /// is injective (two locations with rows r ≠ r' differ by at least `c` minus the columns'
    /// difference, which is below `c`), a fact of arithmetic that Z3 cannot derive among
    /// products of symbols, and it is what makes `update`'s second inverse axiom consistent.
    fn check_row_major(
        &mut self,
        xs: &[Int],
        layout: &RowMajor,
        positive: &Bool,
        i: &Int,
        atom: &Expr,
    ) {
        // A literal width's solution is kept (`_solution`) to the end of the function: freed
        // Z3 terms give their ids to the next ones, and Z3's search follows the ids (freed
        // before the obligation was built, two unrelated proofs became 3 to 40 times slower).
        let (goal, c, _solution) = match &layout.width {
            RowWidth::Literal(c) => {
                let (solved_row, solved_col) = row_major_solution(xs, *c, i, i);
                let exact = Bool::and(&[
                    solved_row.eq(&xs[layout.row]),
                    solved_col.eq(&xs[layout.col]),
                ]);
                (exact, c.to_string(), Some((solved_row, solved_col)))
            }
            RowWidth::Symbolic(c) => {
                let col = &xs[layout.col];
                let within = Bool::and(&[col.ge(Int::from_i64(0)), col.lt(c)]);
                (within, "the row length".to_string(), None)
            }
        };
        self.prover.check(Check {
            goal: close(xs, &positive.implies(goal)),
            kind: ObligationKind::NotInjective,
            span: atom.span,
            note: Some(format!(
                "the index is read as row-major, `row * {c} + col`: the column must stay within 0 .. {c}"
            )),
        });
    }

    /// Two different values of the binders, both with a positive amount, name two different
    /// locations. Checked on inhale too, as VerCors does (its suite expects `notInjective`
    /// for write permissions to the field of every element of a sequence of objects): a
    /// precondition holding a field twice would otherwise hold in no state at all.
    fn check_injective(&mut self, xs: &[Int], positive: &Bool, r: &Dynamic, i: &Int, atom: &Expr) {
        let ys: Vec<Int> = xs.iter().map(|_| Int::fresh_const("other")).collect();
        let pairs: Vec<(&Int, &Int)> = xs.iter().zip(&ys).collect();
        let positive2 = positive.substitute(&pairs);
        let r2 = r.substitute(&pairs);
        let i2 = i.substitute(&pairs);
        let differ = Bool::or(
            &xs.iter()
                .zip(&ys)
                .map(|(x, y)| x.eq(y).not())
                .collect::<Vec<_>>(),
        );
        let same_location = Bool::and(&[r.eq(&r2), i.eq(&i2)]);
        let all: Vec<Int> = xs.iter().chain(&ys).cloned().collect();
        let body = Bool::and(&[positive.clone(), positive2, differ]).implies(same_location.not());
        self.prover.check(Check {
            goal: close(&all, &body),
            kind: ObligationKind::NotInjective,
            span: atom.span,
            note: None,
        });
    }

    /// The mask with `p` added (or subtracted) at `(r, i)` for every value of `xs` where
    /// `positive` holds.
    ///
    /// Quantified: the new mask at `(R, K)` is computed from the binder values that name
    /// `(R, K)` — a linear binder solved from `K` (two row-major binders by `div`/`mod`), every
    /// other binder by an inverse function `inv(R, K)` with `inv(loc(xs)) = x` assumed where
    /// the atom holds. The update applies only where those values really name `(R, K)`
    /// (checked in the update itself), so the inverse functions are never trusted beyond that
    /// one axiom.
    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        xs: &[Int],
        linear: Option<(usize, i64)>,
        row_major: Option<RowMajor>,
        matrix_row: Option<(usize, Rc<FuncDecl>)>,
        positive: &Bool,
        r: &Dynamic,
        i: &Int,
        p: &Real,
        add: bool,
    ) -> Mask {
        let change = |old: Real, p: Real| {
            if add {
                Real::add(&[old, p])
            } else {
                Real::sub(&[old, p])
            }
        };
        if xs.is_empty() {
            let old = self.mask.amount(r, i);
            let new = positive.ite(&change(old.clone(), p.clone()), &old);
            return self.mask.set(r, i, &new);
        }
        let w = self.eval.decls.world;
        let rr = Dynamic::fresh_const("R", &w.ref_sort);
        let kk = Int::fresh_const("K");
        let zero = Int::from_i64(0);
        // The binder values naming (R, K), and conditions for them to exist.
        let mut solved: Vec<Int> = Vec::new();
        let mut conditions = Vec::new();
        // Whether the solution names (R, K)'s index by construction (one linear binder).
        let mut index_exact = false;
        if let Some(RowMajor {
            row,
            col,
            width: RowWidth::Literal(c),
        }) = row_major
        {
            let (solved_row, solved_col) = row_major_solution(xs, c, i, &kk);
            solved = vec![zero.clone(), zero.clone()];
            solved[row] = solved_row;
            solved[col] = solved_col;
        } else {
            let mut inv_at_loc = Vec::new();
            for (k, x) in xs.iter().enumerate() {
                if let Some((_, a)) = linear.filter(|(lk, _)| *lk == k) {
                    let offset = i.substitute(&[(x, &zero)]);
                    let a = Int::from_i64(a);
                    let diff = Int::sub(&[kk.clone(), offset]);
                    conditions.push(diff.modulo(&a).eq(&zero));
                    solved.push(diff.div(&a));
                    continue;
                }
                if let Some((_, f)) = matrix_row.as_ref().filter(|(mk, _)| *mk == k) {
                    solved.push(f.apply(&[&rr as &dyn Ast]).as_int().expect("int"));
                    continue;
                }
                let f = w.inverse_function(xs, k, positive, r, i);
                let at_loc = f
                    .apply(&[r as &dyn Ast, i as &dyn Ast])
                    .as_int()
                    .expect("int");
                inv_at_loc.push(at_loc.eq(x));
                solved.push(
                    f.apply(&[&rr as &dyn Ast, &kk as &dyn Ast])
                        .as_int()
                        .expect("int"),
                );
            }
            // The index is solved exactly only by a linear binder (whose equation is the
            // index); a matrix row inverse solves the reference, never the index.
            index_exact = inv_at_loc.is_empty() && linear.is_some();
            if !inv_at_loc.is_empty() {
                self.prover
                    .assume(close(xs, &positive.implies(Bool::and(&inv_at_loc))));
            }
        }
        let pairs: Vec<(&Int, &Int)> = xs.iter().zip(&solved).collect();
        conditions.push(r.substitute(&pairs).eq(&rr));
        conditions.push(positive.substitute(&pairs));
        if matches!(
            row_major,
            Some(RowMajor {
                width: RowWidth::Symbolic(_),
                ..
            })
        ) {
            // A symbolic row-major layout (its column checked within 0 .. c): where the
            // inverses name binders with a positive amount, they name (R, K). Consistent,
            // because `div`/`mod` by c are such inverses; assumed instead of tested in the
            // update, whose test would multiply the symbol c by an inverse function, a
            // product Z3 cannot relate to the index `c * row + col` it reads.
            let pattern = z3::Pattern::new(&[&solved[0] as &dyn Ast]);
            self.prover.assume(z3::ast::forall_const(
                &[&rr as &dyn Ast, &kk as &dyn Ast],
                &[&pattern],
                &Bool::and(&conditions).implies(i.substitute(&pairs).eq(&kk)),
            ));
        } else if !index_exact {
            conditions.push(i.substitute(&pairs).eq(&kk));
        }
        let hit = Bool::and(&conditions);
        let old = self.mask.amount(&rr, &kk);
        let body = hit.ite(&change(old.clone(), p.substitute(&pairs)), &old);
        let (array, fact) = define_array(w, &rr, &kk, &Dynamic::from_ast(&body));
        self.prover.assume(fact);
        Mask { array }
    }
}

/// Two binders of an atom laid out row-major: the index is `c * row + col + e`.
struct RowMajor {
    row: usize,
    col: usize,
    width: RowWidth,
}

/// The row length `c` of a [`RowMajor`] layout.
enum RowWidth {
    /// A constant greater than 1: the binders are solved by `div` and `mod`.
    Literal(i64),
    /// A term free of the binders (`N`, `n / 2`): solved by inverse functions.
    Symbolic(Int),
}

/// Whether `e` is `s * x + (terms without x)` where the slope `s` mentions neither `x` nor
/// `other` (a product with a symbol, as in `N * x + y`; `linear_coefficient` takes constant
/// slopes only).
fn affine_with_symbolic_slope(e: &Expr, x: &str, other: &str, scope: &LetScope) -> bool {
    if !scope.mentions(e, x) {
        return true;
    }
    match &e.kind {
        ExprKind::Name(id) if id.name == x => !scope.binds_let(x),
        ExprKind::Unary {
            op: crate::syntax::UnaryOp::Neg,
            operand,
        } => affine_with_symbolic_slope(operand, x, other, scope),
        ExprKind::Binary {
            op: BinaryOp::Add | BinaryOp::Sub,
            lhs,
            rhs,
        } => {
            affine_with_symbolic_slope(lhs, x, other, scope)
                && affine_with_symbolic_slope(rhs, x, other, scope)
        }
        ExprKind::Binary {
            op: BinaryOp::Mul,
            lhs,
            rhs,
        } => {
            let slope = |s: &Expr| !scope.mentions(s, x) && !scope.mentions(s, other);
            (slope(lhs) && affine_with_symbolic_slope(rhs, x, other, scope))
                || (slope(rhs) && affine_with_symbolic_slope(lhs, x, other, scope))
        }
        _ => false,
    }
}

/// The row and column that the row-major index `i` (`c * row + col + e` over the two binders
/// `xs`, `e` free of them) solves to when it equals `at`: `(at - e) div c` and `(at - e) mod c`.
fn row_major_solution(xs: &[Int], c: i64, i: &Int, at: &Int) -> (Int, Int) {
    let zero = Int::from_i64(0);
    let offset = i.substitute(&[(&xs[0], &zero), (&xs[1], &zero)]);
    let diff = Int::sub(&[at.clone(), offset]);
    let c = Int::from_i64(c);
    (diff.div(&c), diff.modulo(&c))
}

/// The coefficient `a` when `e` is `a * x + (terms without x)` for a constant `a`, else `None`;
/// what `e` depends on is decided in `scope` (a `\let`-bound name is never taken for `x`).
pub fn linear_coefficient(e: &Expr, x: &str, scope: &LetScope) -> Option<i64> {
    if !scope.mentions(e, x) {
        return Some(0);
    }
    match &e.kind {
        // `x` itself, unless a `\let` rebinds the name (then it depends on `x` some other way).
        ExprKind::Name(id) if id.name == x => (!scope.binds_let(x)).then_some(1),
        ExprKind::Unary {
            op: crate::syntax::UnaryOp::Neg,
            operand,
        } => linear_coefficient(operand, x, scope)?.checked_neg(),
        ExprKind::Binary { op, lhs, rhs } => {
            match op {
                BinaryOp::Add => linear_coefficient(lhs, x, scope)?
                    .checked_add(linear_coefficient(rhs, x, scope)?),
                BinaryOp::Sub => linear_coefficient(lhs, x, scope)?
                    .checked_sub(linear_coefficient(rhs, x, scope)?),
                BinaryOp::Mul => {
                    let constant = |e: &Expr| match &e.kind {
                        ExprKind::IntLit(n) => i64::try_from(n).ok(),
                        _ => None,
                    };
                    if let Some(c) = constant(lhs) {
                        c.checked_mul(linear_coefficient(rhs, x, scope)?)
                    } else if let Some(c) = constant(rhs) {
                        c.checked_mul(linear_coefficient(lhs, x, scope)?)
                    } else {
                        None
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn w_matrix_inverse(
    eval: &Eval<'_>,
    m: &Dynamic,
    heap: &super::state::Heap,
) -> Option<Rc<FuncDecl>> {
    eval.decls
        .world
        .matrix_inverse(m, heap.array(HeapKind::Ref))
}
