//! PVL expressions → Z3 terms, in a symbolic state, with their definedness obligations.
//!
//! [`Eval`] evaluates an expression against a store, a heap and a mask. Where it reads the
//! heap, divides or applies a function it records a [`Check`] (when asked to): the reference is
//! not null, the index is within bounds, some permission is held, the divisor is not zero, the
//! function's precondition holds. Each check is closed over the quantifier binders in scope and
//! guarded by the path inside the expression (`&&`, `||`, `==>` and `?:` short-circuit).
//!
//! Everything not encoded is an [`EncodeError::Unsupported`] with the construct's span — never
//! a panic, never a silently dropped conjunct. Triggers `{: e :}` mean `e`; their pattern is not
//! passed to Z3 (which only affects how Z3 instantiates, never what is true).
//!
//! # Integer division
//! `a / b` and `a % b`: three semantics disagree on negative operands (Z3's Euclidean `div`,
//! C's truncation, floor division), and which one PVL's follows in VerCors we could not
//! confirm. All three agree when `a ≥ 0` and `b > 0`; there the checker uses Z3's `div`/`mod`.
//! Elsewhere the result is an unspecified function of `a` and `b`, so whatever the checker
//! proves holds under every one of the three. Every division checks `b ≠ 0`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use z3::ast::{self, Array, Ast, Bool, Dynamic, Int, Real, Seq, Set};
use z3::FuncDecl;

use crate::syntax::{
    BinaryOp, Builtin, CollectionKind, Expr, ExprKind, MethodBody, PermLit, QuantifierKind, Span,
    TypeKind, UnaryOp,
};

use super::assertion;
use super::fraction;
use super::inline;
use super::int32;
use super::obligation::{Check, ObligationKind};
use super::one_point;
use super::program::{element, ty_of, FieldInfo, ProgramInfo, Routine};
use super::state::{
    real, seq_extract, value_of, Heap, HeapStep, MapTerm, Mask, Snapshot, Store, Term, Ty, Value,
    World,
};

/// The sorts of [`Env`] (the pure-expression entry point, [`super::check_pure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sort {
    Int,
    Bool,
}

impl fmt::Display for Sort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sort::Int => "int",
            Sort::Bool => "boolean",
        })
    }
}

/// The free variables a pure expression may mention, with their sorts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, Sort>,
}

impl Env {
    pub fn new() -> Env {
        Env::default()
    }

    /// Builder form of [`Env::insert`].
    pub fn with(mut self, name: impl Into<String>, sort: Sort) -> Env {
        self.insert(name, sort);
        self
    }

    pub fn insert(&mut self, name: impl Into<String>, sort: Sort) {
        self.vars.insert(name.into(), sort);
    }

    pub fn get(&self, name: &str) -> Option<Sort> {
        self.vars.get(name).copied()
    }

    /// The variables as named Z3 constants.
    pub fn store(&self) -> Store {
        self.vars
            .iter()
            .map(|(n, s)| {
                let v = match s {
                    Sort::Int => Value::int(Int::new_const(n.as_str())),
                    Sort::Bool => Value::bool(Bool::new_const(n.as_str())),
                };
                (n.clone(), v)
            })
            .collect()
    }
}

/// Why an expression or statement could not be encoded. Codes E05xx (`verify`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum EncodeError {
    /// A construct the checker does not encode (yet). Input the user can change: exit 2.
    #[error("not supported by the checker yet: {what}")]
    #[diagnostic(code(E0501))]
    Unsupported {
        what: String,
        #[label("not supported here")]
        span: Span,
    },

    /// A name neither bound in the expression nor known to the state.
    #[error("`{name}` has no value in the verification state")]
    #[diagnostic(code(E0502))]
    UnboundName {
        name: String,
        #[label("unknown to the encoding")]
        span: Span,
    },

    /// `barrier(outer)` inside a par block nested in `outer`: a barrier synchronises the
    /// threads of its innermost par block only, so this one has no GPU meaning (the
    /// interpreter refuses it too). Input the user can change: exit 2.
    #[error("`barrier({label})` inside the nested par block {inner}: a barrier can only synchronise the threads of its innermost par block")]
    #[diagnostic(code(E0504))]
    BarrierInNestedPar {
        label: String,
        /// `` `name` ``, or `without a label`.
        inner: String,
        #[label("not the innermost par block")]
        span: Span,
    },

    /// A type mismatch the type checker should have rejected: our bug (exit 4).
    #[error("internal error: expected {expected}, found {found} (the type checker should have rejected this)")]
    #[diagnostic(code(E0503))]
    IllSorted {
        expected: String,
        found: String,
        #[label("ill-sorted")]
        span: Span,
    },
}

impl EncodeError {
    pub fn span(&self) -> Span {
        match self {
            EncodeError::Unsupported { span, .. }
            | EncodeError::UnboundName { span, .. }
            | EncodeError::BarrierInNestedPar { span, .. }
            | EncodeError::IllSorted { span, .. } => *span,
        }
    }

    /// The stable code, e.g. `"E0501"`.
    pub fn code_str(&self) -> &'static str {
        match self {
            EncodeError::Unsupported { .. } => "E0501",
            EncodeError::UnboundName { .. } => "E0502",
            EncodeError::IllSorted { .. } => "E0503",
            EncodeError::BarrierInNestedPar { .. } => "E0504",
        }
    }

    /// Our bug rather than the user's input.
    pub fn is_internal(&self) -> bool {
        matches!(self, EncodeError::IllSorted { .. })
    }
}

pub fn unsupported(what: impl Into<String>, span: Span) -> EncodeError {
    EncodeError::Unsupported {
        what: what.into(),
        span,
    }
}

fn ill_sorted(expected: &str, found: &Ty, span: Span) -> EncodeError {
    EncodeError::IllSorted {
        expected: expected.to_string(),
        found: format!("{found:?}"),
        span,
    }
}

enum Bound {
    Lower,
    Upper,
}

/// `lo <= k`, `k >= lo`, `lo < k`, `k > lo` (lower) or `k < hi`, `hi > k`, `k <= hi`, `hi >= k`
/// (upper) with the other side free of `k`: the bound and what to add to it to make the range
/// half-open [lo, hi).
fn range_bound<'e>(e: &'e Expr, k: &str) -> Option<(Bound, &'e Expr, i64)> {
    let ExprKind::Binary { op, lhs, rhs } = &e.kind else {
        return None;
    };
    let is_k = |x: &Expr| matches!(&x.kind, ExprKind::Name(id) if id.name == k);
    let (bound, other, shift) = match op {
        BinaryOp::Le if is_k(rhs) => (Bound::Lower, lhs, 0),
        BinaryOp::Lt if is_k(rhs) => (Bound::Lower, lhs, 1),
        BinaryOp::Ge if is_k(lhs) => (Bound::Lower, rhs, 0),
        BinaryOp::Gt if is_k(lhs) => (Bound::Lower, rhs, 1),
        BinaryOp::Lt if is_k(lhs) => (Bound::Upper, rhs, 0),
        BinaryOp::Le if is_k(lhs) => (Bound::Upper, rhs, 1),
        BinaryOp::Gt if is_k(rhs) => (Bound::Upper, lhs, 0),
        BinaryOp::Ge if is_k(rhs) => (Bound::Upper, lhs, 1),
        _ => return None,
    };
    (!other.mentions(k)).then_some((bound, &**other, shift))
}

/// A pure function as Z3 declarations: the function and its *limited* twin (calls inside its
/// own definition use the twin, so Z3 unfolds the definition once per term it meets).
pub struct FunctionDecl {
    pub full: FuncDecl,
    pub limited: FuncDecl,
    pub params: Vec<(String, Ty)>,
    pub ret: Ty,
    /// Its precondition holds permissions: the function takes the heap's arrays
    /// ([`Heap::terms`]) before its parameters, so its value follows the heap.
    pub reads_heap: bool,
    /// It has a body that encodes and its recursion is proved to terminate: its definition
    /// may be used (unfolded at each application when `reads_heap`), and a recursive call
    /// may use the postcondition (induction on the decreasing measure).
    pub terminates: bool,
    /// `reads_heap`: its postcondition may be assumed at each application (it is not the
    /// function being checked, nor in a cycle of calls).
    pub post_usable: bool,
    /// Its recursion goes through `\unfolding` of this predicate instance of its
    /// precondition, whose height ([`World::depth`]) is its measure: `terminates` is set, and
    /// its own check proves the height lower at each recursive application.
    pub depth_measure: Option<Expr>,
    /// `reads_heap`, and the only resources of its precondition are locations (`Perm`,
    /// `Value`) and predicate instances: its value is kept across a change of the heap that
    /// leaves those locations' values unchanged while the instances are held (nothing can
    /// write what a held instance holds), [`Eval::frames`].
    pub framed: bool,
}

pub type Functions = BTreeMap<String, FunctionDecl>;

/// What an evaluation may consult besides its store.
#[derive(Clone, Copy)]
pub struct Decls<'a> {
    pub world: &'a World,
    pub program: Option<&'a ProgramInfo<'a>>,
    pub functions: Option<&'a Functions>,
}

/// How a predicate instance reads in a pure function's hypothesis (`permissions_as_true`),
/// where `Perm` reads as `true`. Not simply `true`: a predicate's body may carry facts the
/// function's proof used (`\unfolding p() \in val` with `val > 0` inside `p`), so a hypothesis
/// without them would make an axiom that holds of no heap.
#[derive(Clone)]
pub enum PredicateReading {
    /// Unsupported (a heap-universal axiom: there is no mask to read the instance in).
    Refused,
    /// `true`: where a weaker hypothesis is sound (the termination check of a heap function,
    /// whose axioms are not assumed from there).
    True,
    /// Held in this mask, the caller's at an application: positive permission to the
    /// instance. Holding it, its body's facts hold on the current heap, as `\unfolding`
    /// assumes (nothing can write what a folded predicate holds).
    HeldIn(Mask),
}

/// A function's application of itself inside its own definition.
#[derive(Clone)]
pub struct RecursiveCall {
    /// Its path condition.
    pub guard: Bool,
    pub args: Vec<Value>,
    pub span: Span,
    /// The predicates of the `\unfolding`s around it, outermost first.
    pub unfolded: Vec<String>,
}

/// Evaluates expressions in one state. See the module docs.
pub struct Eval<'a> {
    pub decls: Decls<'a>,
    pub store: Store,
    /// `None`: a pure context (heap reads are unsupported there).
    pub heap: Option<Heap>,
    /// The mask heap reads are checked against.
    pub mask: Option<Mask>,
    pub old: Option<Snapshot>,
    /// Evaluating a precondition: its pre-state is the current state, so `\old(e)` is `e`
    /// (read, and framed, in the state being inhaled or exhaled).
    pub old_is_now: bool,
    pub result: Option<Value>,
    /// Record definedness checks (null, bounds, permission, division, function preconditions).
    pub definedness: bool,
    /// With `definedness`: record the checks of values too (null, bounds, division, the pure
    /// part of a function's precondition). Off only where a resource invariant's framing is
    /// checked in a heap about which nothing is known: there only its reads' permissions are
    /// checked, and its values where it is handed over (`Verifier::invariant_block`).
    pub value_checks: bool,
    pub checks: Vec<Check>,
    /// A term of `World::sum` was built: [`Eval::take_axioms`] hands out its definition.
    uses_sum: bool,
    /// A term of `World::product`'s `mul` was built: [`Eval::take_axioms`] hands out its
    /// definition. Only then, so that programs without such a product see the solver as
    /// before (model-based instantiation would check the nonlinear definition every time).
    uses_product: bool,
    /// Sequences indexed so far, one per sort, for [`World::sequence_axioms`].
    indexed: Vec<Seq>,
    /// Valid facts about terms built so far (a sequence update's cells), assumed with the
    /// next checks.
    definitions: Vec<Bool>,
    /// The facts about set sizes (`Eval::set_size`), kept apart: inside a quantifier they
    /// become the body's hypotheses, where the binders are.
    size_facts: Vec<Bool>,
    /// The terms of the user's triggers (`{: e :}`, `{:n: e :}` with its group) met since the
    /// innermost quantifier being encoded began its body: its patterns.
    triggers: Vec<(Option<u32>, Dynamic)>,
    /// Names bound inside the expression (quantifiers, `\let`), innermost last.
    scopes: Vec<(String, Value)>,
    /// Quantifier-bound constants in scope: checks are closed over them.
    bound: Vec<Int>,
    /// Path conditions inside the expression.
    guards: Vec<Bool>,
    /// Inside the definition of this function: its own calls use the limited twin and are
    /// logged for the termination check.
    pub defining: Option<String>,
    /// Each recursive call: its path condition, its arguments, where it is.
    pub recursive_calls: Vec<RecursiveCall>,
    /// The predicates of the `\unfolding`s around the expression being evaluated, innermost
    /// last (a recursive call inside them may use the predicate depth measure).
    unfolded: Vec<String>,
    /// Inhaling the body of the predicate instance at this location (an `\unfolding`): each
    /// instance inhaled is lower ([`World::depth`]).
    pub unfolding_parent: Option<(Dynamic, Int)>,
    /// A pure function's own body, evaluated in its check: one heap throughout, so the height
    /// of an instance `\unfolding` yields may be related to its parent's
    /// (`assertion::lower_than_parent`). Anywhere else the heap may change between two
    /// unfoldings, and `depth` is a function of the location alone: a location's instance can
    /// be refolded around another footprint, and two such facts could contradict each other
    /// (`a` inside `b`, later `b` inside `a`), making everything after them vacuous.
    pub one_heap: bool,
    /// `--int32` in executable code: the mode (exempt and unsigned operations); `None`
    /// outside (`int32.rs`).
    pub int32: Option<&'a int32::Int32>,
    /// A pure function's precondition as the hypothesis of its axioms: `Perm` and `Value`
    /// are `true` (see [`function_fact`]).
    pub permissions_as_true: bool,
    /// With `permissions_as_true`: how a predicate instance reads.
    pub predicate_reading: PredicateReading,
    /// With `permissions_as_true`: `Perm(loc, p)` and `Value(loc)` read as "`loc` holds the
    /// same value here as in this heap" instead of `true` (`a[*]` as every cell of `a`), so
    /// a function's precondition reads as "it holds, and its footprint did not change": the
    /// hypothesis of a frame ([`Eval::frames`]).
    pub unchanged_in: Option<Heap>,
    /// An application of a framed heap function comes with its frames across the heap
    /// changes that led to the current heap ([`Eval::frames`]); off where a frame's own
    /// hypothesis is evaluated.
    framing: bool,
    /// Facts the terms built so far come with (a recursive call's postcondition, a heap
    /// function's axioms at its application), handed out by [`Eval::take_axioms`].
    facts: Vec<Bool>,
    /// Heap functions whose definitions are being unfolded, innermost last (each once).
    instantiating: Vec<String>,
    /// Pure functions whose bodies are being checked at a call (`--int32`), innermost last.
    inlining: Vec<String>,
    /// Values of nodes of the code expression being evaluated that the verifier already
    /// evaluated in their turn, around its calls and allocations (`exec/effects.rs`), by
    /// node address.
    pub precomputed: Vec<(usize, Value)>,
    /// What `AutoValue(loc)` means in the assertion being walked: a method's precondition
    /// lends amounts that its postcondition gives back ([`assertion::Borrowed`]).
    pub borrowed: assertion::Borrowed,
}

impl<'a> Eval<'a> {
    pub fn new(decls: Decls<'a>, store: Store) -> Eval<'a> {
        Eval {
            decls,
            store,
            heap: None,
            mask: None,
            old: None,
            result: None,
            definedness: false,
            value_checks: true,
            old_is_now: false,
            checks: Vec::new(),
            uses_sum: false,
            uses_product: false,
            indexed: Vec::new(),
            definitions: Vec::new(),
            size_facts: Vec::new(),
            triggers: Vec::new(),
            scopes: Vec::new(),
            bound: Vec::new(),
            guards: Vec::new(),
            defining: None,
            recursive_calls: Vec::new(),
            unfolded: Vec::new(),
            unfolding_parent: None,
            one_heap: false,
            int32: None,
            inlining: Vec::new(),
            permissions_as_true: false,
            predicate_reading: PredicateReading::Refused,
            unchanged_in: None,
            framing: true,
            facts: Vec::new(),
            instantiating: Vec::new(),
            precomputed: Vec::new(),
            borrowed: assertion::Borrowed::AsValue,
        }
    }

    // ----- scopes, used by the assertion walker as well -----

    /// Binds `name` to a fresh integer constant quantified over by later checks.
    pub fn bind_quantified(&mut self, name: &str) -> Int {
        let x = Int::fresh_const(name);
        self.scopes.push((name.to_string(), Value::int(x.clone())));
        self.bound.push(x.clone());
        x
    }

    /// The definitions the terms built so far rely on (`World::sum`'s once a sum term was
    /// built, `World::product`'s once a `mul` term was), for whoever takes the checks to
    /// assume first. Only then: the sum axioms
    /// quantify over arrays, which leaves Z3's array theory incomplete (failures would come
    /// back unknown) in every query.
    pub fn take_axioms(&mut self) -> Vec<Bool> {
        let mut axioms = if std::mem::take(&mut self.uses_sum) {
            self.decls.world.sum_axioms()
        } else {
            Vec::new()
        };
        if std::mem::take(&mut self.uses_product) {
            axioms.push(self.decls.world.product_axiom());
        }
        for s in std::mem::take(&mut self.indexed) {
            axioms.extend(self.decls.world.sequence_axioms(&s));
        }
        axioms.append(&mut self.definitions);
        axioms.append(&mut self.size_facts);
        axioms.append(&mut self.facts);
        axioms
    }

    pub fn bind(&mut self, name: &str, v: Value) {
        self.scopes.push((name.to_string(), v));
    }

    pub fn push_guard(&mut self, g: Bool) {
        self.guards.push(g);
    }

    pub fn pop_guard(&mut self) {
        self.guards.pop();
    }

    /// The current depths of scopes, binders and guards, for [`Eval::restore`].
    pub fn mark(&self) -> (usize, usize, usize) {
        (self.scopes.len(), self.bound.len(), self.guards.len())
    }

    pub fn restore(&mut self, mark: (usize, usize, usize)) {
        self.scopes.truncate(mark.0);
        self.bound.truncate(mark.1);
        self.guards.truncate(mark.2);
    }

    pub fn bound(&self) -> &[Int] {
        &self.bound
    }

    pub fn guards(&self) -> &[Bool] {
        &self.guards
    }

    pub fn guard(&self) -> Bool {
        Bool::and(&self.guards)
    }

    /// `∀ bound. guards ⇒ goal`.
    /// Binders that a guard defines and that have no pattern are substituted away
    /// ([`one_point`]).
    pub fn close(&self, goal: &Bool) -> Bool {
        if !one_point::has_candidate(&self.bound, &self.guards) {
            return close(&self.bound, &self.guard().implies(goal));
        }
        let mut xs = self.bound.clone();
        let mut guards = self.guards.clone();
        let mut uses = [Dynamic::from_ast(goal)];
        let movable = vec![true; xs.len()];
        one_point::eliminate(&mut xs, &movable, &mut guards, &mut uses);
        let goal = uses[0].as_bool().expect("a substituted boolean");
        close(&xs, &Bool::and(&guards).implies(&goal))
    }

    fn require(&mut self, ob: Bool, kind: ObligationKind, span: Span) {
        self.require_noted(ob, kind, span, None);
    }

    pub fn require_noted(
        &mut self,
        ob: Bool,
        kind: ObligationKind,
        span: Span,
        note: Option<String>,
    ) {
        if self.definedness && !self.deferred(kind) {
            let goal = self.close(&ob);
            self.checks.push(Check {
                goal,
                kind,
                span,
                note,
            });
        }
    }

    /// Whether a check of `kind` is about a value that is not checked here (`value_checks`).
    fn deferred(&self, kind: ObligationKind) -> bool {
        use ObligationKind::*;
        !self.value_checks
            && matches!(
                kind,
                NullDereference | IndexNegative | IndexTooLarge | DivisionByZero
            )
    }

    /// `--int32`: the result of `what` at `span` fits in 32 bits (unless exempt).
    fn require_int32(&mut self, result: &Int, what: &str, span: Span) {
        let Some(mode) = self.int32 else {
            return;
        };
        if mode.exempt.contains(&span) {
            return;
        }
        self.require_noted(
            int32::in_range(result),
            ObligationKind::Int32Overflow,
            span,
            Some(format!("`{what}` may overflow 32 bits")),
        );
        if mode.unsigned.contains(&span) {
            self.require_noted(
                result.ge(Int::from_i64(0)),
                ObligationKind::UnsignedUnderflow,
                span,
                Some(format!("`{what}` may go below zero")),
            );
        }
    }

    /// The value a `\let T name = value` binds: of type `T` (an int converted to a fraction),
    /// with the range of a fraction type as an obligation (the body may rely on it).
    pub fn let_value(
        &mut self,
        ty: &crate::syntax::Type,
        name: &crate::syntax::Ident,
        value: &Expr,
    ) -> Result<Value, EncodeError> {
        if !matches!(ty.kind, TypeKind::Int | TypeKind::Bool) && !fraction::is_fraction(&ty.kind) {
            // Every other type as a local declared with it: the value at the declared type.
            let declared = ty_of(ty)?;
            let v = self.value(value)?;
            return coerce(self.decls.world, v, &declared, value.span);
        }
        let v = self.value(value)?;
        let v = fraction::convert(&ty.kind, v);
        self.require_fraction(&ty.kind, &name.name, &v, value.span);
        Ok(v)
    }

    /// `v` where a value of type `expected` goes: a `None` not typed yet becomes the `None` of
    /// that option type; anywhere else it is refused (its sort is not known).
    pub fn settle(
        &self,
        v: Value,
        expected: Option<&Ty>,
        span: Span,
    ) -> Result<Value, EncodeError> {
        if !is_untyped_none(&v) {
            return Ok(v);
        }
        match expected {
            Some(Ty::Option(elem)) if **elem != Ty::Null => Ok(self.decls.world.typed_none(elem)),
            _ => Err(unsupported(
                "a `None` whose option type is not known here (bind it to a typed variable first)",
                span,
            )),
        }
    }

    /// `v`, bound to the name `name` of type `ty`, lies in that type's range (when it is a
    /// fraction type): a `fraction_out_of_range` obligation, like any definedness check.
    pub fn require_fraction(&mut self, ty: &TypeKind, name: &str, v: &Value, span: Span) {
        if let Some(range) = fraction::range(ty, v) {
            self.require_noted(
                range,
                ObligationKind::FractionOutOfRange,
                span,
                fraction::note(ty, name),
            );
        }
    }

    // ----- typed entry points -----

    pub fn bool(&mut self, e: &Expr) -> Result<Bool, EncodeError> {
        let v = self.value(e)?;
        match v.term {
            Term::Bool(b) => Ok(b),
            _ => Err(ill_sorted("boolean", &v.ty, e.span)),
        }
    }

    pub fn int(&mut self, e: &Expr) -> Result<Int, EncodeError> {
        let v = self.value(e)?;
        match v.term {
            Term::Int(i) => Ok(i),
            _ => Err(ill_sorted("int", &v.ty, e.span)),
        }
    }

    pub fn reference(&mut self, e: &Expr) -> Result<(Dynamic, Ty), EncodeError> {
        let v = self.value(e)?;
        match v.term {
            Term::Ref(r) => Ok((r, v.ty)),
            _ => Err(ill_sorted("a reference", &v.ty, e.span)),
        }
    }

    /// [`Eval::reference`], with the obligation (where definedness is checked) that it is not
    /// null: a receiver, the object of a token or a lock operation.
    pub fn non_null(&mut self, e: &Expr) -> Result<(Dynamic, Ty), EncodeError> {
        let (r, ty) = self.reference(e)?;
        self.require_not_null(&r, e.span);
        Ok((r, ty))
    }

    /// The obligation (where definedness is checked) that `r`, written at `span`, is not null.
    pub fn require_not_null(&mut self, r: &Dynamic, span: Span) {
        let null = self.decls.world.null.clone();
        self.require(r.eq(&null).not(), ObligationKind::NullDereference, span);
    }

    /// The fraction `a / b`, with the obligation that the divisor (written at `at`) is not
    /// zero.
    fn quotient(&mut self, a: Real, b: Real, at: Span) -> Value {
        self.require(b.eq(real(0)).not(), ObligationKind::DivisionByZero, at);
        perm(a / b)
    }

    /// A numeric value as a real (permission arithmetic mixes ints and fractions).
    pub fn real(&mut self, e: &Expr) -> Result<Real, EncodeError> {
        let v = self.value(e)?;
        to_real(v, e.span)
    }

    pub fn value(&mut self, e: &Expr) -> Result<Value, EncodeError> {
        let span = e.span;
        if !self.precomputed.is_empty() {
            let at = e as *const Expr as usize;
            if let Some((_, v)) = self.precomputed.iter().rev().find(|(a, _)| *a == at) {
                return Ok(v.clone());
            }
        }
        Ok(match &e.kind {
            ExprKind::IntLit(n) => match Int::from_str(&n.to_string()) {
                Ok(i) => {
                    if self.int32.is_some() && !int32::literal_fits(n) {
                        self.require_noted(
                            Bool::from_bool(false),
                            ObligationKind::Int32Overflow,
                            span,
                            Some(format!("the literal {n} does not fit in 32 bits")),
                        );
                    }
                    Value::int(i)
                }
                Err(()) => return Err(unsupported(format!("the integer literal {n}"), span)),
            },
            ExprKind::BoolLit(b) => Value::bool(Bool::from_bool(*b)),
            ExprKind::Null => Value {
                term: Term::Ref(self.decls.world.null.clone()),
                ty: Ty::Null,
            },
            ExprKind::Name(id) => self.name(&id.name, span)?,
            ExprKind::This => self.name("this", span)?,
            ExprKind::AllIndices => {
                return Err(unsupported(
                    "`a[*]` outside the location of `Perm`, `PointsTo` or `Value`",
                    span,
                ))
            }
            ExprKind::Result => match &self.result {
                Some(v) => v.clone(),
                None => return Err(unsupported("`\\result` outside a postcondition", span)),
            },
            ExprKind::PermLit(PermLit::Write) => perm(real(1)),
            ExprKind::PermLit(PermLit::None) => perm(real(0)),
            ExprKind::PermLit(PermLit::Read) => {
                return Err(unsupported(
                    "`read` outside the amount of a `Perm` (it is a wildcard amount)",
                    span,
                ))
            }
            ExprKind::Unary { op, operand } => match op {
                UnaryOp::Not => Value::bool(self.bool(operand)?.not()),
                UnaryOp::Neg => match self.value(operand)? {
                    Value {
                        term: Term::Int(i), ..
                    } => {
                        let r = i.unary_minus();
                        self.require_int32(&r, "-", span);
                        Value::int(r)
                    }
                    Value {
                        term: Term::Real(r),
                        ..
                    } => perm(r.unary_minus()),
                    v => return Err(ill_sorted("a number", &v.ty, operand.span)),
                },
            },
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, span)?,
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                let c = self.bool(cond)?;
                self.guards.push(c.clone());
                let a = self.value(then_expr);
                self.guards.pop();
                let a = a?;
                self.guards.push(c.not());
                let b = self.value(else_expr);
                self.guards.pop();
                let b = b?;
                let (a, b) = unify(self.decls.world, a, b, else_expr.span)?;
                Value {
                    term: Term::ite(&c, &a.term, &b.term),
                    ty: if a.ty == Ty::Null { b.ty } else { a.ty },
                }
            }
            ExprKind::Let {
                ty,
                name,
                value,
                body,
            } => {
                let v = self.let_value(ty, name, value)?;
                // A `\let` is pure: binding the name to the value's term is exact.
                self.scopes.push((name.name.clone(), v));
                let r = self.value(body);
                self.scopes.pop();
                r?
            }
            ExprKind::Quantifier(q) => {
                let is_forall = match q.kind {
                    QuantifierKind::Forall | QuantifierKind::ForallStar => true,
                    QuantifierKind::Exists => false,
                    QuantifierKind::Sum => {
                        let mark = self.mark();
                        let r = self.sum(q, span);
                        self.restore(mark);
                        return Ok(Value::int(r?));
                    }
                };
                let mark = self.mark();
                let r = self.quantifier(q, is_forall);
                self.restore(mark);
                Value::bool(r?)
            }
            ExprKind::Trigger(inner, group) => {
                let v = self.value(inner)?;
                self.triggers.push((*group, v.term.as_dynamic()));
                v
            }
            ExprKind::Scaled { .. } => {
                return Err(unsupported(
                    "a scaled predicate `[p]P(..)` of a predicate that is not inline (or of a \
                     thread or lock token)",
                    span,
                ))
            }
            ExprKind::Index { base, index } => {
                let b = self.value(base)?;
                match b.term {
                    Term::Seq(seq) => self.seq_index(&seq, &b.ty, index)?,
                    Term::Map(map) => self.map_lookup(&map, &b.ty, index)?,
                    _ => self.read_at(e, Some(b), span)?,
                }
            }
            ExprKind::Field { base, name } => self.field(e, base, &name.name, span)?,
            ExprKind::Old(inner) => self.old(inner, span)?,
            ExprKind::Call {
                receiver,
                name,
                args,
                given,
                yields,
                ..
            } => {
                if !given.is_empty() || !yields.is_empty() {
                    return Err(unsupported(
                        "calls with ghost arguments inside expressions",
                        span,
                    ));
                }
                self.apply(receiver.as_deref(), &name.name, args, span)?
            }
            ExprKind::Builtin {
                op: Builtin::Array,
                args,
            } if args.len() == 2 => {
                let (r, _) = self.reference(&args[0])?;
                let n = self.int(&args[1])?;
                let w = self.decls.world;
                Value::bool(Bool::and(&[r.eq(&w.null).not(), w.len_of(&r).eq(&n)]))
            }
            ExprKind::Builtin {
                op: op @ (Builtin::Perm | Builtin::Value | Builtin::AutoValue),
                args,
            } if self.permissions_as_true => match self.unchanged_in.clone() {
                None => Value::bool(Bool::from_bool(true)),
                Some(other) => self.unchanged_location(*op, args, &other, span)?,
            },
            ExprKind::Builtin {
                op: Builtin::Committed,
                args,
            } if args.len() == 1 => {
                let (o, _) = self.reference(&args[0])?;
                Value::bool(self.decls.world.committed(&o))
            }
            ExprKind::Builtin {
                op: Builtin::TypeOf,
                args,
            } if args.len() == 1 => self.type_of(&args[0])?,
            ExprKind::Builtin {
                op: Builtin::Values,
                args,
            } if args.len() == 3 => self.values(&args[0], &args[1], &args[2], span)?,
            ExprKind::Builtin {
                op: Builtin::Type,
                args,
            } if args.len() == 1 => match &args[0].kind {
                ExprKind::Name(c) => self.class_value(c)?,
                _ => {
                    return Err(unsupported(
                        "`\\type` of something other than a class",
                        span,
                    ))
                }
            },
            ExprKind::Builtin { op, .. } => {
                return Err(unsupported(
                    format!("`{}` in a pure position", op.spelling()),
                    span,
                ))
            }
            ExprKind::Length(inner) => {
                let v = self.value(inner)?;
                match &v.term {
                    Term::Set(s) => Value::int(self.set_size(s)),
                    Term::Map(m) => Value::int(self.set_size(&m.keys)),
                    Term::Seq(s) if !matches!(v.ty, Ty::Option(_)) => Value::int(s.length()),
                    _ => {
                        return Err(unsupported(
                            "the size of something other than a sequence, a set or a map (bags \
                             are not encoded yet)",
                            inner.span,
                        ))
                    }
                }
            }
            ExprKind::Slice { base, from, to } => {
                let (s, ty) = self.seq(base)?;
                let len = s.length();
                let lo = match from {
                    Some(f) => self.int(f)?,
                    None => Int::from_i64(0),
                };
                let hi = match to {
                    Some(t) => self.int(t)?,
                    None => len.clone(),
                };
                let zero = Int::from_i64(0);
                self.require(lo.ge(&zero), ObligationKind::IndexNegative, span);
                self.require(lo.le(&hi), ObligationKind::IndexNegative, span);
                self.require(hi.le(&len), ObligationKind::IndexTooLarge, span);
                let length = Int::sub(&[hi, lo.clone()]);
                Value {
                    term: Term::Seq(seq_extract(&s, &lo, &length)),
                    ty,
                }
            }
            ExprKind::Update { base, index, value } => {
                let b = self.value(base)?;
                if let Term::Map(m) = &b.term {
                    // `m[k -> v]`: the entry added (or replaced).
                    let k = self.value(index)?.term.as_dynamic();
                    let v = self.value(value)?.term.as_dynamic();
                    return Ok(Value {
                        term: Term::Map(MapTerm {
                            entries: m.entries.store(&k, &Seq::unit(&v)),
                            keys: m.keys.add(&k),
                        }),
                        ty: b.ty,
                    });
                }
                let (s, ty) = match b.term {
                    Term::Seq(s) => (s, b.ty),
                    _ => {
                        return Err(unsupported(
                            "an update of something other than a sequence or a map",
                            base.span,
                        ))
                    }
                };
                let i = self.int(index)?;
                let v = self.value(value)?;
                let len = s.length();
                self.require(
                    i.ge(Int::from_i64(0)),
                    ObligationKind::IndexNegative,
                    index.span,
                );
                self.require(i.lt(&len), ObligationKind::IndexTooLarge, index.span);
                let v = v.term.as_dynamic();
                let term = self.seq_update(&s, &i, &v);
                if self.decls.program.is_none_or(|p| p.takes_tails) {
                    self.update_tail_facts(&s, &i, &v, &term);
                }
                Value {
                    term: Term::Seq(term),
                    ty,
                }
            }
            ExprKind::Collection { kind, elem, elems } => {
                let values = elems
                    .iter()
                    .map(|x| self.value(x))
                    .collect::<Result<Vec<_>, _>>()?;
                if let Some(v) = values
                    .iter()
                    .find(|v| matches!(v.ty, Ty::Option(_) | Ty::Set(_) | Ty::Map(..) | Ty::Bag(_)))
                {
                    return Err(unsupported(
                        format!(
                            "a collection of options, sets, bags or maps ({:?} elements)",
                            v.ty
                        ),
                        span,
                    ));
                }
                let elem_ty = match (elem, values.iter().find(|v| v.ty != Ty::Null)) {
                    (Some(elem), _) => ty_of(elem)?,
                    (None, Some(first)) => first.ty.clone(),
                    (None, None) => {
                        return Err(unsupported("a collection literal of unknown type", span))
                    }
                };
                let sort = self.decls.world.sort_of(&elem_ty);
                let elems = values.iter().map(|v| v.term.as_dynamic());
                if *kind == CollectionKind::Seq {
                    // Right-nested binary concatenations of the elements, the form the indexing
                    // axioms match (`World::sequence_axioms`): with the n-ary term, a proof
                    // that indexed a literal took 4 s instead of 0.4 s.
                    let units: Vec<Seq> = elems.map(|x| Seq::unit(&x)).collect();
                    let term = units
                        .into_iter()
                        .rev()
                        .reduce(|tail, head| Seq::concat(&[&head, &tail]))
                        .unwrap_or_else(|| Seq::empty(&sort));
                    Value {
                        term: Term::Seq(term),
                        ty: Ty::Seq(Box::new(elem_ty)),
                    }
                } else if *kind == CollectionKind::Set {
                    Value {
                        term: Term::Set(elems.fold(Set::empty(&sort), |set, x| set.add(&x))),
                        ty: Ty::Set(Box::new(elem_ty)),
                    }
                } else {
                    // Each occurrence adds one to its element's multiplicity.
                    let empty = Array::const_array(&sort, &Int::from_i64(0));
                    let bag = elems.fold(empty, |bag, x| {
                        let n = bag.select(&x).as_int().expect("a multiplicity");
                        bag.store(&x, &Int::add(&[n, Int::from_i64(1)]))
                    });
                    Value {
                        term: Term::Bag(bag),
                        ty: Ty::Bag(Box::new(elem_ty)),
                    }
                }
            }
            ExprKind::Tuple {
                types,
                first,
                second,
            } => {
                let (a, b) = (self.value(first)?, self.value(second)?);
                let (ta, tb) = match types.as_deref() {
                    Some((x, y)) => (ty_of(x)?, ty_of(y)?),
                    None => (a.ty.clone(), b.ty.clone()),
                };
                let (ta, tb) = (element(ta, "tuples", span)?, element(tb, "tuples", span)?);
                let sort = self.decls.world.tuple_sort(&ta, &tb);
                let make = &sort.variants[0].constructor;
                let (a, b) = (a.term.as_dynamic(), b.term.as_dynamic());
                Value {
                    term: Term::Tuple(make.apply(&[&a as &dyn Ast, &b as &dyn Ast])),
                    ty: Ty::Tuple(Box::new(ta), Box::new(tb)),
                }
            }
            ExprKind::MapLit {
                key,
                value,
                entries,
            } => {
                let ty = Ty::Map(
                    Box::new(element(ty_of(key)?, "maps", span)?),
                    Box::new(element(ty_of(value)?, "maps", span)?),
                );
                let mut map = self.empty_map(&ty);
                // Entries in order: a later entry for the same key replaces an earlier one.
                for (k, v) in entries {
                    let k = self.value(k)?.term.as_dynamic();
                    let v = self.value(v)?.term.as_dynamic();
                    map = MapTerm {
                        entries: map.entries.store(&k, &Seq::unit(&v)),
                        keys: map.keys.add(&k),
                    };
                }
                Value {
                    term: Term::Map(map),
                    ty,
                }
            }
            ExprKind::New { .. } | ExprKind::NewArray { .. } => {
                return Err(unsupported("allocation inside an expression", span))
            }
            ExprKind::Unfolding { pred, body } => self.unfolding(pred, body, span)?,
        })
    }

    /// Whether `name` is bound here: a binder, a local or parameter, or a field of `this`.
    fn names_a_value(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _)| n == name)
            || self.store.contains_key(name)
            || self.this_field(name).is_some()
    }

    fn name(&mut self, name: &str, span: Span) -> Result<Value, EncodeError> {
        if let Some((_, v)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Ok(v.clone());
        }
        if let Some(v) = self.store.get(name) {
            return Ok(v.clone());
        }
        // A bare field name means `this.f`.
        match self.field_of_this(name, span) {
            Some((r, i, ty)) => self.read_location(r, i, ty, span),
            None if name == "None" => Ok(self.decls.world.typed_none(&Ty::Null)),
            None => Err(EncodeError::UnboundName {
                name: name.to_string(),
                span,
            }),
        }
    }

    /// The location of field `name` of `this`, when there is a `this` with such a field.
    fn field_of_this(&mut self, name: &str, span: Span) -> Option<(Dynamic, Int, Ty)> {
        let (r, info) = self.this_field(name)?;
        let w = self.decls.world;
        self.require(r.eq(&w.null).not(), ObligationKind::NullDereference, span);
        Some((r, Int::from_i64(info.index), info.ty))
    }

    /// `this` and its field `name`, when there is a `this` with such a field.
    fn this_field(&self, name: &str) -> Option<(Dynamic, FieldInfo)> {
        let this = self.store.get("this")?;
        let (Term::Ref(r), Ty::Object(class)) = (&this.term, &this.ty) else {
            return None;
        };
        let info = self.decls.program?.field(class, name)?.clone();
        Some((r.clone(), info))
    }

    /// The value at a location, with the permission check.
    fn read_location(
        &mut self,
        r: Dynamic,
        i: Int,
        ty: Ty,
        span: Span,
    ) -> Result<Value, EncodeError> {
        let Some(heap) = self.heap.clone() else {
            return Err(unsupported("a heap read in a pure context", span));
        };
        if let Some(mask) = &self.mask {
            let held = mask.amount(&r, &i).gt(real(0));
            self.require(held, ObligationKind::InsufficientPermission, span);
        }
        let kind = self.decls.world.heap_kind(&ty, span)?;
        Ok(value_of(&ty, heap.read(kind, &r, &i)))
    }

    /// `perm(loc)`: the amount of permission to `loc` held where it is evaluated (VerCors'
    /// `perm`; zero where none is held). Read from the mask, so only where there is one: in
    /// a method's code and contracts, not in a pure function's definition.
    fn current_permission(&mut self, loc: &Expr, span: Span) -> Result<Value, EncodeError> {
        let Some(mask) = self.mask.clone() else {
            return Err(unsupported(
                "`perm(..)` where no permissions are tracked (a pure function's body or \
                 contract)",
                span,
            ));
        };
        let (r, i, _) = self.permission_location(loc)?;
        Ok(perm(mask.amount(&r, &i)))
    }

    fn binary(
        &mut self,
        op: BinaryOp,
        lhs: &Expr,
        rhs: &Expr,
        span: Span,
    ) -> Result<Value, EncodeError> {
        use BinaryOp::*;
        Ok(match op {
            Add | Sub | Mul => {
                let (a, b) = (self.value(lhs)?, self.value(rhs)?);
                match (a.term, b.term) {
                    // The 1.x spelling of concatenation.
                    (Term::Seq(x), Term::Seq(y)) if op == Add => Value {
                        term: Term::Seq(Seq::concat(&[x, y])),
                        ty: a.ty,
                    },
                    // Union, difference, intersection.
                    (Term::Set(x), Term::Set(y)) => Value {
                        term: Term::Set(match op {
                            Add => Set::set_union(&[&x, &y]),
                            Sub => x.difference(&y),
                            _ => Set::intersect(&[&x, &y]),
                        }),
                        ty: a.ty,
                    },
                    // Sum, truncated difference and minimum of the multiplicities.
                    (Term::Bag(x), Term::Bag(y)) => Value {
                        term: Term::Bag(pointwise(&x, &y, |m, n| match op {
                            Add => Int::add(&[m, n]),
                            Sub => {
                                let d = Int::sub(&[m, n]);
                                let zero = Int::from_i64(0);
                                d.ge(&zero).ite(&d, &zero)
                            }
                            _ => m.le(&n).ite(&m, &n),
                        })),
                        ty: a.ty,
                    },
                    (Term::Int(x), Term::Int(y)) => {
                        let r = match op {
                            Add => Int::add(&[x, y]),
                            Sub => Int::sub(&[x, y]),
                            _ => {
                                let (product, uninterpreted) = self.decls.world.product(&x, &y);
                                self.uses_product |= uninterpreted;
                                product
                            }
                        };
                        self.require_int32(&r, op.symbol(), span);
                        Value::int(r)
                    }
                    (x, y) => {
                        let x = to_real(Value { term: x, ty: a.ty }, lhs.span)?;
                        let y = to_real(Value { term: y, ty: b.ty }, rhs.span)?;
                        perm(match op {
                            Add => Real::add(&[x, y]),
                            Sub => Real::sub(&[x, y]),
                            _ => Real::mul(&[x, y]),
                        })
                    }
                }
            }
            Div | Mod => {
                let (a, b) = (self.value(lhs)?, self.value(rhs)?);
                let (a, b) = match (a.term, b.term) {
                    (Term::Int(a), Term::Int(b)) => (a, b),
                    // A fraction divided, `1\2 / N`: exact division, as `\`.
                    (x, y) if op == Div => {
                        let x = to_real(Value { term: x, ty: a.ty }, lhs.span)?;
                        let y = to_real(Value { term: y, ty: b.ty }, rhs.span)?;
                        return Ok(self.quotient(x, y, rhs.span));
                    }
                    (Term::Int(_), _) => return Err(ill_sorted("int", &b.ty, rhs.span)),
                    _ => return Err(ill_sorted("int", &a.ty, lhs.span)),
                };
                self.require(
                    b.eq(Int::from_i64(0)).not(),
                    ObligationKind::DivisionByZero,
                    rhs.span,
                );
                if self.int32.is_some() {
                    let zero = Int::from_i64(0);
                    for (x, at) in [(&a, lhs.span), (&b, rhs.span)] {
                        self.require_noted(
                            x.ge(&zero),
                            ObligationKind::NegativeDivOperand,
                            at,
                            Some(format!("an operand of `{}` may be negative", op.symbol())),
                        );
                    }
                }
                let agreed = Bool::and(&[a.ge(Int::from_i64(0)), b.gt(Int::from_i64(0))]);
                let w = self.decls.world;
                let (exact, other) = if op == Div {
                    (a.div(&b), &w.div_other)
                } else {
                    (a.modulo(&b), &w.mod_other)
                };
                let other = other
                    .apply(&[&a as &dyn Ast, &b as &dyn Ast])
                    .as_int()
                    .expect("int function");
                let r = agreed.ite(&exact, &other);
                self.require_int32(&r, op.symbol(), span);
                Value::int(r)
            }
            FracDiv => {
                let (a, b) = (self.real(lhs)?, self.real(rhs)?);
                self.quotient(a, b, rhs.span)
            }
            Lt | Le | Gt | Ge => {
                let (a, b) = (self.value(lhs)?, self.value(rhs)?);
                Value::bool(match (a.term, b.term) {
                    (Term::Int(x), Term::Int(y)) => compare(op, &x, &y),
                    // Subset (`<=`), strict subset (`<`), and their mirrors.
                    (Term::Set(x), Term::Set(y)) => {
                        let (small, big) = if matches!(op, Lt | Le) {
                            (x, y)
                        } else {
                            (y, x)
                        };
                        let subset = small.set_subset(&big);
                        match op {
                            Lt | Gt => Bool::and(&[subset, small.eq(&big).not()]),
                            _ => subset,
                        }
                    }
                    // Sub-bag: no element more often.
                    (Term::Bag(x), Term::Bag(y)) => {
                        let (small, big) = if matches!(op, Lt | Le) {
                            (x, y)
                        } else {
                            (y, x)
                        };
                        let sort = small.get_sort().array_domain().expect("a bag sort");
                        let e = Dynamic::fresh_const("elem", &sort);
                        let count = |b: &Array| b.select(&e).as_int().expect("a multiplicity");
                        let within = ast::forall_const(
                            &[&e as &dyn Ast],
                            &[],
                            &count(&small).le(count(&big)),
                        );
                        match op {
                            Lt | Gt => Bool::and(&[within, small.eq(&big).not()]),
                            _ => within,
                        }
                    }
                    (x, y) => {
                        let x = to_real(Value { term: x, ty: a.ty }, lhs.span)?;
                        let y = to_real(Value { term: y, ty: b.ty }, rhs.span)?;
                        compare_real(op, &x, &y)
                    }
                })
            }
            Eq | Neq => {
                // 1.x `\typeof(e) == C`: the bare name is the class (where nothing local has
                // that name; the type checker decided the same).
                let class = Expr::class_compared_with_typeof(lhs, rhs)
                    .filter(|c| !self.names_a_value(&c.name));
                let value = |ev: &mut Self, side: &Expr| match (class, &side.kind) {
                    (Some(c), ExprKind::Name(n)) if n.name == c.name => ev.class_value(c),
                    _ => ev.value(side),
                };
                let (l, r) = (value(self, lhs)?, value(self, rhs)?);
                let (a, b) = unify(self.decls.world, l, r, rhs.span)?;
                if let (Term::Seq(x), Term::Seq(y), Ty::Seq(_)) = (&a.term, &b.term, &a.ty) {
                    // Extensionality for this pair: equal when the lengths and every cell
                    // agree. Valid; used where `x == y` is to be proved, its negation then
                    // names a cell where they differ (a `seq_at` term the cell facts match).
                    let zero = Int::from_i64(0);
                    let i = Int::fresh_const("i");
                    let (xi, yi) = (self.seq_at(x, &i), self.seq_at(y, &i));
                    let cells = z3::ast::forall_const(
                        &[&i as &dyn Ast],
                        &[],
                        &Bool::and(&[i.ge(&zero), i.lt(x.length())]).implies(xi.eq(&yi)),
                    );
                    let same = Bool::and(&[x.length().eq(y.length()), cells]);
                    self.definitions.push(same.implies(x.eq(y)));
                }
                let eq = match (&a.term, &b.term) {
                    (Term::Int(x), Term::Int(y)) => x.eq(y),
                    (Term::Bool(x), Term::Bool(y)) => x.iff(y),
                    (Term::Real(x), Term::Real(y)) => x.eq(y),
                    (Term::Ref(x), Term::Ref(y)) => x.eq(y),
                    (Term::Seq(x), Term::Seq(y)) => x.eq(y),
                    (Term::Set(x), Term::Set(y)) => x.eq(y),
                    (Term::Map(x), Term::Map(y)) => x.entries.eq(&y.entries),
                    (Term::Bag(x), Term::Bag(y)) => x.eq(y),
                    (Term::Tuple(x), Term::Tuple(y)) => x.eq(y),
                    _ => return Err(ill_sorted("equal sorts", &b.ty, span)),
                };
                Value::bool(if op == Eq { eq } else { eq.not() })
            }
            And | Star | Implies => {
                let a = self.bool(lhs)?;
                self.guards.push(a.clone());
                let b = self.bool(rhs);
                self.guards.pop();
                let b = b?;
                Value::bool(if op == Implies {
                    a.implies(&b)
                } else {
                    Bool::and(&[a, b])
                })
            }
            Or => {
                let a = self.bool(lhs)?;
                self.guards.push(a.not());
                let b = self.bool(rhs);
                self.guards.pop();
                Value::bool(Bool::or(&[a, b?]))
            }
            In => {
                let x = self.value(lhs)?.term.as_dynamic();
                match self.value(rhs)?.term {
                    Term::Set(s) => Value::bool(s.member(&x)),
                    Term::Seq(s) => Value::bool(s.contains(Seq::unit(&x))),
                    // A key of the map; a bag gives the multiplicity.
                    Term::Map(m) => Value::bool(m.keys.member(&x)),
                    Term::Bag(b) => Value::int(b.select(&x).as_int().expect("a multiplicity")),
                    _ => {
                        return Err(unsupported(
                            "`in` on something other than a sequence, a set, a bag or a map",
                            rhs.span,
                        ))
                    }
                }
            }
            Concat => {
                let a = self.value(lhs)?;
                let b = self.value(rhs)?;
                match (&a.term, &b.term, &a.ty) {
                    // Two sequences of one sort: concatenated; `s ++ x` with `x` of the element
                    // sort: appended (by sort, so `ss ++ s` appends a sequence to a sequence
                    // of sequences).
                    (Term::Seq(x), _, Ty::Seq(_)) => {
                        let y = b.term.as_dynamic();
                        let tail = if y.get_sort() == x.get_sort() {
                            y.as_seq().expect("a sequence")
                        } else {
                            let unit = Seq::unit(&y);
                            if unit.get_sort() != x.get_sort() {
                                return Err(ill_sorted(
                                    "a sequence or an element",
                                    &b.ty,
                                    rhs.span,
                                ));
                            }
                            unit
                        };
                        Value {
                            term: Term::Seq(Seq::concat(&[x.clone(), tail])),
                            ty: a.ty,
                        }
                    }
                    // `m ++ (k, v)`: the entry added (or replaced).
                    (Term::Map(m), Term::Tuple(t), _) => {
                        let (k, v) = self.tuple_parts(t, &b.ty, rhs.span)?;
                        Value {
                            term: Term::Map(MapTerm {
                                entries: m
                                    .entries
                                    .store(&k.term.as_dynamic(), &Seq::unit(&v.term.as_dynamic())),
                                keys: m.keys.add(&k.term.as_dynamic()),
                            }),
                            ty: a.ty,
                        }
                    }
                    _ => {
                        return Err(unsupported(
                            "`++` on something other than sequences (or a map and a pair)",
                            span,
                        ))
                    }
                }
            }
            Cons => {
                let x = self.value(lhs)?;
                let (s, ty) = self.seq(rhs)?;
                let cons = Seq::concat(&[Seq::unit(&x.term.as_dynamic()), s.clone()]);
                // Its tail, as `.tail` builds it, is `s`: an equation in the E-graph, where
                // the sequence solver would have to derive it from the extract's axioms.
                let rest = Int::sub(&[cons.length(), Int::from_i64(1)]);
                self.facts
                    .push(seq_extract(&cons, &Int::from_i64(1), &rest).eq(&s));
                Value {
                    term: Term::Seq(cons),
                    ty,
                }
            }
        })
    }

    /// `\typeof(e)` of an object: its class's number (PVL has no subclasses, so the class `e`
    /// is declared with), and where `e` is null a number nothing fixes (`typeof null`).
    fn type_of(&mut self, e: &Expr) -> Result<Value, EncodeError> {
        let v = self.value(e)?;
        let (Ty::Object(class), Term::Ref(r)) = (&v.ty, &v.term) else {
            return Err(unsupported(
                "`\\typeof` of something other than an object",
                e.span,
            ));
        };
        let Some(n) = self.decls.program.and_then(|p| p.class_number(class)) else {
            return Err(unsupported(
                "`\\typeof` of an object of no known class",
                e.span,
            ));
        };
        let of_null = Int::new_const("typeof null");
        let null = self.decls.world.null.clone();
        Ok(Value::int(r.eq(&null).ite(&of_null, &Int::from_i64(n))))
    }

    /// `\type(C)`: the class's number.
    fn class_value(&mut self, c: &crate::syntax::Ident) -> Result<Value, EncodeError> {
        match self.decls.program.and_then(|p| p.class_number(&c.name)) {
            Some(n) => Ok(Value::int(Int::from_i64(n))),
            None => Err(unsupported(format!("the class `{}`", c.name), c.span)),
        }
    }

    /// For a `\forall` (not `\forall*`): its body, with the binders bound
    /// and its ranges and condition pushed as guards, so that the caller's [`Eval::close`]
    /// quantifies over the enclosing binders and these in one flat quantifier (Z3 does not
    /// pull nested quantifiers itself: a par region's quantifier over a thread's `\forall`
    /// would leave the thread index to be guessed). `None` for anything else, with nothing
    /// bound. The caller restores the scopes.
    pub fn open_forall(&mut self, e: &Expr) -> Result<Option<Bool>, EncodeError> {
        let ExprKind::Quantifier(q) = &e.kind else {
            return Ok(None);
        };
        if q.kind != QuantifierKind::Forall
            || !q.binders.iter().all(|b| b.ty.kind == TypeKind::Int)
            || has_trigger(&q.body)
        {
            // With the user's triggers, the quantifier as written: they are its patterns.
            return Ok(None);
        }
        self.open_quantifier(q)?;
        self.bool(&q.body).map(Some)
    }

    /// Binds the `int` binders of `q` (unsupported otherwise) and pushes their ranges and its
    /// condition as guards; returns the bound constants and those guards. The caller restores
    /// the scopes.
    fn open_quantifier(
        &mut self,
        q: &crate::syntax::Quantifier,
    ) -> Result<(Vec<Int>, Vec<Bool>), EncodeError> {
        let mut xs = Vec::new();
        let mut range = Vec::new();
        for b in &q.binders {
            if b.ty.kind != TypeKind::Int {
                return Err(unsupported(
                    "a quantifier over a binder that is not an `int`",
                    b.ty.span,
                ));
            }
            // As in the type checker: a binder's range sees the earlier binders, not itself.
            let r = match &b.range {
                Some((lo, hi)) => Some((self.int(lo)?, self.int(hi)?)),
                None => None,
            };
            let x = self.bind_quantified(&b.name.name);
            if let Some((lo, hi)) = r {
                let g = Bool::and(&[lo.le(&x), x.lt(&hi)]);
                self.guards.push(g.clone());
                range.push(g);
            }
            xs.push(x);
        }
        if let Some(c) = &q.cond {
            let c = self.bool(c)?;
            self.guards.push(c.clone());
            range.push(c);
        }
        Ok((xs, range))
    }

    /// `∀xs. guard ⇒ body` or `∃xs. guard ∧ body`; the caller restores the scopes.
    fn quantifier(
        &mut self,
        q: &crate::syntax::Quantifier,
        is_forall: bool,
    ) -> Result<Bool, EncodeError> {
        if !q.binders.iter().all(|b| b.ty.kind == TypeKind::Int) {
            return self.quantifier_over_values(q, is_forall);
        }
        let triggers = self.triggers.len();
        let (xs, range) = self.open_quantifier(q)?;
        let facts = self.size_facts.len();
        let body = self.bool(&q.body)?;
        let body = self.with_size_facts(facts, body, is_forall);
        let guard = Bool::and(&range);
        // Not through `quantified`: handing it the binders as `Dynamic` copies (the same
        // terms) changed Z3's search, and two optimised examples (`allocate_and_fill`
        // linearised, `pairs_in_groups` fused) came back unknown.
        let bounds: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
        let patterns = user_patterns(&bounds, self.limited_triggers(triggers));
        let patterns: Vec<&z3::Pattern> = patterns.iter().collect();
        Ok(if is_forall {
            ast::forall_const(&bounds, &patterns, &guard.implies(&body))
        } else {
            ast::exists_const(&bounds, &patterns, &Bool::and(&[guard, body]))
        })
    }

    /// A `\forall`/`\exists` with a binder of another type than `int` (`\forall T e;` over a
    /// type parameter, `\forall seq<int> s;`, `\forall boolean b;`): every binder is a fresh
    /// constant of its sort, quantified here. They stay out of [`Eval::bound`], the binders
    /// that checks inside the body are closed over: there they are free constants no fact
    /// mentions, which a validity check treats as universally quantified all the same.
    /// Binder types whose sort holds values outside the type (options, fractions) and ranges
    /// (`T x = a .. b` is for integers) are refused.
    fn quantifier_over_values(
        &mut self,
        q: &crate::syntax::Quantifier,
        is_forall: bool,
    ) -> Result<Bool, EncodeError> {
        let mut xs: Vec<Dynamic> = Vec::new();
        let mut finite: Vec<Bool> = Vec::new();
        for b in &q.binders {
            let ty = ty_of(&b.ty)?;
            // Options, maps and bags are normalised terms over fresh constants, not one constant.
            if b.range.is_some()
                || matches!(ty, Ty::Perm | Ty::Option(_) | Ty::Map(..) | Ty::Bag(_))
            {
                return Err(unsupported(
                    "a quantifier over a binder of this type (binders may be integers, \
                     booleans, references, sequences and sets; ranges `a .. b` only for \
                     integers)",
                    b.ty.span,
                ));
            }
            let v = self.decls.world.fresh(&b.name.name, &ty);
            xs.push(v.term.as_dynamic());
            // PVL's sets are finite: so are the ones a quantifier ranges over.
            if let Term::Set(s) = &v.term {
                finite.push(finite_set(s));
            }
            self.scopes.push((b.name.name.clone(), v));
        }
        let cond = match &q.cond {
            Some(c) => {
                let c = self.bool(c)?;
                self.guards.push(c.clone());
                c
            }
            None => Bool::from_bool(true),
        };
        let cond = if finite.is_empty() {
            cond
        } else {
            finite.push(cond);
            Bool::and(&finite)
        };
        let facts = self.size_facts.len();
        let triggers = self.triggers.len();
        let body = self.bool(&q.body)?;
        let body = self.with_size_facts(facts, body, is_forall);
        let bounds: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
        let patterns = user_patterns(&bounds, self.limited_triggers(triggers));
        Ok(quantified(is_forall, &xs, &patterns, cond, body))
    }

    /// `s[i -> v]` as a concatenation of `s`'s parts around `v`, with the fact giving its
    /// cells (`v` at `i`, `s[j]` elsewhere) among the definitions.
    fn seq_update(&mut self, s: &Seq, i: &Int, v: &Dynamic) -> Seq {
        let len = s.length();
        let one = Int::from_i64(1);
        let after = Int::add(&[i.clone(), one.clone()]);
        let rest = Int::sub(&[len.clone(), after.clone()]);
        let term = Seq::concat(&[
            seq_extract(s, &Int::from_i64(0), i),
            Seq::unit(v),
            seq_extract(s, &after, &rest),
        ]);
        // The update's cells, `v` at `i` and `s[j]` elsewhere, as one fact about this
        // term (the three-part concatenation matches none of the binary indexing
        // axioms); valid whatever `i` is, as it is guarded by `i`'s range.
        // A term Z3 cannot take in a pattern (a value read after a conditional write
        // holds an `ite`) is named, and the fact given about the name.
        let zero = Int::from_i64(0);
        let j = Int::fresh_const("j");
        let named = if super::state::pattern_safe(&Dynamic::from_ast(&term)) {
            term.clone()
        } else {
            let name = Dynamic::fresh_const("update", &term.get_sort())
                .as_seq()
                .expect("a constant of a sequence sort is a sequence");
            self.definitions.push(name.eq(&term));
            name
        };
        let cell = self.seq_at(&named, &j);
        let old = self.seq_at(s, &j);
        let in_range = Bool::and(&[i.ge(&zero), i.lt(&len), j.ge(&zero), j.lt(&len)]);
        let body = in_range.implies(cell.eq(j.eq(i).ite(v, &old)));
        self.definitions
            .push(super::state::forall_on(&[&j as &dyn Ast], &cell, &body));
        term
    }

    /// The tail of `term`, the update `s[i -> v]`: the tail's update one cell to the left, at
    /// 0 the tail itself (an axiom of Viper's and Dafny's sequences). What relates a recursive
    /// function's unfolding at `xs[i -> e]`, whose rest is `.tail` of it, to a lemma about
    /// `xs.tail[i-1 -> e]`.
    fn update_tail_facts(&mut self, s: &Seq, i: &Int, v: &Dynamic, term: &Seq) {
        let (zero, one) = (Int::from_i64(0), Int::from_i64(1));
        let len = s.length();
        let tail = |q: &Seq| seq_extract(q, &one, &Int::sub(&[q.length(), one.clone()]));
        let left = Int::sub(&[i.clone(), one.clone()]);
        let tail_update = self.seq_update(&tail(s), &left, v);
        self.definitions
            .push(Bool::and(&[i.ge(&one), i.lt(&len)]).implies(tail(term).eq(&tail_update)));
        self.definitions
            .push(Bool::and(&[i.eq(&zero), zero.lt(&len)]).implies(tail(term).eq(tail(s))));
    }

    /// The triggers met since the first `from` (taken out of the list), each with every
    /// application of a pure function replaced by its limited twin, as Viper's back ends do:
    /// every application the encoding builds comes with its twin (`full = limited`), and the
    /// unfolding of a recursive definition builds only the twin (`count(xs.tail, e)` inside
    /// `count(xs, e)`), so a fact about `count(ys, q)` is instantiated where an unfolding
    /// reached `ys` too — a lemma's postcondition at the terms of the definition it is
    /// about. (A pattern says only when to instantiate: never a different meaning.)
    fn limited_triggers(&mut self, from: usize) -> Vec<(Option<u32>, Dynamic)> {
        let triggers = self.triggers.split_off(from);
        let (Some(functions), Some(program)) = (self.decls.functions, self.decls.program) else {
            return triggers;
        };
        // Only the recursive ones: another function's twin is built from its applications
        // alone, one step later, and Z3 then instantiated less eagerly (the index lemmas of
        // `verifythis/2024/challenge1` went from 9 s to past 100 s).
        let twins: HashMap<String, &FuncDecl> = (program.self_recursive.iter())
            .filter_map(|name| functions.get(name))
            .map(|f| (f.full.name(), &f.limited))
            .collect();
        if twins.is_empty() {
            return triggers;
        }
        triggers
            .into_iter()
            .map(|(group, t)| (group, with_limited_twins(&t, &twins)))
            .collect()
    }

    /// A quantifier's `body` with the size facts gathered while it was encoded (from
    /// `facts` on) as its hypotheses (`\forall`) or conjuncts (`\exists`): they may be
    /// about its binders. The body itself where there are none.
    fn with_size_facts(&mut self, facts: usize, body: Bool, is_forall: bool) -> Bool {
        if self.size_facts.len() == facts {
            return body;
        }
        let known = Bool::and(&self.size_facts.split_off(facts));
        if is_forall {
            known.implies(&body)
        } else {
            Bool::and(&[known, body])
        }
    }

    /// `(\sum int k; cond; body)`: the sum of `body` over the integers k in [lo, hi) that
    /// `cond` (or the binder's `lo .. hi`) bounds, filtered by the rest of `cond`. A range of
    /// known length is summed out term by term; otherwise it is `sum(λk. filter ? body : 0, lo,
    /// hi)` (see `World::sum_axioms`). The caller restores the scopes.
    fn sum(&mut self, q: &crate::syntax::Quantifier, span: Span) -> Result<Int, EncodeError> {
        let [binder] = q.binders.as_slice() else {
            return Err(unsupported("`\\sum` over more than one binder", span));
        };
        if binder.ty.kind != TypeKind::Int {
            return Err(unsupported(
                "`\\sum` over a binder that is not an `int`",
                binder.ty.span,
            ));
        }
        let k = binder.name.name.as_str();
        let mut filter: Vec<&Expr> = Vec::new();
        let (lo, hi) = match &binder.range {
            Some((lo, hi)) => {
                filter.extend(q.cond.iter());
                (self.int(lo)?, self.int(hi)?)
            }
            None => {
                let mut conjuncts = Vec::new();
                if let Some(c) = &q.cond {
                    c.flatten_and(&mut conjuncts);
                }
                let mut lo = None;
                let mut hi = None;
                for c in conjuncts {
                    match range_bound(c, k) {
                        Some((Bound::Lower, e, shift)) if lo.is_none() => lo = Some((e, shift)),
                        Some((Bound::Upper, e, shift)) if hi.is_none() => hi = Some((e, shift)),
                        _ => filter.push(c),
                    }
                }
                let (Some((lo, lo_shift)), Some((hi, hi_shift))) = (lo, hi) else {
                    return Err(unsupported(
                        "a `\\sum` whose condition does not bound its binder from both sides \
                         (write `lo <= k && k < hi && ...`)",
                        span,
                    ));
                };
                let lo = self.int(lo)? + Int::from_i64(lo_shift);
                let hi = self.int(hi)? + Int::from_i64(hi_shift);
                (lo, hi)
            }
        };
        let x = self.bind_quantified(k);
        self.guards.push(Bool::and(&[lo.le(&x), x.lt(&hi)]));
        let mut kept = Vec::new();
        for c in filter {
            let c = self.bool(c)?;
            self.guards.push(c.clone());
            kept.push(c);
        }
        let body = self.int(&q.body)?;
        let term = Bool::and(&kept).ite(&body, &Int::from_i64(0));
        // Substituted rather than selected from the lambda: lambdas leave Z3's array theory
        // incomplete, so a wrong claim would come back unknown instead of failed.
        const UNROLLED: i64 = 256;
        if let (Some(l), Some(h)) = (lo.simplify().as_i64(), hi.simplify().as_i64()) {
            if h.saturating_sub(l) <= UNROLLED {
                let terms: Vec<Int> = (l..h)
                    .map(|i| term.substitute(&[(&x, &Int::from_i64(i))]))
                    .collect();
                return Ok(if terms.is_empty() {
                    Int::from_i64(0)
                } else {
                    Int::add(&terms.iter().collect::<Vec<_>>())
                });
            }
        }
        let summand = ast::lambda_const(&[&x as &dyn Ast], &Dynamic::from_ast(&term));
        self.uses_sum = true;
        Ok(self
            .decls
            .world
            .sum
            .apply(&[&summand as &dyn Ast, &lo, &hi])
            .as_int()
            .expect("sum returns an int"))
    }

    /// The location `base[index]` or `base.f`, with the checks that it exists: reference not
    /// null and, for cells, index within bounds. Returns (reference, index, value type).
    pub fn location(&mut self, e: &Expr) -> Result<(Dynamic, Int, Ty), EncodeError> {
        self.location_with(e, None, true)
    }

    /// `Perm(loc, p)` or `Value(loc)` read as "`loc` holds the same value in the current heap
    /// as in `other`" ([`Eval::unchanged_in`]); `a[*]` as every cell of `a` (its quantified
    /// form, whose atoms come back here).
    fn unchanged_location(
        &mut self,
        op: Builtin,
        args: &[Expr],
        other: &Heap,
        span: Span,
    ) -> Result<Value, EncodeError> {
        if let Some(quantified) = assertion::every_cell(op, args) {
            return self.value(&quantified);
        }
        let Some(target) = args.first() else {
            return Err(unsupported(
                format!("`{}` without a location", op.spelling()),
                span,
            ));
        };
        let (r, i, ty) = self.permission_location(target)?;
        let kind = self.decls.world.heap_kind(&ty, target.span)?;
        let heap = self
            .heap
            .as_ref()
            .ok_or_else(|| unsupported("a heap location in a pure context", target.span))?;
        Ok(Value::bool(
            heap.read(kind, &r, &i).eq(other.read(kind, &r, &i)),
        ))
    }

    /// [`Eval::location`] as a permission names it (`Perm(loc, p)`, `PointsTo`, `Value`): the
    /// receiver of a field is not required to be non-null. As in Viper (and VerCors), a
    /// positive permission to `x.f` implies `x != null` where it is inhaled, and no
    /// permission is ever held at null, so an exhale of one fails; the caller assumes the
    /// former.
    pub fn permission_location(&mut self, e: &Expr) -> Result<(Dynamic, Int, Ty), EncodeError> {
        self.location_with(e, None, false)
    }

    /// [`Eval::location`] where the base of `e` may already be evaluated; `receiver_checked`:
    /// whether a field's receiver must be non-null.
    fn location_with(
        &mut self,
        e: &Expr,
        base_value: Option<Value>,
        receiver_checked: bool,
    ) -> Result<(Dynamic, Int, Ty), EncodeError> {
        match &e.peel_triggers().kind {
            ExprKind::Index { base, index } => {
                let b = match base_value {
                    Some(b) => b,
                    None => self.value(base)?,
                };
                let (r, ty) = match b.term {
                    Term::Ref(r) => (r, b.ty),
                    _ => return Err(ill_sorted("an array", &b.ty, base.span)),
                };
                let Ty::Array(elem) = ty else {
                    return Err(unsupported(
                        "indexing something other than an array (sequences are not encoded yet)",
                        e.span,
                    ));
                };
                let i = self.int(index)?;
                let w = self.decls.world;
                self.require(
                    r.eq(&w.null).not(),
                    ObligationKind::NullDereference,
                    base.span,
                );
                self.require(
                    i.ge(Int::from_i64(0)),
                    ObligationKind::IndexNegative,
                    index.span,
                );
                self.require(
                    i.lt(w.len_of(&r)),
                    ObligationKind::IndexTooLarge,
                    index.span,
                );
                Ok((r, i, *elem))
            }
            ExprKind::Field { base, name } => {
                let b = match base_value {
                    Some(b) => b,
                    None => self.value(base)?,
                };
                let (r, ty) = match b.term {
                    Term::Ref(r) => (r, b.ty),
                    _ => return Err(ill_sorted("an object", &b.ty, base.span)),
                };
                let Ty::Object(class) = &ty else {
                    return Err(unsupported("this field access", e.span));
                };
                let info = self
                    .decls
                    .program
                    .and_then(|p| p.field(class, &name.name))
                    .ok_or_else(|| unsupported(format!("the field `{}`", name.name), e.span))?
                    .clone();
                if receiver_checked {
                    let w = self.decls.world;
                    self.require(
                        r.eq(&w.null).not(),
                        ObligationKind::NullDereference,
                        base.span,
                    );
                }
                Ok((r, Int::from_i64(info.index), info.ty))
            }
            ExprKind::Name(id) if !self.store.contains_key(&id.name) => {
                match self.field_of_this(&id.name, e.span) {
                    Some(loc) => Ok(loc),
                    None => Err(unsupported(
                        "a permission to something other than an array cell or a field",
                        e.span,
                    )),
                }
            }
            _ => Err(unsupported(
                "a permission to something other than an array cell or a field",
                e.span,
            )),
        }
    }

    fn read_at(
        &mut self,
        e: &Expr,
        base_value: Option<Value>,
        span: Span,
    ) -> Result<Value, EncodeError> {
        if self.heap.is_none() {
            return Err(unsupported("a heap read in a pure context", span));
        }
        let (r, i, ty) = self.location_with(e, base_value, true)?;
        self.read_location(r, i, ty, span)
    }

    /// `\values(a, from, to)`: a sequence `s` with `|s| == to - from` and `s[j] == a[from + j]`,
    /// where `a` is not null, `0 <= from <= to <= a.length` and each of those cells is held
    /// (each is read). A fresh constant and its definition, which holds where those checks
    /// do: so not under a quantifier, where one constant would stand for many sequences.
    fn values(
        &mut self,
        a: &Expr,
        from: &Expr,
        to: &Expr,
        span: Span,
    ) -> Result<Value, EncodeError> {
        if !self.bound.is_empty() {
            return Err(unsupported("`\\values` under a quantifier", span));
        }
        let Some(heap) = self.heap.clone() else {
            return Err(unsupported("`\\values` in a pure context", span));
        };
        let array = self.value(a)?;
        let (Term::Ref(r), Ty::Array(elem)) = (&array.term, &array.ty) else {
            return Err(ill_sorted("an array", &array.ty, a.span));
        };
        let (r, elem) = (r.clone(), (**elem).clone());
        let lo = self.int(from)?;
        let hi = self.int(to)?;
        let w = self.decls.world;
        let kind = w.heap_kind(&elem, span)?;
        let zero = Int::from_i64(0);
        let conditions = [
            (r.eq(&w.null).not(), ObligationKind::NullDereference, a.span),
            (zero.le(&lo), ObligationKind::IndexNegative, from.span),
            (lo.le(&hi), ObligationKind::IndexNegative, span),
            (hi.le(w.len_of(&r)), ObligationKind::IndexTooLarge, to.span),
        ];
        for (condition, kind, at) in &conditions {
            self.require(condition.clone(), *kind, *at);
        }
        if let Some(mask) = &self.mask {
            let j = Int::fresh_const("j");
            let amount = mask.amount(&r, &j);
            let held = Bool::and(&[lo.le(&j), j.lt(&hi)]).implies(amount.gt(real(0)));
            let held = super::state::forall_on(&[&j as &dyn Ast], &amount, &held);
            self.require(held, ObligationKind::InsufficientPermission, span);
        }
        let s = Seq::fresh_const("values", &w.sort_of(&elem));
        let j = Int::fresh_const("j");
        let at = self.seq_at(&s, &j);
        let cell = heap.read(kind, &r, &Int::add(&[lo.clone(), j.clone()]));
        let length = Int::sub(&[hi.clone(), lo.clone()]);
        let cells = super::state::forall_on(
            &[&j as &dyn Ast],
            &at,
            &Bool::and(&[zero.le(&j), j.lt(&length)]).implies(at.eq(&cell)),
        );
        let defined = Bool::and(&conditions.map(|(condition, ..)| condition));
        let fact = defined.implies(Bool::and(&[s.length().eq(&length), cells]));
        let fact = self.close(&fact);
        self.facts.push(fact);
        Ok(Value {
            term: Term::Seq(s),
            ty: Ty::Seq(Box::new(elem)),
        })
    }

    fn field(
        &mut self,
        e: &Expr,
        base: &Expr,
        name: &str,
        span: Span,
    ) -> Result<Value, EncodeError> {
        let b = self.value(base)?;
        match &b.term {
            Term::Ref(r) if name == "length" && matches!(b.ty, Ty::Array(_)) => {
                let w = self.decls.world;
                self.require(
                    r.eq(&w.null).not(),
                    ObligationKind::NullDereference,
                    base.span,
                );
                Ok(Value::int(w.len_of(r)))
            }
            Term::Ref(_) => self.read_at(e, Some(b), span),
            _ => self.value_member(&b, name, span),
        }
    }

    /// A member of a value (not a heap location): of an option, a sequence, a set, a bag, a
    /// map or a tuple; also what the 1.x calls `isEmpty(s)`, `head(s)`, `tail(s)` read.
    fn value_member(&mut self, b: &Value, name: &str, span: Span) -> Result<Value, EncodeError> {
        match &b.term {
            Term::Seq(s) if matches!(b.ty, Ty::Option(_)) => {
                self.option_member(s, &b.ty, name, None, span)
            }
            Term::Seq(s) => self.seq_member(s, &b.ty, name, span),
            Term::Set(s) if name == "isEmpty" => {
                let sort = s.get_sort().array_domain().expect("a set sort");
                Ok(Value::bool(s.eq(Set::empty(&sort))))
            }
            Term::Set(s) if name == "size" => Ok(Value::int(self.set_size(s))),
            Term::Set(_) => Err(unsupported(format!("the set member `{name}`"), span)),
            Term::Bag(b) if name == "isEmpty" => {
                let sort = b.get_sort().array_domain().expect("a bag sort");
                Ok(Value::bool(
                    b.eq(Array::const_array(&sort, &Int::from_i64(0))),
                ))
            }
            Term::Bag(_) => Err(unsupported(
                format!("the bag member `{name}` (the size of a bag is not encoded yet)"),
                span,
            )),
            Term::Map(m) => self.map_member(m, &b.ty, name, &[], span),
            Term::Tuple(t) if name == "fst" || name == "snd" => {
                let (x, y) = self.tuple_parts(t, &b.ty, span)?;
                Ok(if name == "fst" { x } else { y })
            }
            _ => Err(unsupported(
                format!("the member `{name}` of a value of this type"),
                span,
            )),
        }
    }

    /// The 1.x sequence members `s.head`, `s.tail`, `s.isEmpty`, `s.size` and `s.length` (also
    /// written as calls).
    fn seq_member(
        &mut self,
        s: &Seq,
        ty: &Ty,
        name: &str,
        span: Span,
    ) -> Result<Value, EncodeError> {
        let len = s.length();
        let zero = Int::from_i64(0);
        match name {
            "isEmpty" => Ok(Value::bool(len.eq(&zero))),
            "size" | "length" => Ok(Value::int(len)),
            "head" => {
                let Ty::Seq(elem) = ty else {
                    return Err(ill_sorted("a sequence", ty, span));
                };
                self.require(len.gt(&zero), ObligationKind::IndexTooLarge, span);
                Ok(value_of(elem, self.seq_at(s, &zero)))
            }
            "tail" => {
                self.require(len.gt(&zero), ObligationKind::IndexTooLarge, span);
                let one = Int::from_i64(1);
                let rest = Int::sub(&[len, one.clone()]);
                Ok(Value {
                    term: Term::Seq(seq_extract(s, &one, &rest)),
                    ty: ty.clone(),
                })
            }
            _ => Err(unsupported(format!("the sequence member `{name}`"), span)),
        }
    }

    /// `o.get` (also `o.get()`, 1.x `getOption(o)`), with `o != None` checked, and
    /// `o.getOrElse(d)` (1.x `getOrElseOption(o, d)`).
    fn option_member(
        &mut self,
        o: &Seq,
        ty: &Ty,
        name: &str,
        default: Option<&Expr>,
        span: Span,
    ) -> Result<Value, EncodeError> {
        let Ty::Option(elem) = ty else {
            return Err(ill_sorted("an option", ty, span));
        };
        let zero = Int::from_i64(0);
        let some = o.length().gt(&zero);
        match (name, default) {
            ("get", None) => {
                self.require(some, ObligationKind::OptionMayBeNone, span);
                Ok(value_of(elem, o.nth(zero)))
            }
            ("getOrElse", Some(d)) => {
                let d = self.value(d)?;
                let got = value_of(elem, o.nth(zero));
                let (got, d) = unify(self.decls.world, got, d, span)?;
                Ok(Value {
                    term: Term::ite(&some, &got.term, &d.term),
                    ty: got.ty,
                })
            }
            _ => Err(unsupported(format!("the option member `{name}`"), span)),
        }
    }

    /// `Some(e)`, `None`, `o.get()`, `o.getOrElse(d)` and their 1.x spellings
    /// `getOption(o)`, `getOrElseOption(o, d)`; `None` when `name` is none of them.
    fn option_call(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Option<Result<Value, EncodeError>> {
        let (option, rest) = match (receiver, name, args) {
            (None, "Some", [e]) => {
                return Some(
                    self.value(e)
                        .and_then(|v| match v.ty {
                            Ty::Option(_) | Ty::Set(_) => Err(unsupported(
                                "an option of an option or of a set (options of int, boolean, \
                         references and sequences of those)",
                                e.span,
                            )),
                            _ => Ok(v),
                        })
                        .map(|v| Value {
                            term: Term::Seq(Seq::unit(&v.term.as_dynamic())),
                            // `Option(Null)` is the type of a `None` not typed yet: `Some(null)` is an
                            // option of some reference type (one sort for all of them).
                            ty: Ty::Option(Box::new(match v.ty {
                                Ty::Null => Ty::Object(String::new()),
                                ty => ty,
                            })),
                        }),
                );
            }
            (None, "None", []) => return Some(Ok(self.decls.world.typed_none(&Ty::Null))),
            (Some(o), "get" | "getOrElse", rest) => (o, rest),
            (None, "getOption" | "getOrElseOption", [o, rest @ ..]) => (o, rest),
            _ => return None,
        };
        let member = if name.starts_with("getOrElse") {
            "getOrElse"
        } else {
            "get"
        };
        Some((|| {
            let v = self.value(option)?;
            let (Term::Seq(o), Ty::Option(_)) = (&v.term, &v.ty) else {
                return Err(ill_sorted("an option", &v.ty, option.span));
            };
            self.option_member(o, &v.ty, member, rest.first(), span)
        })())
    }

    /// A map function written as a call: `m.add(k, v)`, `m.remove(k)`, `m.get(k)`,
    /// `m.disjoint(n)`, `m.equals(n)`, and the 1.x `buildMap(m, k, v)`, `getFromMap(m, k)`,
    /// `keysMap(m)`, ... (1.x `isEmpty(m)` is read by [`Eval::value_member`] with the other
    /// collections'); `None` when the subject is not a map or `name` is none of them.
    fn map_call(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Option<Result<Value, EncodeError>> {
        let (subject, rest) = match (receiver, args) {
            (Some(m), rest) => (m, rest),
            (None, [m, rest @ ..]) if name.ends_with("Map") => (m, rest),
            _ => return None,
        };
        let member = match name {
            "buildMap" => "add",
            "removeFromMap" => "remove",
            "getFromMap" => "get",
            "keysMap" => "keys",
            "valuesMap" => "values",
            "disjointMap" => "disjoint",
            "equalsMap" => "equals",
            "cardMap" => "size",
            "itemsMap" => "items",
            "add" | "remove" | "get" | "keys" | "values" | "disjoint" | "equals" | "isEmpty"
            | "size" | "items" => name,
            _ => return None,
        };
        // Only a map subject is taken; anything else goes on to the other built-ins.
        let ty_is_map = |v: &Value| matches!(v.term, Term::Map(_));
        let checks = self.checks.len();
        let v = match self.value(subject) {
            Ok(v) if ty_is_map(&v) => v,
            Ok(_) => {
                self.checks.truncate(checks);
                return None;
            }
            Err(e) => return Some(Err(e)),
        };
        let Term::Map(m) = &v.term else {
            unreachable!("checked above")
        };
        Some(self.map_member(m, &v.ty, member, rest, span))
    }

    /// A member of a map: `keys`, `values`, `isEmpty`, `size`, and with arguments `add`,
    /// `remove`, `get`, `disjoint`, `equals`. Its items (tuples) are refused.
    fn map_member(
        &mut self,
        m: &MapTerm,
        ty: &Ty,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<Value, EncodeError> {
        let Ty::Map(key_ty, value_ty) = ty else {
            return Err(ill_sorted("a map", ty, span));
        };
        let w = self.decls.world;
        let key_sort = w.sort_of(key_ty);
        let value_sort = w.sort_of(value_ty);
        let map = |entries: Array, keys: Set| Value {
            term: Term::Map(MapTerm { entries, keys }),
            ty: ty.clone(),
        };
        match (name, args) {
            ("keys", []) => Ok(Value {
                term: Term::Set(m.keys.clone()),
                ty: Ty::Set(key_ty.clone()),
            }),
            ("values", []) => {
                // `v` is a value iff some key is present with `v` as its entry.
                let v = Dynamic::fresh_const("value", &value_sort);
                let k = Dynamic::fresh_const("key", &key_sort);
                let entry = m.entries.select(&k).as_seq().expect("a map entry");
                let holds = Bool::and(&[m.keys.member(&k), entry.eq(Seq::unit(&v))]);
                let some_key = ast::exists_const(&[&k as &dyn Ast], &[], &holds);
                let values = ast::lambda_const(&[&v as &dyn Ast], &Dynamic::from_ast(&some_key));
                Ok(Value {
                    term: Term::Set(Dynamic::from_ast(&values).as_set().expect("a set")),
                    ty: Ty::Set(value_ty.clone()),
                })
            }
            ("isEmpty", []) => Ok(Value::bool(m.keys.eq(Set::empty(&key_sort)))),
            ("size", []) => Ok(Value::int(self.set_size(&m.keys))),
            ("add", [k, v]) => {
                let k = self.value(k)?.term.as_dynamic();
                let v = self.value(v)?.term.as_dynamic();
                Ok(map(m.entries.store(&k, &Seq::unit(&v)), m.keys.add(&k)))
            }
            ("remove", [k]) => {
                let k = self.value(k)?.term.as_dynamic();
                let none = Seq::empty(&value_sort);
                Ok(map(m.entries.store(&k, &none), m.keys.del(&k)))
            }
            ("get", [k]) => self.map_lookup(m, ty, k),
            ("disjoint" | "equals", [other]) => {
                let o = self.value(other)?;
                let Term::Map(o) = &o.term else {
                    return Err(ill_sorted("a map", &o.ty, other.span));
                };
                Ok(Value::bool(if name == "equals" {
                    m.entries.eq(&o.entries)
                } else {
                    Set::intersect(&[&m.keys, &o.keys]).eq(Set::empty(&key_sort))
                }))
            }
            ("items", []) => {
                // `(k, v)` is an item iff `k` is a key and `v` its value.
                let item_ty = Ty::Tuple(key_ty.clone(), value_ty.clone());
                let sort = w.tuple_sort(key_ty, value_ty);
                let t = Dynamic::fresh_const("item", &sort.sort);
                let (k, v) = self.tuple_parts(&t, &item_ty, span)?;
                let (k, v) = (k.term.as_dynamic(), v.term.as_dynamic());
                let entry = m.entries.select(&k).as_seq().expect("a map entry");
                let holds = Bool::and(&[m.keys.member(&k), entry.eq(Seq::unit(&v))]);
                let items = ast::lambda_const(&[&t as &dyn Ast], &Dynamic::from_ast(&holds));
                Ok(Value {
                    term: Term::Set(Dynamic::from_ast(&items).as_set().expect("a set")),
                    ty: Ty::Set(Box::new(item_ty)),
                })
            }
            _ => Err(unsupported(format!("the map member `{name}`"), span)),
        }
    }

    /// The two elements of the tuple `t` of type `ty`.
    fn tuple_parts(&self, t: &Dynamic, ty: &Ty, span: Span) -> Result<(Value, Value), EncodeError> {
        let Ty::Tuple(a, b) = ty else {
            return Err(ill_sorted("a tuple", ty, span));
        };
        let sort = self.decls.world.tuple_sort(a, b);
        let part = |k: usize| sort.variants[0].accessors[k].apply(&[t as &dyn Ast]);
        Ok((value_of(a, part(0)), value_of(b, part(1))))
    }

    /// `m[k]`, with `k` checked to be a key of `m`.
    fn map_lookup(&mut self, m: &MapTerm, ty: &Ty, key: &Expr) -> Result<Value, EncodeError> {
        let Ty::Map(_, value_ty) = ty else {
            return Err(ill_sorted("a map", ty, key.span));
        };
        let k = self.value(key)?.term.as_dynamic();
        self.require(m.keys.member(&k), ObligationKind::MapKeyAbsent, key.span);
        let entry = m.entries.select(&k).as_seq().expect("a map entry");
        Ok(value_of(value_ty, entry.nth(Int::from_i64(0))))
    }

    /// The map with no keys, of map type `ty`.
    fn empty_map(&self, ty: &Ty) -> MapTerm {
        let Ty::Map(key_ty, value_ty) = ty else {
            unreachable!("a map type")
        };
        let w = self.decls.world;
        let key_sort = w.sort_of(key_ty);
        MapTerm {
            entries: Array::const_array(&key_sort, &Seq::empty(&w.sort_of(value_ty))),
            keys: Set::empty(&key_sort),
        }
    }

    /// `|s|`, the number of elements of the set `s`, an uninterpreted `card(s)` with the facts
    /// that give it where `s` is built of literals, additions, removals, unions,
    /// intersections, differences and conditionals (walked on its Z3 term). Each fact is
    /// valid for every set under a finiteness guard `fin(..)` (`fin(∅)`, `fin(s) ⇒ fin(s ∪
    /// {x})`, `fin(s) ⇒ |s ∪ {x}| = |s| + (x ∈ s ? 0 : 1)`, ...): an array of Z3 may be an
    /// infinite set, where such laws fail. What is assumed of the set values the program
    /// holds (parameters, results, map keys: the leaves of the walk) is that they are finite,
    /// as every PVL set is; quantifiers over sets range over finite ones.
    fn set_size(&mut self, s: &Set) -> Int {
        let (card, fin) = set_size_functions(&s.get_sort());
        let card_of = |u: &Set| card.apply(&[u as &dyn Ast]).as_int().expect("an int");
        let fin_of = |u: &Set| fin.apply(&[u as &dyn Ast]).as_bool().expect("a boolean");
        let elem_sort = s.get_sort().array_domain().expect("a set sort");
        let empty = Set::empty(&elem_sort);
        let zero = Int::from_i64(0);
        let one = Int::from_i64(1);
        let mut seen: Vec<Dynamic> = Vec::new();
        let mut todo = vec![s.clone()];
        while let Some(u) = todo.pop() {
            let d = Dynamic::from_ast(&u);
            if seen.contains(&d) {
                continue;
            }
            seen.push(d.clone());
            let (n, f) = (card_of(&u), fin_of(&u));
            self.size_facts
                .push(f.implies(Bool::and(&[n.ge(&zero), n.eq(&zero).iff(u.eq(&empty))])));
            let kind = d.safe_decl().ok().map(|decl| decl.kind());
            let kids: Vec<Dynamic> = if kind.is_some() {
                d.children()
            } else {
                Vec::new()
            };
            let set = |k: &Dynamic| k.as_set().expect("a set");
            use z3::DeclKind;
            match (kind, kids.as_slice()) {
                (Some(DeclKind::ConstArray), [v])
                    if v.as_bool().and_then(|b| b.as_bool()) == Some(false) =>
                {
                    self.size_facts.push(Bool::and(&[f, n.eq(&zero)]));
                }
                (Some(DeclKind::Store), [a, x, v]) => {
                    let a = set(a);
                    let step = match v.as_bool().and_then(|b| b.as_bool()) {
                        Some(true) => Int::add(&[card_of(&a), a.member(x).ite(&zero, &one)]),
                        Some(false) => Int::sub(&[card_of(&a), a.member(x).ite(&one, &zero)]),
                        None => {
                            self.size_facts.push(f);
                            continue;
                        }
                    };
                    self.size_facts
                        .push(fin_of(&a).implies(Bool::and(&[f, n.eq(&step)])));
                    todo.push(a);
                }
                (Some(DeclKind::SetUnion), [a, b]) => {
                    let (a, b) = (set(a), set(b));
                    let both = Set::intersect(&[&a, &b]);
                    let sum = Int::add(&[n.clone(), card_of(&both)]);
                    let parts = Int::add(&[card_of(&a), card_of(&b)]);
                    self.size_facts.push(
                        Bool::and(&[fin_of(&a), fin_of(&b)])
                            .implies(Bool::and(&[f, sum.eq(&parts)])),
                    );
                    todo.extend([a, b, both]);
                }
                (Some(DeclKind::SetIntersect), [a, b]) => {
                    let (a, b) = (set(a), set(b));
                    for part in [&a, &b] {
                        self.size_facts.push(
                            fin_of(part).implies(Bool::and(&[f.clone(), n.le(card_of(part))])),
                        );
                    }
                    todo.extend([a, b]);
                }
                (Some(DeclKind::SetDifference), [a, b]) => {
                    let (a, b) = (set(a), set(b));
                    let both = Set::intersect(&[&a, &b]);
                    let sum = Int::add(&[n.clone(), card_of(&both)]);
                    self.size_facts
                        .push(fin_of(&a).implies(Bool::and(&[f, sum.eq(card_of(&a))])));
                    todo.extend([a, b, both]);
                }
                (Some(DeclKind::Ite), [c, a, b]) => {
                    let (a, b) = (set(a), set(b));
                    let c = c.as_bool().expect("a condition");
                    self.size_facts.push(Bool::and(&[
                        n.eq(c.ite(&card_of(&a), &card_of(&b))),
                        Bool::and(&[fin_of(&a), fin_of(&b)]).implies(&f),
                    ]));
                    todo.extend([a, b]);
                }
                // A set the program holds: finite.
                _ => self.size_facts.push(f),
            }
        }
        card_of(s)
    }

    /// Cell `i` of `s` ([`World::seq_at`]), its sort's axioms due with the next checks.
    fn seq_at(&mut self, s: &Seq, i: &Int) -> Dynamic {
        let sort = s.get_sort();
        if !self.indexed.iter().any(|x| x.get_sort() == sort) {
            self.indexed.push(s.clone());
        }
        self.decls.world.seq_at(s, i)
    }

    /// `s[i]`, with `0 <= i < |s|` checked.
    fn seq_index(&mut self, s: &Seq, ty: &Ty, index: &Expr) -> Result<Value, EncodeError> {
        let Ty::Seq(elem) = ty else {
            return Err(ill_sorted("a sequence", ty, index.span));
        };
        let i = self.int(index)?;
        self.require(
            i.ge(Int::from_i64(0)),
            ObligationKind::IndexNegative,
            index.span,
        );
        self.require(i.lt(s.length()), ObligationKind::IndexTooLarge, index.span);
        Ok(value_of(elem, self.seq_at(s, &i)))
    }

    /// A sequence-valued expression.
    fn seq(&mut self, e: &Expr) -> Result<(Seq, Ty), EncodeError> {
        let v = self.value(e)?;
        match v.term {
            Term::Seq(s) => Ok((s, v.ty)),
            _ => Err(unsupported(
                "this operation on something other than a sequence",
                e.span,
            )),
        }
    }

    fn old(&mut self, inner: &Expr, span: Span) -> Result<Value, EncodeError> {
        if self.old_is_now {
            return self.value(inner);
        }
        let Some(old) = self.old.clone() else {
            return Err(unsupported("`\\old` outside a postcondition", span));
        };
        // The pre-state's heap; variables are read as they are now, as in VerCors (Viper's
        // `old` is a heap's): a local declared since, a `yields` result. In a postcondition the
        // parameters are those of the entry already (`Verifier::exhale_post`).
        let saved = (self.heap.replace(old.heap), self.mask.replace(old.mask));
        let r = self.value(inner);
        self.heap = saved.0;
        self.mask = saved.1;
        r
    }

    fn apply(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<Value, EncodeError> {
        let Some(functions) = self.decls.functions else {
            return Err(unsupported("calls in a pure context", span));
        };
        if !functions.contains_key(name) {
            if let Some(v) = self.option_call(receiver, name, args, span) {
                return v;
            }
            if let Some(v) = self.map_call(receiver, name, args, span) {
                return v;
            }
        }
        if let (false, "contains", Some(s), [x]) =
            (functions.contains_key(name), name, receiver, args)
        {
            // `s.contains(x)`: `x in s`.
            return self.binary(BinaryOp::In, x, s, span);
        }
        if !functions.contains_key(name) && name == "removeAt" {
            // `s.removeAt(i)`, 1.x `removeAt(s, i)`: `s` without its element at `i`.
            let (seq_expr, index) = match (receiver, args) {
                (Some(s), [i]) => (s, i),
                (None, [s, i]) => (s, i),
                _ => return Err(unsupported("this form of `removeAt`", span)),
            };
            let (seq, ty) = self.seq(seq_expr)?;
            let i = self.int(index)?;
            let zero = Int::from_i64(0);
            self.require(i.ge(&zero), ObligationKind::IndexNegative, index.span);
            self.require(
                i.lt(seq.length()),
                ObligationKind::IndexTooLarge,
                index.span,
            );
            let one = Int::from_i64(1);
            let after = Int::add(&[i.clone(), one]);
            let rest = Int::sub(&[seq.length(), after.clone()]);
            let term = Seq::concat(&[
                seq_extract(&seq, &zero, &i),
                seq_extract(&seq, &after, &rest),
            ]);
            return Ok(Value {
                term: Term::Seq(term),
                ty,
            });
        }
        if !functions.contains_key(name)
            && matches!(name, "head" | "tail" | "isEmpty")
            && args.len() == 1
            && receiver.is_none()
        {
            let v = self.value(&args[0])?;
            return self.value_member(&v, name, span);
        }
        if !functions.contains_key(name) && name == "perm" && args.len() == 1 && receiver.is_none()
        {
            return self.current_permission(&args[0], span);
        }
        let Some(f) = functions.get(name) else {
            let predicate = self
                .decls
                .program
                .is_some_and(|p| inline::abstract_predicate(p, name).is_some());
            if predicate && self.permissions_as_true {
                match self.predicate_reading.clone() {
                    PredicateReading::Refused => {}
                    PredicateReading::True => return Ok(Value::bool(Bool::from_bool(true))),
                    PredicateReading::HeldIn(mask) => {
                        let (r, i, facts) = self.predicate_location(receiver, name, args, span)?;
                        self.facts.extend(facts);
                        return Ok(Value::bool(mask.amount(&r, &i).gt(real(0))));
                    }
                }
            }
            return Err(unsupported(
                if predicate {
                    format!(
                        "the predicate instance `{name}(..)` in a pure function's contract or \
                         inside an expression (a function over a folded predicate would need \
                         the predicate's snapshot)"
                    )
                } else if self
                    .decls
                    .program
                    .is_some_and(|p| p.functions().any(|f| f.method.name.name == name))
                {
                    format!(
                        "a call of the pure function `{name}`, whose parameter or result types \
                         are not encoded for functions (maps, bags, resources)"
                    )
                } else {
                    format!("a call of `{name}` inside an expression (only pure functions can be)")
                },
                span,
            ));
        };
        let mut dyns: Vec<Dynamic> = Vec::new();
        if f.reads_heap {
            let Some(heap) = &self.heap else {
                return Err(unsupported(
                    format!("a call of `{name}`, which reads the heap, where there is no heap"),
                    span,
                ));
            };
            dyns = heap.terms();
        }
        let mut vals = Vec::with_capacity(args.len() + 1);
        let receiver = match receiver {
            Some(r) => {
                let (t, ty) = self.non_null(r)?;
                Some(Value {
                    term: Term::Ref(t),
                    ty,
                })
            }
            None => None,
        };
        if f.params.first().is_some_and(|p| p.0 == "this") {
            // An instance function that reads the heap: `this` is its first argument, the
            // receiver's value or, without one, the caller's own `this`. (One that reads no
            // heap cannot depend on its receiver.)
            let this = match receiver {
                Some(v) => v,
                None => self.name("this", span)?,
            };
            vals.push(this);
        }
        // Each argument as its parameter's type; a fraction parameter's range is part of the
        // function's precondition (its proof and its axioms assume it).
        let params = self
            .decls
            .program
            .and_then(|p| p.routine(name))
            .map(|r| r.method.params.as_slice())
            .unwrap_or_default();
        for (k, a) in args.iter().enumerate() {
            let v = self.value(a)?;
            let v = match params.get(k) {
                Some(p) => {
                    let v = self.settle(v, ty_of(&p.ty).ok().as_ref(), a.span)?;
                    let v = fraction::convert(&p.ty.kind, v);
                    if let Some(range) = fraction::range(&p.ty.kind, &v) {
                        self.require_noted(
                            range,
                            ObligationKind::FunctionPreconditionFailed,
                            a.span,
                            fraction::note(&p.ty.kind, &p.name.name),
                        );
                    }
                    v
                }
                None => v,
            };
            // The function's axioms hold for finite sets (`function_hypothesis`): a set the
            // program passes is one, as the size facts give.
            if let Term::Set(s) = &v.term {
                self.set_size(s);
            }
            vals.push(v);
        }
        let own = self.defining.as_deref() == Some(name);
        if own {
            self.recursive_calls.push(RecursiveCall {
                guard: self.guard(),
                args: vals.clone(),
                span,
                unfolded: self.unfolded.clone(),
            });
        }
        self.function_precondition(name, &vals, span)?;
        if self.definedness {
            self.inline_body(name, &vals, span)?;
        }
        if self.int32.is_some() {
            self.int32_body(name, &vals, span)?;
        }
        let decl = if own { &f.limited } else { &f.full };
        dyns.extend(vals.iter().map(|v| v.term.as_dynamic()));
        let refs: Vec<&dyn Ast> = dyns.iter().map(|d| d as &dyn Ast).collect();
        let app = value_of(&f.ret, decl.apply(&refs));
        if f.reads_heap && !own {
            let limited = value_of(&f.ret, f.limited.apply(&refs));
            self.instantiate(name, f, &vals, &app, Some(&limited))?;
        } else if !own && f.terminates && self.defining.is_none() {
            // A second unfolding where a routine applies it (the global definition, triggered
            // by `app`, unfolds once, down to the limited twin): merged loop iterations and
            // two-step lemmas need `f(n + 2)` in terms of `f(n)`, which one unfolding leaves
            // to model-based search (10 s, or unknown, for the merged `even_sum`).
            self.instantiate(name, f, &vals, &app, None)?;
        }
        if f.framed {
            // Also the limited twin where its definition is being unfolded (`next.sum()` in
            // `sum()`): it keeps its value across the changes that keep its own footprint.
            let frames = self.frames(name, f, &vals)?;
            let fact = self.close(&Bool::and(&frames));
            self.facts.push(fact);
        }
        if own && f.terminates {
            // Induction on the measure the termination proof found decreasing: the recursive
            // call satisfies the postcondition being proved. (Elsewhere the postcondition is
            // an axiom; inside its own proof it would be circular.)
            let routine = self.decls.program.and_then(|p| p.routine(name)).copied();
            let fact = match routine {
                Some(r) => {
                    let held = self.held_in_mask();
                    function_fact(
                        self.decls,
                        self.heap.clone(),
                        &r,
                        &f.params,
                        &vals,
                        &app,
                        held,
                    )?
                }
                None => None,
            };
            if let Some(fact) = fact {
                let closed = self.close(&fact);
                self.facts.push(closed);
            }
        }
        Ok(app)
    }

    /// [`PredicateReading::HeldIn`] this evaluation's mask, where it has one; else the mask
    /// it reads instances in, if any (a heap function's definition unfolded at an
    /// application reads them as held in the caller's mask).
    fn held_in_mask(&self) -> PredicateReading {
        match &self.mask {
            Some(m) => PredicateReading::HeldIn(m.clone()),
            None => match &self.predicate_reading {
                PredicateReading::HeldIn(m) => PredicateReading::HeldIn(m.clone()),
                // Never `True`: that reading only weakens a termination hypothesis.
                _ => PredicateReading::Refused,
            },
        }
    }

    fn function_precondition(
        &mut self,
        name: &str,
        args: &[Value],
        span: Span,
    ) -> Result<(), EncodeError> {
        if !self.definedness {
            return Ok(());
        }
        let Some(routine) = self.decls.program.and_then(|p| p.routine(name)).copied() else {
            return Ok(());
        };
        let functions = self.decls.functions.expect("checked by the caller");
        let f = &functions[name];
        let mut inner = Eval::new(self.decls, bind_params(&f.params, args));
        inner.defining = self.defining.clone();
        let pre = function_pre(&routine);
        if !f.reads_heap {
            if !self.value_checks {
                return Ok(());
            }
            for pre in pre {
                let c = inner.bool(pre)?;
                self.require(c, ObligationKind::FunctionPreconditionFailed, span);
            }
            return Ok(());
        }
        // The caller must hold the permissions, without giving them up: an exhale from a copy
        // of its mask, whose goals become this application's. Its assumptions are dropped
        // (they describe the mask after the exhale, which is thrown away); each later goal
        // of the same exhale keeps them as hypotheses.
        let (Some(heap), Some(mask)) = (self.heap.clone(), self.mask.clone()) else {
            return Err(unsupported(
                format!("a call of `{name}`, which needs permissions, where none are held"),
                span,
            ));
        };
        inner.heap = Some(heap);
        inner.mask = Some(mask.clone());
        inner.old_is_now = true;
        inner.definedness = true;
        let mut goals = Collected::default();
        assertion::exhale(
            &mut goals,
            &mut inner,
            mask,
            &pre,
            &[],
            ObligationKind::FunctionPreconditionFailed,
        )?;
        for c in goals.checks {
            // The precondition's pure part is a value check; its permissions are not.
            let pure_part = c.kind == ObligationKind::FunctionPreconditionFailed;
            if self.deferred(c.kind) || (pure_part && !self.value_checks) {
                continue;
            }
            let note = (c.kind != ObligationKind::FunctionPreconditionFailed)
                .then(|| format!("in the precondition of `{name}`: {}", c.kind.describe()));
            self.require_noted(
                c.goal,
                ObligationKind::FunctionPreconditionFailed,
                span,
                note,
            );
        }
        Ok(())
    }
}

impl Eval<'_> {
    /// The location of the predicate instance `receiver.name(args)` (an abstract predicate:
    /// a predicate of a class applied to `receiver`, or to `this` without one), with the
    /// facts the caller must assume. See `World::predicate_location`.
    pub fn predicate_location(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<(Dynamic, Int, Vec<Bool>), EncodeError> {
        let program = self.decls.program;
        let Some((params, _)) = program.and_then(|p| inline::abstract_predicate(p, name)) else {
            return Err(unsupported(
                format!("`{name}(..)` as an assertion (only predicates are)"),
                span,
            ));
        };
        if params.len() != args.len() {
            return Err(unsupported(
                "a predicate applied to the wrong number of arguments",
                span,
            ));
        }
        let has_this = program
            .and_then(|p| p.routine(name))
            .is_some_and(|r| r.has_this());
        let mut values = Vec::new();
        match (has_this, receiver) {
            (true, Some(r)) => {
                let (this, _) = self.non_null(r)?;
                values.push(this);
            }
            (true, None) => values.push(self.value(&super::syn::this(span))?.term.as_dynamic()),
            (false, Some(r)) => {
                return Err(unsupported(
                    format!("a receiver for `{name}`, which is not a predicate of a class"),
                    r.span,
                ))
            }
            (false, None) => {}
        }
        // A fraction parameter's range is the predicate body's to assume (its own check does).
        for (p, a) in params.iter().zip(args) {
            let v = fraction::convert(&p.ty.kind, self.value(a)?);
            self.require_fraction(&p.ty.kind, &p.name.name, &v, a.span);
            values.push(v.term.as_dynamic());
        }
        Ok(self.decls.world.predicate_location(name, &values))
    }
}

impl Eval<'_> {
    /// `unfolding P(args) in e`. Without a mask (a function's axiom) the heap is explicit and
    /// `e` is just evaluated. Otherwise P(args) must be held (checked, not taken) and `e` is
    /// evaluated with P's body inhaled into a copy of the mask, whose facts are assumed: they
    /// held when P was folded, and nothing can write what a folded P holds. The bound on each
    /// location's permission is not assumed (as in a pure function's own check: see
    /// `assertion::inhale_unbounded`).
    fn unfolding(&mut self, pred: &Expr, body: &Expr, span: Span) -> Result<Value, EncodeError> {
        let name = inline::predicate_call(pred).map(|(_, n, _)| n.to_string());
        self.unfolded.extend(name.clone());
        let v = self.unfolding_inner(pred, body, span);
        if name.is_some() {
            self.unfolded.pop();
        }
        v
    }

    fn unfolding_inner(
        &mut self,
        pred: &Expr,
        body: &Expr,
        span: Span,
    ) -> Result<Value, EncodeError> {
        let Some(mask) = self.mask.clone() else {
            return self.value(body);
        };
        let program = self
            .decls
            .program
            .ok_or_else(|| unsupported("`unfolding`", span))?;
        if !self.bound.is_empty() {
            // The inverse functions of a quantified body would be shared by every value of
            // the binders, without an injectivity proof across them.
            return Err(unsupported("`unfolding` inside a quantifier", span));
        }
        let instance = inline::applied_body(pred, program, "unfolding")?;
        let mut store = self.store.clone();
        store.extend(self.scopes.iter().cloned());
        let decls = self.decls;
        let (heap, old, definedness) = (self.heap.clone(), self.old.clone(), self.definedness);
        let value_checks = self.value_checks;
        let defining = self.defining.clone();
        let one_heap = self.one_heap;
        let (result, old_is_now) = (self.result.clone(), self.old_is_now);
        let fresh = || {
            let mut inner = Eval::new(decls, store.clone());
            inner.result = result.clone();
            inner.old_is_now = old_is_now;
            inner.heap = heap.clone();
            inner.mask = Some(mask.clone());
            inner.old = old.clone();
            inner.definedness = definedness;
            inner.value_checks = value_checks;
            inner.defining = defining.clone();
            inner.one_heap = one_heap;
            inner
        };
        // Whether P(args) is held here: checked where definedness is, and in any case the
        // hypothesis of every fact of P's body. The facts are handed out (`take_axioms`) to be
        // assumed *before* this expression's checks, the held check among them; unguarded, a
        // body that contradicts the path (`x > 0` for an `x` known negative) would make that
        // check, and everything after it, vacuous.
        let mut held = Collected::default();
        let mut inner = fresh();
        assertion::exhale(
            &mut held,
            &mut inner,
            mask.clone(),
            &[pred],
            &[],
            ObligationKind::UnfoldFailed,
        )?;
        let is_held = Bool::and(
            &held
                .checks
                .iter()
                .map(|c| c.goal.clone())
                .collect::<Vec<_>>(),
        );
        if self.definedness {
            for c in held.checks {
                self.require_noted(c.goal, ObligationKind::UnfoldFailed, pred.span, None);
            }
        }
        let mut opened = Collected::default();
        let mut inner = fresh();
        if let Some((receiver, name, args)) = inline::predicate_call(pred) {
            let (r, i, _) = fresh().predicate_location(receiver, name, args, pred.span)?;
            inner.unfolding_parent = Some((r, i));
        }
        let inside = assertion::inhale_unbounded(&mut opened, &mut inner, mask, &[&instance])?;
        for c in opened.checks {
            self.require_noted(c.goal, c.kind, c.span, c.note);
        }
        for f in opened.facts.into_iter().chain(inner.take_axioms()) {
            let closed = self.close(&is_held.implies(&f));
            self.facts.push(closed);
        }
        let saved = self.mask.replace(inside);
        let v = self.value(body);
        self.mask = saved;
        v
    }

    /// The axioms of a function for this application `app` of `name` to `args` in this heap.
    /// For a function that reads the heap (`limited`: its twin at `args`): the two are equal;
    /// the definition, when usable (recursive calls inside it use the twin, so it unfolds
    /// once here); the postcondition, when usable. For one that does not (`limited` is
    /// `None`; its definition and postcondition are global axioms): the definition with
    /// recursive calls to the full function, so that the global axiom unfolds them once more.
    /// Closed over this point's binders and guards.
    fn instantiate(
        &mut self,
        name: &str,
        f: &FunctionDecl,
        args: &[Value],
        app: &Value,
        limited: Option<&Value>,
    ) -> Result<(), EncodeError> {
        let Some(routine) = self.decls.program.and_then(|p| p.routine(name)).copied() else {
            return Ok(());
        };
        if self.instantiating.iter().any(|g| g == name) {
            return Ok(());
        }
        let mut facts: Vec<Bool> = limited
            .map(|l| app.term.as_dynamic().eq(l.term.as_dynamic()))
            .into_iter()
            .collect();
        // The predicate instances of its precondition: held in the caller's mask.
        let held = self.held_in_mask();
        if let (true, MethodBody::Expr(body)) = (f.terminates, routine.body()) {
            let mut inner = Eval::new(self.decls, bind_params(&f.params, args));
            inner.predicate_reading = held.clone();
            inner.heap = self.heap.clone();
            inner.defining = limited.is_some().then(|| name.to_string());
            inner.instantiating = self.instantiating.clone();
            inner.instantiating.push(name.to_string());
            let pre = function_hypothesis(&mut inner, &routine)?;
            let v = inner.value(body)?;
            let v = inner.settle(v, Some(&app.ty), body.span)?;
            facts.push(pre.implies(app.term.as_dynamic().eq(v.term.as_dynamic())));
            facts.extend(inner.take_axioms());
        }
        if f.post_usable && limited.is_some() {
            let post = function_fact(
                self.decls,
                self.heap.clone(),
                &routine,
                &f.params,
                args,
                app,
                held,
            )?;
            if let Some(post) = post {
                facts.push(post);
            }
        }
        let fact = self.close(&Bool::and(&facts));
        self.facts.push(fact);
        Ok(())
    }
}

/// How many steps of the heap's history an application's frames follow back: enough for the
/// methods of the corpus (a few dozen writes and calls on a path), bounded so that a long
/// method does not build a frame per step at every application.
const FRAME_STEPS: usize = 64;

impl Eval<'_> {
    /// The frames of an application (and of its limited twin) of the framed heap function
    /// `name` ([`FunctionDecl::framed`]) on `args`: for each heap change that led to the
    /// current heap (`World::heap_history_of`, at most [`FRAME_STEPS`]), `pre(before) ∧
    /// unchanged ∧ pre(after) ⇒ f(after, args) == f(before, args)`, where `pre(h)` is the
    /// precondition read in heap `h` and `unchanged` says every location a `Perm` or `Value`
    /// of it names (before the change) holds the same value after it
    /// ([`Eval::unchanged_in`]), its predicate instances held in the mask after the change;
    /// for each join of two heaps after an `if`, `f(c ? h1 : h2, args) == c ? f(h1, args) :
    /// f(h2, args)`. Chained, they carry a value computed before a call or a write to an
    /// application after it.
    ///
    /// Sound because the function's body reads only what its precondition holds (its own
    /// check), and the precondition's own reads are framed by its earlier permissions, so
    /// it names the same locations after the change; and because a held instance's footprint
    /// is held by no one else in full: the writes and the havoc behind a change (a location
    /// held whole, what others may write after an exhale) are all outside it. Ground
    /// instances at the applications, not one axiom over all arguments: the latter made
    /// model-based search answer unknown where a broken program must fail.
    fn frames(
        &mut self,
        name: &str,
        f: &FunctionDecl,
        args: &[Value],
    ) -> Result<Vec<Bool>, EncodeError> {
        let routine = self.decls.program.and_then(|p| p.routine(name)).copied();
        let (true, Some(routine)) = (self.framing, routine) else {
            return Ok(Vec::new());
        };
        let Some(heap) = &self.heap else {
            return Ok(Vec::new());
        };
        let history = self.decls.world.heap_history_of(heap, FRAME_STEPS);
        let arguments: Vec<Dynamic> = args.iter().map(|v| v.term.as_dynamic()).collect();
        let apply = |g: &FuncDecl, h: &Heap| {
            let mut all = h.terms();
            all.extend(arguments.iter().cloned());
            let refs: Vec<&dyn Ast> = all.iter().map(|a| a as &dyn Ast).collect();
            g.apply(&refs)
        };
        let both = |eq: &dyn Fn(&FuncDecl) -> Bool| Bool::and(&[eq(&f.full), eq(&f.limited)]);
        let mut facts = Vec::new();
        for step in history {
            let (before, after, mask) = match &step {
                HeapStep::Join {
                    cond,
                    then,
                    other,
                    joined,
                } => {
                    // Valid of any function: the joined heap is one of the two.
                    facts.push(both(&|g| {
                        apply(g, joined).eq(cond.ite(&apply(g, then), &apply(g, other)))
                    }));
                    continue;
                }
                HeapStep::Change {
                    before,
                    after,
                    mask,
                } => (before, after, mask),
            };
            // Read in both heaps: the precondition holds on each side, so the definition
            // gives both values and the frame only says they are equal.
            let mut hypotheses = Vec::new();
            let mut readable = true;
            for (heap, unchanged_in) in [(before, Some(after.clone())), (after, None)] {
                let mut inner = Eval::new(self.decls, bind_params(&f.params, args));
                inner.heap = Some(heap.clone());
                inner.unchanged_in = unchanged_in;
                inner.predicate_reading = PredicateReading::HeldIn(mask.clone());
                inner.framing = false;
                inner.instantiating = self.instantiating.clone();
                match function_hypothesis(&mut inner, &routine) {
                    Ok(pre) => {
                        hypotheses.extend(inner.take_axioms());
                        hypotheses.push(pre);
                    }
                    Err(_) => readable = false,
                }
            }
            // A precondition this state cannot read (a `given` name) gives no frame: a frame
            // only adds facts, so leaving one out costs completeness, never a verdict.
            if readable {
                let kept = both(&|g| apply(g, after).eq(apply(g, before)));
                facts.push(Bool::and(&hypotheses).implies(kept));
            }
        }
        Ok(facts)
    }
}

/// A prover that keeps what it is given, for an evaluation to pass on: goals (to prove in its
/// own state) and facts. Each goal carries the facts given before it as hypotheses, so a goal
/// can use them (a wildcard amount below what is held, an inverse function) even where the
/// facts themselves are not assumed ([`Eval::function_precondition`] drops them: they describe
/// a mask that is thrown away). A hypothesis only weakens its own goal: sound either way.
#[derive(Default)]
struct Collected {
    checks: Vec<Check>,
    facts: Vec<Bool>,
}

impl assertion::Prover for Collected {
    fn check(&mut self, mut check: Check) {
        if !self.facts.is_empty() {
            check.goal = Bool::and(&self.facts).implies(&check.goal);
        }
        self.checks.push(check);
    }

    fn assume(&mut self, fact: Bool) {
        self.facts.push(fact);
    }
}

/// A function's parameters bound to the values of an application.
fn bind_params(params: &[(String, Ty)], args: &[Value]) -> Store {
    params
        .iter()
        .zip(args)
        .map(|(p, v)| (p.0.clone(), v.clone()))
        .collect()
}

/// A pure function's precondition: its `requires`/`context` clauses after its
/// `context_everywhere` ones.
pub fn function_pre<'p>(routine: &Routine<'p>) -> Vec<&'p Expr> {
    let mut pre = routine.everywhere();
    pre.extend(routine.pre());
    pre
}

/// `pre ⇒ post[\result := app]` for the pure function `routine` applied to `args` in `heap`,
/// with `Perm` and `Value` in `pre` read as `true`; `None` when it has no postcondition (or is
/// inline, whose contract is not used).
///
/// Sound as an axiom because a function's own check inhales its precondition without the
/// at-most-one bound on permissions (`assertion::inhale_unbounded`): its postcondition is
/// proved from the pure part of the precondition alone, never from the non-aliasing that
/// holding two full permissions would imply.
pub fn function_fact(
    decls: Decls<'_>,
    heap: Option<Heap>,
    routine: &Routine<'_>,
    params: &[(String, Ty)],
    args: &[Value],
    app: &Value,
    predicate_reading: PredicateReading,
) -> Result<Option<Bool>, EncodeError> {
    let mut post = routine.everywhere();
    post.extend(routine.post());
    if post.is_empty() || routine.is_inline() {
        return Ok(None);
    }
    let mut ev = Eval::new(decls, bind_params(params, args));
    ev.heap = heap;
    ev.result = Some(app.clone());
    ev.predicate_reading = predicate_reading;
    let pre = function_hypothesis(&mut ev, routine)?;
    let mut facts = Vec::new();
    for e in post {
        facts.push(ev.bool(e)?);
    }
    Ok(Some(pre.implies(Bool::and(&facts))))
}

/// The hypothesis of a pure function's axioms, in `ev` (whose store binds its parameters):
/// its precondition with `Perm` and `Value` read as `true`, and `this != null` for an
/// instance function (its own check assumes that too).
pub fn function_hypothesis(ev: &mut Eval<'_>, routine: &Routine<'_>) -> Result<Bool, EncodeError> {
    let mut pre = Vec::new();
    if let Some(Term::Ref(this)) = ev.store.get("this").map(|v| v.term.clone()) {
        pre.push(this.eq(&ev.decls.world.null).not());
    }
    // Its set parameters are finite (see `Eval::set_size`).
    for p in &routine.method.params {
        if let Some(Term::Set(s)) = ev.store.get(&p.name.name).map(|v| &v.term) {
            pre.push(finite_set(s));
        }
    }
    // The ranges of its fraction parameters: its own check assumes them.
    for p in &routine.method.params {
        if let Some(range) = ev
            .store
            .get(&p.name.name)
            .and_then(|v| fraction::range(&p.ty.kind, v))
        {
            pre.push(range);
        }
    }
    let saved = std::mem::replace(&mut ev.permissions_as_true, true);
    // An inline predicate is its body: its permissions are `true` here, its pure parts part
    // of the hypothesis.
    let clauses: Result<Vec<Bool>, EncodeError> = function_pre(routine)
        .into_iter()
        .map(|e| {
            let expanded = ev.decls.program.and_then(|p| inline::expand(e, p));
            ev.bool(expanded.as_ref().unwrap_or(e))
        })
        .collect();
    ev.permissions_as_true = saved;
    pre.extend(clauses?);
    Ok(Bool::and(&pre))
}

impl Eval<'_> {
    /// `--int32`: the body of the pure function `name`, as the generated C function runs it
    /// on `args` at this call, with the 32-bit obligations (under this call's path and
    /// binders). A recursive function cannot be inlined: unsupported.
    fn int32_body(&mut self, name: &str, args: &[Value], span: Span) -> Result<(), EncodeError> {
        let Some(routine) = self.decls.program.and_then(|p| p.routine(name)).copied() else {
            return Ok(());
        };
        let MethodBody::Expr(body) = routine.body() else {
            return Err(unsupported(
                format!("a call of `{name}`, which has no body, in code checked by --int32"),
                span,
            ));
        };
        if self.inlining.iter().any(|f| f == name) || self.defining.as_deref() == Some(name) {
            return Err(unsupported(
                format!(
                    "the recursive function `{name}` in executable code (--int32 checks a \
                     function's arithmetic at its calls; C has no recursion)"
                ),
                span,
            ));
        }
        let checks = self.body_at_call(name, body, args, true)?;
        // Only the 32-bit obligations: the body's own definedness is the function's proof.
        self.checks.extend(checks.into_iter().filter(|c| {
            matches!(
                c.kind,
                ObligationKind::Int32Overflow | ObligationKind::NegativeDivOperand
            )
        }));
        Ok(())
    }

    /// An inline function is its body (as in VerCors, which substitutes it): the body's
    /// definedness — bounds, null, division, permissions for its reads, the preconditions of
    /// what it applies — is checked at each call, with the call's arguments, path and
    /// permissions, and reported at the call. (Its own check does not ask for it:
    /// `inline pure int peek(seq<int> xs) = xs[|xs| - 1];` is defined where `xs` is not empty.)
    fn inline_body(&mut self, name: &str, args: &[Value], span: Span) -> Result<(), EncodeError> {
        let Some(routine) = self.decls.program.and_then(|p| p.routine(name)).copied() else {
            return Ok(());
        };
        let MethodBody::Expr(body) = routine.body() else {
            return Ok(());
        };
        if !routine.is_inline()
            || self.inlining.iter().any(|f| f == name)
            || self.defining.as_deref() == Some(name)
        {
            return Ok(());
        }
        for c in self.body_at_call(name, body, args, false)? {
            if self.deferred(c.kind) {
                continue;
            }
            let note = format!("in the body of the inline function `{name}`");
            self.checks.push(Check {
                span,
                note: Some(match c.note {
                    Some(more) => format!("{note} ({more})"),
                    None => note,
                }),
                ..c
            });
        }
        Ok(())
    }

    /// The checks of `body`, the body of the pure function `name`, evaluated on `args` in this
    /// evaluation's heap, mask, path and binders (with `int32`, its 32-bit obligations too).
    fn body_at_call(
        &mut self,
        name: &str,
        body: &Expr,
        args: &[Value],
        int32: bool,
    ) -> Result<Vec<Check>, EncodeError> {
        let params = &self.decls.functions.expect("checked by the caller")[name].params;
        let mut inner = Eval::new(self.decls, bind_params(params, args));
        inner.heap = self.heap.clone();
        inner.mask = self.mask.clone();
        inner.definedness = true;
        if int32 {
            inner.int32 = self.int32;
        }
        inner.inlining = self.inlining.clone();
        inner.inlining.push(name.to_string());
        inner.bound = self.bound.clone();
        inner.guards = self.guards.clone();
        inner.value(body)?;
        Ok(inner.checks)
    }
}

/// `∀xs. guard ⇒ body` or `∃xs. guard ∧ body`, instantiated on `patterns` (none: Z3 chooses).
fn quantified(
    is_forall: bool,
    xs: &[Dynamic],
    patterns: &[z3::Pattern],
    guard: Bool,
    body: Bool,
) -> Bool {
    let bounds: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
    let patterns: Vec<&z3::Pattern> = patterns.iter().collect();
    if is_forall {
        ast::forall_const(&bounds, &patterns, &guard.implies(&body))
    } else {
        ast::exists_const(&bounds, &patterns, &Bool::and(&[guard, body]))
    }
}

/// Whether `e` holds a trigger `{: .. :}`.
fn has_trigger(e: &Expr) -> bool {
    if let ExprKind::Trigger(..) = e.kind {
        return true;
    }
    let mut found = false;
    e.for_each_child(&mut |c| found = found || has_trigger(c));
    found
}

/// The patterns of a quantifier over `binders` from the user's triggers met in its body: each
/// unnumbered trigger a pattern of its own, the triggers of one number one multi-pattern. A
/// pattern is kept only where Z3 takes it — every term [`super::state::pattern_safe`] and
/// no bare binder, the binders all among its terms (Z3 warns and builds no quantifier
/// otherwise, on which the z3 crate panics). A pattern says only when to instantiate, so
/// one left out leaves the choice to Z3, as without triggers: never a different meaning.
fn user_patterns(binders: &[&dyn Ast], triggers: Vec<(Option<u32>, Dynamic)>) -> Vec<z3::Pattern> {
    if binders.is_empty() || triggers.is_empty() {
        return Vec::new();
    }
    let binders: Vec<Dynamic> = binders.iter().map(|x| Dynamic::from_ast(*x)).collect();
    let covers = |terms: &[Dynamic], x: &Dynamic| {
        let other = Dynamic::fresh_const("other", &x.get_sort());
        terms.iter().any(|t| t.substitute(&[(x, &other)]) != *t)
    };
    crate::syntax::group_triggers(triggers)
        .into_iter()
        .filter(|terms| {
            terms
                .iter()
                .all(|t| !binders.contains(t) && super::state::pattern_safe(t))
                && binders.iter().all(|x| covers(terms, x))
        })
        .map(|terms| {
            let refs: Vec<&dyn Ast> = terms.iter().map(|t| t as &dyn Ast).collect();
            z3::Pattern::new(&refs)
        })
        .collect()
}

/// `t` with every application of a function in `twins` (by name) applied to the twin instead.
fn with_limited_twins(t: &Dynamic, twins: &HashMap<String, &FuncDecl>) -> Dynamic {
    if !t.is_app() || t.num_children() == 0 {
        return t.clone();
    }
    let children: Vec<Dynamic> = t
        .children()
        .iter()
        .map(|c| with_limited_twins(c, twins))
        .collect();
    let args: Vec<&dyn Ast> = children.iter().map(|c| c as &dyn Ast).collect();
    let decl = t.decl();
    match twins.get(&decl.name()) {
        Some(twin) => twin.apply(&args),
        None if children.iter().zip(t.children()).all(|(a, b)| *a == b) => t.clone(),
        None => decl.apply(&args),
    }
}

/// `∀ xs. body` (just `body` without binders).
pub fn close(xs: &[Int], body: &Bool) -> Bool {
    if xs.is_empty() {
        return body.clone();
    }
    let bounds: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
    ast::forall_const(&bounds, &[], body)
}

fn perm(r: Real) -> Value {
    Value {
        term: Term::Real(r),
        ty: Ty::Perm,
    }
}

fn to_real(v: Value, span: Span) -> Result<Real, EncodeError> {
    match v.term {
        Term::Int(i) => Ok(Real::from_int(&i)),
        Term::Real(r) => Ok(r),
        _ => Err(ill_sorted("a number", &v.ty, span)),
    }
}

/// Brings two values to one sort for `==`/`?:`: an int meets a fraction as a real.
/// Whether `v` is a `None` whose element type is not known yet (see `Ty::Option`).
fn is_untyped_none(v: &Value) -> bool {
    matches!(&v.ty, Ty::Option(elem) if **elem == Ty::Null)
}

/// Two values of one sort: an int beside a fraction becomes a fraction, a `None` of unknown
/// element type beside an option takes its type.
pub fn unify(world: &World, a: Value, b: Value, span: Span) -> Result<(Value, Value), EncodeError> {
    match (&a.ty, &b.ty) {
        (Ty::Option(x), Ty::Option(y)) if **x == Ty::Null && **y != Ty::Null => {
            return Ok((world.typed_none(y), b))
        }
        (Ty::Option(x), Ty::Option(y)) if **y == Ty::Null && **x != Ty::Null => {
            let none = world.typed_none(x);
            return Ok((a, none));
        }
        _ => {}
    }
    match (&a.term, &b.term) {
        (Term::Int(_), Term::Real(_)) => Ok((perm(to_real(a, span)?), b)),
        (Term::Real(_), Term::Int(_)) => Ok((a, perm(to_real(b, span)?))),
        (Term::Int(_), Term::Int(_))
        | (Term::Bool(_), Term::Bool(_))
        | (Term::Real(_), Term::Real(_))
        | (Term::Ref(_), Term::Ref(_))
        | (Term::Seq(_), Term::Seq(_))
        | (Term::Set(_), Term::Set(_))
        | (Term::Bag(_), Term::Bag(_))
        | (Term::Tuple(_), Term::Tuple(_))
        | (Term::Map(_), Term::Map(_)) => Ok((a, b)),
        _ => Err(ill_sorted("equal sorts", &b.ty, span)),
    }
}

fn compare(op: BinaryOp, x: &Int, y: &Int) -> Bool {
    match op {
        BinaryOp::Lt => x.lt(y),
        BinaryOp::Le => x.le(y),
        BinaryOp::Gt => x.gt(y),
        _ => x.ge(y),
    }
}

fn compare_real(op: BinaryOp, x: &Real, y: &Real) -> Bool {
    match op {
        BinaryOp::Lt => x.lt(y),
        BinaryOp::Le => x.le(y),
        BinaryOp::Gt => x.gt(y),
        _ => x.ge(y),
    }
}

/// The uninterpreted `card` and `fin` of sets of sort `sort` (one pair per sort: Z3 names a
/// function by its name and signature).
fn set_size_functions(sort: &z3::Sort) -> (FuncDecl, FuncDecl) {
    let name = sort.to_string().replace(' ', "_");
    (
        FuncDecl::new(format!("card_{name}"), &[sort], &z3::Sort::int()),
        FuncDecl::new(format!("fin_{name}"), &[sort], &z3::Sort::bool()),
    )
}

/// `fin(s)`: the set `s` is finite (see `Eval::set_size`).
pub(super) fn finite_set(s: &Set) -> Bool {
    let (_, fin) = set_size_functions(&s.get_sort());
    fin.apply(&[s as &dyn Ast]).as_bool().expect("a boolean")
}

/// The bag `x ↦ f(a[x], b[x])`.
fn pointwise(a: &Array, b: &Array, f: impl Fn(Int, Int) -> Int) -> Array {
    let sort = a.get_sort().array_domain().expect("a bag sort");
    let x = Dynamic::fresh_const("elem", &sort);
    let count = |c: &Array| c.select(&x).as_int().expect("a multiplicity");
    let r = f(count(a), count(b));
    ast::lambda_const(&[&x as &dyn Ast], &Dynamic::from_ast(&r))
}

/// Converts an int to a fraction where a fraction is expected, and a `None` of unknown
/// element type to the option type expected; otherwise the value as is.
pub fn coerce(world: &World, v: Value, ty: &Ty, span: Span) -> Result<Value, EncodeError> {
    if let (Ty::Option(none), Ty::Option(elem)) = (&v.ty, ty) {
        if **none == Ty::Null {
            return Ok(world.typed_none(elem));
        }
    }
    match (&v.term, ty) {
        (Term::Int(i), Ty::Perm) => Ok(Value {
            term: Term::Real(z3::ast::Real::from_int(i)),
            ty: Ty::Perm,
        }),
        (Term::Int(_), Ty::Int)
        | (Term::Bool(_), Ty::Bool)
        | (Term::Real(_), Ty::Perm)
        | (Term::Seq(_), Ty::Seq(_) | Ty::Option(_))
        | (Term::Set(_), Ty::Set(_))
        | (Term::Map(_), Ty::Map(..))
        | (Term::Bag(_), Ty::Bag(_))
        | (Term::Tuple(_), Ty::Tuple(..))
        | (Term::Ref(_), Ty::Array(_) | Ty::Object(_) | Ty::Null) => Ok(Value {
            term: v.term,
            ty: if v.ty == Ty::Null { ty.clone() } else { v.ty },
        }),
        _ => Err(EncodeError::IllSorted {
            expected: format!("{ty:?}"),
            found: format!("{:?}", v.ty),
            span,
        }),
    }
}
