//! The symbolic state of the checker: values and their types, the heap and the permission mask
//! as Z3 arrays, and the per-context declarations every state shares ([`World`]).
//!
//! Encoding (design.md, "The checker"): a location is a pair (reference, integer). Array cell
//! `a[i]` is `(a, i)`; field `f` of an object is `(o, -1 - id(f))`, a negative index no array
//! cell can have (every cell access is bounds-checked). The heap is one curried Z3 array per
//! value sort, `Ref → (Int → T)`, and the mask one `Ref → (Int → Real)`: keyed by the
//! *reference*, never by a variable name, so two parameters that alias share their cells.

use std::collections::BTreeMap;

use z3::ast::{self, Array, Ast, Bool, Dynamic, Int, Real, Seq, Set};
use z3::{FuncDecl, Sort as Z3Sort};

use super::expr::EncodeError;
use crate::syntax::Span;

/// A value type of the checker (what a PVL type means here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    Bool,
    /// `frac`, `zfrac`, `rational` and permission amounts: Z3 reals.
    Perm,
    /// An array reference with its element type.
    Array(Box<Ty>),
    /// An object reference of the named class.
    Object(String),
    /// `seq<T>` (Z3 sequences) for T an int, boolean, reference, or a sequence of those.
    Seq(Box<Ty>),
    /// The type of `null`: compatible with every reference type.
    Null,
    /// `option<T>`, T as for sequences: a Z3 sequence of at most one element (`None` empty,
    /// `Some(v)` the unit `[v]`). Every option term is built of length ≤ 1 (fresh values and
    /// heap reads through [`World::fresh`] and [`value_of`] are normalised), so sequence
    /// equality is option equality. `Option(Null)` is the type of a `None` whose element
    /// type is not known yet (the sink's declared type gives it: `World::typed_none`).
    Option(Box<Ty>),
    /// `set<T>`, T an int, boolean or reference: a Z3 set (an array to booleans, so equal sets
    /// are equal terms). Only as a value of locals, parameters, results and ghost code: never
    /// in the heap (`program::ty_of` refuses set-typed fields, cells and elements).
    Set(Box<Ty>),
    /// `map<K, V>`, K and V as for set elements: a Z3 array from keys to options of values
    /// (`None`, the empty sequence, where the key is absent; `Some(v)` the unit `[v]`). Every
    /// map term is built with options of length ≤ 1 (literals, updates and fresh values through
    /// [`World::fresh`]), so equal maps are equal terms. Never in the heap, as sets.
    Map(Box<Ty>, Box<Ty>),
    /// `tuple<A, B>`, A and B as set elements are: a Z3 datatype with one constructor
    /// ([`World::tuple_sort`]). Never in the heap, as sets.
    Tuple(Box<Ty>, Box<Ty>),
    /// `bag<T>`, T as for set elements: a Z3 array from elements to their multiplicity (never
    /// negative: fresh bags are normalised). Never in the heap, as sets.
    Bag(Box<Ty>),
}

impl Ty {
    /// May this be an element of a set or a bag, a key or value of a map, a part of a tuple?
    pub fn is_element(&self) -> bool {
        matches!(self, Ty::Int | Ty::Bool | Ty::Array(_) | Ty::Object(_))
    }

    pub fn is_ref(&self) -> bool {
        matches!(self, Ty::Array(_) | Ty::Object(_) | Ty::Null)
    }

    /// How many sequence (or option) types are nested here: `seq<seq<int>>` is 2.
    pub fn sequence_depth(&self) -> usize {
        match self {
            Ty::Seq(e) | Ty::Option(e) => 1 + e.sequence_depth(),
            _ => 0,
        }
    }

    /// The heap a location holding this type lives in, for a type of at most two nested sequences
    /// ([`World::heap_kind`] refuses deeper ones; a deeper one is given a kind of the wrong
    /// sort here, so nothing else may store it).
    pub fn heap_kind(&self) -> HeapKind {
        match self {
            Ty::Int => HeapKind::Int,
            Ty::Bool => HeapKind::Bool,
            Ty::Perm => HeapKind::Perm,
            Ty::Array(_) | Ty::Object(_) | Ty::Null => HeapKind::Ref,
            Ty::Option(e) => Ty::Seq(e.clone()).heap_kind(),
            // Never stored (see `Ty::Set`); `World::heap_kind` refuses sets and maps.
            Ty::Set(_) | Ty::Map(..) | Ty::Bag(_) | Ty::Tuple(..) => HeapKind::SeqSeqRef,
            Ty::Seq(e) => match &**e {
                Ty::Bool => HeapKind::SeqBool,
                e if e.is_ref() => HeapKind::SeqRef,
                Ty::Seq(inner) => match &**inner {
                    Ty::Bool => HeapKind::SeqSeqBool,
                    inner if inner.is_ref() => HeapKind::SeqSeqRef,
                    _ => HeapKind::SeqSeqInt,
                },
                _ => HeapKind::SeqInt,
            },
        }
    }
}

/// A Z3 term of one of the checker's sorts. Belongs to the Z3 context of the thread that built
/// it.
#[derive(Clone, Debug)]
pub enum Term {
    Int(Int),
    Bool(Bool),
    Real(Real),
    Ref(Dynamic),
    Seq(Seq),
    Set(Set),
    Map(MapTerm),
    Bag(Array),
    /// A value of a tuple datatype.
    Tuple(Dynamic),
}

/// A map's term: its entries (key to option of value) and, built alongside, the set of its keys
/// (the keys where the entry is `Some`: the literal's keys, plus an added key, minus a removed
/// one), so that a map's keys and their number are as structured as the map itself.
#[derive(Clone, Debug)]
pub struct MapTerm {
    pub entries: Array,
    pub keys: Set,
}

impl MapTerm {
    /// The map of `entries`, its keys read from them (`k ↦ |entries[k]| > 0`).
    pub fn of_entries(entries: Array) -> MapTerm {
        let key_sort = entries.get_sort().array_domain().expect("an array sort");
        let k = Dynamic::fresh_const("key", &key_sort);
        let entry = entries.select(&k).as_seq().expect("a map entry");
        let present = entry.length().gt(Int::from_i64(0));
        let keys = ast::lambda_const(&[&k as &dyn Ast], &Dynamic::from_ast(&present));
        MapTerm {
            entries,
            keys: Dynamic::from_ast(&keys).as_set().expect("a set"),
        }
    }
}

impl Term {
    pub fn as_dynamic(&self) -> Dynamic {
        match self {
            Term::Int(t) => Dynamic::from_ast(t),
            Term::Bool(t) => Dynamic::from_ast(t),
            Term::Real(t) => Dynamic::from_ast(t),
            Term::Ref(t) => t.clone(),
            Term::Seq(t) => Dynamic::from_ast(t),
            Term::Set(t) => Dynamic::from_ast(t),
            Term::Map(t) => Dynamic::from_ast(&t.entries),
            Term::Bag(t) => Dynamic::from_ast(t),
            Term::Tuple(t) => t.clone(),
        }
    }

    /// `cond ? self : other`, both of the same sort (callers pair values of one type).
    pub fn ite(cond: &Bool, a: &Term, b: &Term) -> Term {
        match (a, b) {
            (Term::Int(x), Term::Int(y)) => Term::Int(cond.ite(x, y)),
            (Term::Bool(x), Term::Bool(y)) => Term::Bool(cond.ite(x, y)),
            (Term::Real(x), Term::Real(y)) => Term::Real(cond.ite(x, y)),
            (Term::Seq(x), Term::Seq(y)) => Term::Seq(cond.ite(x, y)),
            (Term::Set(x), Term::Set(y)) => Term::Set(cond.ite(x, y)),
            (Term::Bag(x), Term::Bag(y)) => Term::Bag(cond.ite(x, y)),
            (Term::Tuple(x), Term::Tuple(y)) => Term::Tuple(cond.ite(x, y)),
            (Term::Map(x), Term::Map(y)) => Term::Map(MapTerm {
                entries: cond.ite(&x.entries, &y.entries),
                keys: cond.ite(&x.keys, &y.keys),
            }),
            _ => Term::Ref(cond.ite(&a.as_dynamic(), &b.as_dynamic())),
        }
    }
}

/// A typed value.
#[derive(Clone, Debug)]
pub struct Value {
    pub term: Term,
    pub ty: Ty,
}

impl Value {
    pub fn int(t: Int) -> Value {
        Value {
            term: Term::Int(t),
            ty: Ty::Int,
        }
    }

    pub fn bool(t: Bool) -> Value {
        Value {
            term: Term::Bool(t),
            ty: Ty::Bool,
        }
    }
}

/// Local variables (and parameters) → their current values.
pub type Store = BTreeMap<String, Value>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HeapKind {
    Int,
    Bool,
    Perm,
    Ref,
    SeqInt,
    SeqBool,
    SeqRef,
    SeqSeqInt,
    SeqSeqBool,
    SeqSeqRef,
}

/// In the order of the enum: `Heap` indexes its arrays by `kind as usize`.
pub const HEAP_KINDS: [HeapKind; 10] = [
    HeapKind::Int,
    HeapKind::Bool,
    HeapKind::Perm,
    HeapKind::Ref,
    HeapKind::SeqInt,
    HeapKind::SeqBool,
    HeapKind::SeqRef,
    HeapKind::SeqSeqInt,
    HeapKind::SeqSeqBool,
    HeapKind::SeqSeqRef,
];

/// The first six kinds, which every heap has; the others exist only where the program has a field of that kind
/// ([`World::with_heap_kinds`]). Each array is in every havoc and every heap `ite`, and the
/// sequence-of-sequence sorts among them slow Z3 down on programs that never use them (the
/// two-dimensional Blelloch proof went from 6 s to over 10 minutes).
pub const BASE_HEAP_KINDS: &[HeapKind] = HEAP_KINDS.split_at(6).0;

/// One curried array per value sort of the world's heap kinds (`None` for the others: a
/// location of such a kind is refused as unsupported before it reaches the heap).
#[derive(Clone, Debug)]
pub struct Heap {
    arrays: Vec<Option<Array>>,
}

impl Heap {
    /// A heap about which nothing is known.
    pub fn fresh(world: &World) -> Heap {
        Heap {
            arrays: HEAP_KINDS
                .iter()
                .map(|&k| {
                    world.has_heap_kind(k).then(|| {
                        Array::fresh_const(
                            "heap",
                            &world.ref_sort,
                            &Z3Sort::array(&Z3Sort::int(), &world.value_sort(k)),
                        )
                    })
                })
                .collect(),
        }
    }

    /// The arrays of the world's heap kinds, in kind order: what a pure function that reads
    /// the heap takes as its first arguments.
    pub fn terms(&self) -> Vec<Dynamic> {
        self.arrays
            .iter()
            .flatten()
            .map(|a| Dynamic::from_ast(a))
            .collect()
    }

    /// The same terms, array by array (Z3's structural equality of terms, not of values).
    pub fn same(&self, other: &Heap) -> bool {
        self.arrays == other.arrays
    }

    pub fn array(&self, kind: HeapKind) -> &Array {
        self.arrays[kind as usize]
            .as_ref()
            .expect("locations of a kind the world lacks are refused by World::heap_kind")
    }

    pub fn read(&self, kind: HeapKind, r: &Dynamic, i: &Int) -> Dynamic {
        cell(self.array(kind), r, i)
    }

    pub fn write(&self, kind: HeapKind, r: &Dynamic, i: &Int, v: &Dynamic) -> Heap {
        let mut h = self.clone();
        h.arrays[kind as usize] = Some(store_cell(self.array(kind), r, i, v));
        h
    }

    /// The heap with the array of `kind` named by a fresh constant, and the fact that the
    /// constant is that array: a read through the name can stand in a quantifier's pattern,
    /// which a read through an `ite` or a lambda (a joined or havocked heap) cannot.
    pub fn named(&self, kind: HeapKind) -> (Heap, Bool) {
        let old = self.array(kind);
        let domain = old.get_sort().array_domain().expect("an array");
        let name = Array::fresh_const(
            "heap",
            &domain,
            &old.get_sort().array_range().expect("an array"),
        );
        // Cell by cell, not `name == old`: libz3 4.8 crashed on an equality with a lambda.
        let r = Dynamic::fresh_const("r", &domain);
        let k = Int::fresh_const("k");
        let read = cell(&name, &r, &k);
        let pattern = z3::Pattern::new(&[&read as &dyn Ast]);
        let fact = ast::forall_const(
            &[&r as &dyn Ast, &k as &dyn Ast],
            &[&pattern],
            &read.eq(cell(old, &r, &k)),
        );
        let mut h = self.clone();
        h.arrays[kind as usize] = Some(name);
        (h, fact)
    }

    /// `cond ? a : b`, array by array; `a` itself where the two are the same terms (a heap
    /// neither path of an `if` changed stays the heap a function's frames follow back).
    pub fn ite(cond: &Bool, a: &Heap, b: &Heap) -> Heap {
        if a.same(b) {
            return a.clone();
        }
        Heap {
            arrays: a
                .arrays
                .iter()
                .zip(&b.arrays)
                .map(|(x, y)| x.as_ref().zip(y.as_ref()).map(|(x, y)| cond.ite(x, y)))
                .collect(),
        }
    }

    /// Keeps the value of every location of the given `kinds` where `mask` holds a positive
    /// amount and forgets the others (after an exhale: what nobody here has permission to may
    /// change). Returns the new heap and the facts defining it. Locations of other kinds keep
    /// their values: the exhale took no amount from them, so each is owned exactly when it was
    /// before, and an unowned one was forgotten when it last lost its permission.
    pub fn havoc_unowned(
        &self,
        world: &World,
        mask: &Mask,
        kinds: &[HeapKind],
    ) -> (Heap, Vec<Bool>) {
        let fresh = Heap::fresh(world);
        let r = Dynamic::fresh_const("r", &world.ref_sort);
        let k = Int::fresh_const("k");
        let owned = mask.amount(&r, &k).gt(Real::from_int(&Int::from_i64(0)));
        let mut facts = Vec::new();
        let arrays = self
            .arrays
            .iter()
            .zip(&fresh.arrays)
            .zip(HEAP_KINDS)
            .map(|((old, new), kind)| {
                if !kinds.contains(&kind) {
                    return old.clone();
                }
                let (old, new) = old.as_ref().zip(new.as_ref())?;
                let body = owned.ite(&cell(old, &r, &k), &cell(new, &r, &k));
                let (array, fact) = define_array(world, &r, &k, &body);
                facts.push(fact);
                Some(array)
            })
            .collect();
        (Heap { arrays }, facts)
    }
}

/// Whether `t` may stand in a quantifier's pattern: Z3 rejects (and the z3 crate panics on)
/// patterns with a connective, an `ite`, an equality or a binder inside.
pub fn pattern_safe(t: &Dynamic) -> bool {
    fn go(t: &Dynamic, seen: &mut std::collections::HashSet<Dynamic>) -> bool {
        if !t.is_app() {
            return false;
        }
        if !seen.insert(t.clone()) {
            return true;
        }
        let name = t.decl().name();
        ![
            "if", "ite", "and", "or", "not", "=>", "=", "distinct", "xor", "iff",
        ]
        .contains(&name.as_str())
            && t.children().iter().all(|c| go(c, seen))
    }
    go(t, &mut std::collections::HashSet::new())
}

/// `forall vars. body`, instantiated on `trigger` where Z3 takes it as a pattern
/// ([`pattern_safe`]: a term built from program values — a heap read after a
/// conditional write or a loop, a sequence updated with such a value — may hold an `ite`, a
/// conjunction or a lambda, and Z3 then builds no quantifier at all, on which the z3 crate
/// panics), else with the patterns Z3 chooses (sound either way: a pattern only says when to
/// instantiate).
pub fn forall_on(vars: &[&dyn z3::ast::Ast], trigger: &dyn z3::ast::Ast, body: &Bool) -> Bool {
    let term = z3::ast::Dynamic::from_ast(trigger);
    if pattern_safe(&term) {
        let pattern = z3::Pattern::new(&[trigger]);
        z3::ast::forall_const(vars, &[&pattern], body)
    } else {
        z3::ast::forall_const(vars, &[], body)
    }
}

/// The permission mask: an amount (a real) per location.
#[derive(Clone, Debug)]
pub struct Mask {
    pub array: Array,
}

impl Mask {
    /// No permission anywhere.
    pub fn empty(world: &World) -> Mask {
        let zero = Real::from_int(&Int::from_i64(0));
        let row = Array::const_array(&Z3Sort::int(), &zero);
        Mask {
            array: Array::const_array(&world.ref_sort, &row),
        }
    }

    pub fn amount(&self, r: &Dynamic, i: &Int) -> Real {
        cell(&self.array, r, i)
            .as_real()
            .expect("mask cells are reals")
    }

    pub fn set(&self, r: &Dynamic, i: &Int, v: &Real) -> Mask {
        Mask {
            array: store_cell(&self.array, r, i, &Dynamic::from_ast(v)),
        }
    }

    /// The mask `λ(r, k). f(r, k)` for fresh bound constants `r`, `k` given to `f`, and the
    /// fact defining it.
    pub fn from_fn(world: &World, f: impl FnOnce(&Dynamic, &Int) -> Real) -> (Mask, Bool) {
        let r = Dynamic::fresh_const("r", &world.ref_sort);
        let k = Int::fresh_const("k");
        let body = Dynamic::from_ast(&f(&r, &k));
        let (array, fact) = define_array(world, &r, &k, &body);
        (Mask { array }, fact)
    }

    pub fn ite(cond: &Bool, a: &Mask, b: &Mask) -> Mask {
        Mask {
            array: cond.ite(&a.array, &b.array),
        }
    }
}

fn cell(array: &Array, r: &Dynamic, i: &Int) -> Dynamic {
    array
        .select(r)
        .as_array()
        .expect("heap rows are arrays")
        .select(i)
}

fn store_cell(array: &Array, r: &Dynamic, i: &Int, v: &Dynamic) -> Array {
    let row = array.select(r).as_array().expect("heap rows are arrays");
    array.store(r, &row.store(i, v))
}

/// The curried array `λ r. λ k. body(r, k)` for bound constants `r`, `k` occurring in `body`,
/// and a fact about it (today `true`: the lambda defines it exactly). Callers assume the fact,
/// so the representation can change without touching them.
///
/// Measured alternative: a fresh array constant with a quantified definition (Boogie's style)
/// made the prefix-sum examples unknown and ten times slower with libz3 4.8.12.
pub fn define_array(_world: &World, r: &Dynamic, k: &Int, body: &Dynamic) -> (Array, Bool) {
    let inner = ast::lambda_const(&[k as &dyn Ast], body);
    let array = ast::lambda_const(&[r as &dyn Ast], &Dynamic::from_ast(&inner));
    (array, Bool::from_bool(true))
}

/// Heap and mask at one point: what `\old` refers to (variables are read as they are now).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub heap: Heap,
    pub mask: Mask,
}

/// Declarations shared by every state of one obligation context (one method's check).
pub struct World {
    pub ref_sort: Z3Sort,
    pub null: Dynamic,
    /// `len(r)`: the length of the array `r`.
    pub len: FuncDecl,
    /// Integer `/` and `%` outside the case every semantics agrees on (see `expr.rs`).
    pub div_other: FuncDecl,
    /// `depth(r, i)`: the height of the predicate instance at location `(r, i)`
    /// ([`World::predicate_location`]) — how many unfoldings reach its innermost instance.
    /// Predicates are least fixed points (an instance is built by finitely many folds, and
    /// its footprint cannot change while it is folded), so an instance that unfolding
    /// another one yields is strictly lower: the measure of recursion through `\unfolding`.
    depth: std::cell::OnceCell<FuncDecl>,
    pub mod_other: FuncDecl,
    /// `mul(x, y)`: the product of two integers neither of which is a literal (see
    /// [`World::product`]), and its definition once built.
    product: std::cell::OnceCell<FuncDecl>,
    product_axiom: std::cell::OnceCell<Bool>,
    /// Indexed by `kind as usize`: whether heaps have an array of that kind.
    heap_kinds: [bool; HEAP_KINDS.len()],
    /// `sum(a, lo, hi)`: a[lo] + … + a[hi − 1] for an `Int → Int` array `a` (0 when hi ≤ lo),
    /// and its limited twin, which [`World::sum_axioms`] never unfold (one unfolding per
    /// `sum` term, so instantiation terminates).
    pub sum: FuncDecl,
    sum_limited: FuncDecl,
    /// Built once: each build quantifies over fresh constants, a new term for Z3.
    sum_axioms: std::cell::OnceCell<Vec<Bool>>,
    /// Each inhaled `\matrix(m, ..)`: the matrix, the reference heap its rows were read from,
    /// and the inverse `row(m[x]) == x` assumed for its rows (see `assertion.rs`).
    matrices: std::cell::RefCell<Vec<(Dynamic, Array, std::rc::Rc<FuncDecl>)>>,
    /// The inverse functions of quantified permission updates, by the update's canonical
    /// form (see [`World::inverse_function`]).
    inverses: std::cell::RefCell<Vec<(InverseKey, std::rc::Rc<FuncDecl>)>>,
    /// Predicates whose instances were located, by id (see [`World::predicate_location`]).
    predicates: std::cell::RefCell<Vec<String>>,
    /// Per sequence sort indexed so far (by name): its indexing function and axioms
    /// ([`World::seq_at`]).
    sequence_indexing: std::cell::RefCell<Vec<SequenceIndexing>>,
    /// The datatype of each tuple type used so far (one per pair of element types: two
    /// datatypes of the same name would be two sorts).
    tuple_sorts: std::cell::RefCell<Vec<(Ty, Ty, std::rc::Rc<z3::DatatypeSort>)>>,
    /// Every change and join of the routine's heap so far, oldest first
    /// ([`World::heap_history_of`]).
    heap_steps: std::cell::RefCell<Vec<HeapStep>>,
}

/// How one heap of a routine came from earlier ones: what a heap function's frames follow
/// back (`expr::Eval::frames`).
#[derive(Clone, Debug)]
pub enum HeapStep {
    /// `after` differs from `before` only at locations nothing `mask` holds (a havoc after an
    /// exhale) or at one location `mask` holds whole (a write).
    Change {
        before: Heap,
        after: Heap,
        mask: Mask,
    },
    /// `joined` is `cond ? then : other`, array by array (the end of an `if`).
    Join {
        cond: Bool,
        then: Heap,
        other: Heap,
        joined: Heap,
    },
}

impl HeapStep {
    /// The heap this step made.
    pub fn result(&self) -> &Heap {
        match self {
            HeapStep::Change { after, .. } => after,
            HeapStep::Join { joined, .. } => joined,
        }
    }

    /// The heaps this step was made from.
    pub fn sources(&self) -> Vec<&Heap> {
        match self {
            HeapStep::Change { before, .. } => vec![before],
            HeapStep::Join { then, other, .. } => vec![then, other],
        }
    }
}

/// The canonical form of a quantified permission update, for [`World::inverse_function`].
#[derive(PartialEq)]
struct InverseKey {
    positive: Bool,
    r: Dynamic,
    i: Int,
    k: usize,
}

/// The indexing function of one sequence sort and its axioms ([`World::seq_at`]).
struct SequenceIndexing {
    /// The sort, printed.
    sort: String,
    at: std::rc::Rc<FuncDecl>,
    axioms: Vec<Bool>,
}

/// The location index of predicate 0's instances; predicate k's is this minus k.
const PREDICATE_INDEX: i64 = -(1 << 40);

/// The location index of `p(.., x)` for predicate `id` and an integer last argument `x`:
/// `INTEGER_PREDICATE_INDEX - id - 2^20 * zigzag(x)`, where `zigzag` maps 0, -1, 1, -2, .. to
/// 0, 1, 2, 3, ..; distinct for distinct `(id, x)` while there are fewer than 2^20 predicates,
/// and below every token's index.
fn integer_predicate_index(id: usize, x: &Int) -> Int {
    let zero = Int::from_i64(0);
    let two = Int::from_i64(2);
    let zigzag = x.ge(&zero).ite(
        &Int::mul(&[two, x.clone()]),
        &Int::sub(&[Int::mul(&[Int::from_i64(-2), x.clone()]), Int::from_i64(1)]),
    );
    Int::sub(&[
        Int::from_i64(INTEGER_PREDICATE_INDEX - id as i64),
        Int::mul(&[Int::from_i64(1 << 20), zigzag]),
    ])
}

/// Where the instances of predicates with an integer argument start (see
/// [`integer_predicate_index`]).
const INTEGER_PREDICATE_INDEX: i64 = -(1 << 42);

/// The location indices of an object's tokens `idle(t)`, `running(t)` and `held(t)`, below
/// every field's and every predicate's of references only (above those with an integer).
const IDLE_INDEX: i64 = -(1 << 41);
const RUNNING_INDEX: i64 = IDLE_INDEX - 1;
const HELD_INDEX: i64 = IDLE_INDEX - 2;

impl World {
    /// A world whose heaps have the [`BASE_HEAP_KINDS`] only.
    pub fn new() -> World {
        World::with_heap_kinds(&[])
    }

    /// A world whose heaps have the [`BASE_HEAP_KINDS`] and `extra`.
    pub fn with_heap_kinds(extra: &[HeapKind]) -> World {
        let ref_sort = Z3Sort::uninterpreted("Ref".into());
        let int = Z3Sort::int();
        let mut heap_kinds = [false; HEAP_KINDS.len()];
        for &kind in BASE_HEAP_KINDS.iter().chain(extra) {
            heap_kinds[kind as usize] = true;
        }
        World {
            null: Dynamic::new_const("null", &ref_sort),
            len: FuncDecl::new("len", &[&ref_sort], &int),
            div_other: FuncDecl::new("div_unspecified", &[&int, &int], &int),
            depth: std::cell::OnceCell::new(),
            mod_other: FuncDecl::new("mod_unspecified", &[&int, &int], &int),
            product: std::cell::OnceCell::new(),
            product_axiom: std::cell::OnceCell::new(),
            sequence_indexing: std::cell::RefCell::new(Vec::new()),
            ref_sort,
            heap_kinds,
            sum: sum_decl("sum"),
            sum_limited: sum_decl("sum_limited"),
            sum_axioms: std::cell::OnceCell::new(),
            matrices: std::cell::RefCell::new(Vec::new()),
            inverses: std::cell::RefCell::new(Vec::new()),
            predicates: std::cell::RefCell::new(Vec::new()),
            tuple_sorts: std::cell::RefCell::new(Vec::new()),
            heap_steps: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// Records how a heap of the routine was made (see [`HeapStep`]).
    pub fn record_heap_step(&self, step: HeapStep) {
        self.heap_steps.borrow_mut().push(step);
    }

    /// The steps that made `heap`, from the one that made it back through the heaps it was
    /// made from, each step once, at most `limit` of them (the latest first: a frame needs
    /// the near past most). A heap no recorded step made (a routine's first, a loop's
    /// fresh one) ends its path.
    pub fn heap_history_of(&self, heap: &Heap, limit: usize) -> Vec<HeapStep> {
        let steps = self.heap_steps.borrow();
        let mut history: Vec<HeapStep> = Vec::new();
        let mut visited: Vec<Heap> = Vec::new();
        let mut pending = vec![heap.clone()];
        // Terms are built from older terms, so the walk goes back in time and ends.
        while let Some(at) = pending.pop() {
            if history.len() >= limit {
                break;
            }
            if visited.iter().any(|h| h.same(&at)) {
                continue;
            }
            visited.push(at.clone());
            if let Some(step) = steps.iter().rev().find(|s| s.result().same(&at)) {
                pending.extend(step.sources().into_iter().cloned());
                history.push(step.clone());
            }
        }
        history
    }

    /// The datatype of `tuple<a, b>`: one constructor `tuple`, accessors `fst` and `snd`.
    pub fn tuple_sort(&self, a: &Ty, b: &Ty) -> std::rc::Rc<z3::DatatypeSort> {
        if let Some((_, _, s)) = self
            .tuple_sorts
            .borrow()
            .iter()
            .find(|(x, y, _)| x == a && y == b)
        {
            return s.clone();
        }
        let name = format!("tuple<{a:?},{b:?}>");
        let sort = std::rc::Rc::new(
            z3::DatatypeBuilder::new(name)
                .variant(
                    "tuple",
                    vec![
                        ("fst", z3::DatatypeAccessor::Sort(self.sort_of(a))),
                        ("snd", z3::DatatypeAccessor::Sort(self.sort_of(b))),
                    ],
                )
                .finish(),
        );
        self.tuple_sorts
            .borrow_mut()
            .push((a.clone(), b.clone(), sort.clone()));
        sort
    }

    /// The definition of [`World::sum`], by recursion on the range peeled at either end:
    /// closed formulas about fresh functions that the true sum satisfies, so assuming them is
    /// sound anywhere. Triggered by `sum` terms only; the unfoldings mention `sum_limited`.
    pub fn sum_axioms(&self) -> Vec<Bool> {
        self.sum_axioms
            .get_or_init(|| self.build_sum_axioms())
            .clone()
    }

    fn build_sum_axioms(&self) -> Vec<Bool> {
        let a = Array::fresh_const("a", &Z3Sort::int(), &Z3Sort::int());
        let lo = Int::fresh_const("lo");
        let hi = Int::fresh_const("hi");
        let apply = |f: &FuncDecl, lo: &Int, hi: &Int| {
            f.apply(&[&a as &dyn Ast, lo, hi])
                .as_int()
                .expect("sum returns an int")
        };
        let one = Int::from_i64(1);
        let zero = Int::from_i64(0);
        let full = apply(&self.sum, &lo, &hi);
        let at = |i: &Int| a.select(i).as_int().expect("an Int → Int array");
        let nonempty = lo.lt(&hi);
        let last = nonempty.ite(
            &(apply(&self.sum_limited, &lo, &(&hi - &one)) + at(&(&hi - &one))),
            &zero,
        );
        let first = nonempty.ite(
            &(at(&lo) + apply(&self.sum_limited, &(&lo + &one), &hi)),
            &zero,
        );
        let body = Bool::and(&[
            full.eq(apply(&self.sum_limited, &lo, &hi)),
            full.eq(&last),
            full.eq(&first),
        ]);
        let pattern = z3::Pattern::new(&[&full as &dyn Ast]);
        vec![ast::forall_const(
            &[&a as &dyn Ast, &lo, &hi],
            &[&pattern],
            &body,
        )]
    }

    /// Records the row inverse of an inhaled `\matrix(m, ..)` whose rows live in `rows`.
    pub fn register_matrix(&self, m: &Dynamic, rows: &Array, inverse: std::rc::Rc<FuncDecl>) {
        self.matrices
            .borrow_mut()
            .push((m.clone(), rows.clone(), inverse));
    }

    /// The inverse function of binder `k` of a quantified permission update whose binders
    /// `xs` have a positive amount where `positive` holds, at location `(r, i)`: the one an
    /// earlier update of the same form got (the same terms once the binders are replaced by
    /// canonical constants), else a new one. Its axiom, `positive ⇒ inv(r, i) == x_k`, is
    /// then the same, so sharing adds no fact, and an exhale and a later inhale of one
    /// assertion (a par block's contract, taken and given back) test the same condition:
    /// Z3 sees the two updates cancel instead of relating two inverses through the index
    /// (`g * N + k` across a nested par block: two minutes, against a tenth of a second).
    pub fn inverse_function(
        &self,
        xs: &[Int],
        k: usize,
        positive: &Bool,
        r: &Dynamic,
        i: &Int,
    ) -> std::rc::Rc<FuncDecl> {
        let canonical: Vec<Int> = (0..xs.len())
            .map(|n| Int::new_const(format!("binder'{n}")))
            .collect();
        let pairs: Vec<(&Int, &Int)> = xs.iter().zip(&canonical).collect();
        let key = InverseKey {
            positive: positive.substitute(&pairs),
            r: r.substitute(&pairs),
            i: i.substitute(&pairs),
            k,
        };
        let mut inverses = self.inverses.borrow_mut();
        if let Some((_, f)) = inverses.iter().find(|(known, _)| *known == key) {
            return f.clone();
        }
        let id = super::solver::declaration_id();
        let f = std::rc::Rc::new(FuncDecl::new(
            format!("inv{id}_{k}"),
            &[&self.ref_sort, &Z3Sort::int()],
            &Z3Sort::int(),
        ));
        inverses.push((key, f.clone()));
        f
    }

    /// The row inverse of the latest `\matrix(m, ..)` inhaled with the same reference heap
    /// (the same terms), if any: a candidate inverse for permissions to `m[x][..]`.
    pub fn matrix_inverse(&self, m: &Dynamic, rows: &Array) -> Option<std::rc::Rc<FuncDecl>> {
        self.matrices
            .borrow()
            .iter()
            .rev()
            .find(|(m2, rows2, _)| m2 == m && rows2 == rows)
            .map(|(_, _, f)| f.clone())
    }

    /// The height of the predicate instance at `(r, i)` (see the field `depth`).
    /// Declared on first use: a declaration shifts Z3's term ids, and with them its search
    /// on unrelated proofs.
    pub fn depth(&self, r: &Dynamic, i: &Int) -> Int {
        self.depth
            .get_or_init(|| {
                FuncDecl::new("depth'", &[&self.ref_sort, &Z3Sort::int()], &Z3Sort::int())
            })
            .apply(&[r as &dyn Ast, i as &dyn Ast])
            .as_int()
            .expect("an integer")
    }

    /// The location of the predicate instance `name(args)`: `(inst(args), index)` for a
    /// function `inst` of the predicate and an index of its own (below every field's), so
    /// instances of different predicates, fields and cells never share a location. Returned
    /// with the facts making `inst` injective (an inverse per argument), which the caller
    /// assumes (every time: a scope may have dropped them).
    ///
    /// A predicate of one reference (`p()` of a class, applied to its object, or `list(n)`)
    /// sits on that object itself, as tokens do: injective by construction, no facts. The
    /// inverse-function facts are what the other shapes need, but they make every model of
    /// the references infinite or hard to find (libz3 4.8.12 ran out of budget on
    /// `this != null` and one injective `Ref -> Ref` function), so a failing obligation near
    /// a predicate came back unknown instead of failed.
    pub fn predicate_location(&self, name: &str, args: &[Dynamic]) -> (Dynamic, Int, Vec<Bool>) {
        let id = {
            let mut names = self.predicates.borrow_mut();
            match names.iter().position(|n| n == name) {
                Some(k) => k,
                None => {
                    names.push(name.to_string());
                    names.len() - 1
                }
            }
        };
        let index = Int::from_i64(PREDICATE_INDEX - id as i64);
        let is_ref = |d: &Dynamic| d.get_sort() == self.ref_sort;
        match args {
            [object] if is_ref(object) => return (object.clone(), index, Vec::new()),
            // One integer, after an optional reference: folded into the index, injectively,
            // below every token's index, so again no facts (an injection `Int -> Ref` would
            // need infinitely many references: Z3 could never show a failing obligation).
            [object, x] if is_ref(object) => {
                if let Some(x) = x.as_int() {
                    return (object.clone(), integer_predicate_index(id, &x), Vec::new());
                }
            }
            [x] => {
                if let Some(x) = x.as_int() {
                    let holder = Dynamic::new_const("predicates'", &self.ref_sort);
                    return (holder, integer_predicate_index(id, &x), Vec::new());
                }
            }
            _ => {}
        }
        let sorts: Vec<Z3Sort> = args.iter().map(|a| a.get_sort()).collect();
        let sort_refs: Vec<&Z3Sort> = sorts.iter().collect();
        let inst = FuncDecl::new(format!("pred_{name}"), &sort_refs, &self.ref_sort);
        let arg_refs: Vec<&dyn Ast> = args.iter().map(|a| a as &dyn Ast).collect();
        let r = inst.apply(&arg_refs);
        let xs: Vec<Dynamic> = sorts.iter().map(|s| Dynamic::fresh_const("x", s)).collect();
        let x_refs: Vec<&dyn Ast> = xs.iter().map(|x| x as &dyn Ast).collect();
        let at = inst.apply(&x_refs);
        let pattern = z3::Pattern::new(&[&at as &dyn Ast]);
        let facts = xs
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let inv =
                    FuncDecl::new(format!("pred_{name}_arg{k}"), &[&self.ref_sort], &sorts[k]);
                let back = inv.apply(&[&at as &dyn Ast]);
                ast::forall_const(&x_refs, &[&pattern], &back.eq(x))
            })
            .collect();
        (r, index, facts)
    }

    /// The location of the token `idle(t)`, `running(t)` or `held(t)` of object `t` (`op`
    /// names which): on the object itself, at an index no field or predicate uses, so no facts
    /// are needed to keep tokens of different objects apart.
    pub fn token_location(&self, t: &Dynamic, op: crate::syntax::Builtin) -> (Dynamic, Int) {
        let index = match op {
            crate::syntax::Builtin::Running => RUNNING_INDEX,
            crate::syntax::Builtin::Held => HELD_INDEX,
            _ => IDLE_INDEX,
        };
        (t.clone(), Int::from_i64(index))
    }

    /// `committed(o)`: the lock of `o` holds its invariant. A fact that, once true, stays
    /// true (no heap or mask is involved), assumed by `commit o`.
    pub fn committed(&self, o: &Dynamic) -> Bool {
        let f = FuncDecl::new("committed'", &[&self.ref_sort], &Z3Sort::bool());
        f.apply(&[o as &dyn Ast]).as_bool().expect("a boolean")
    }

    pub fn has_heap_kind(&self, kind: HeapKind) -> bool {
        self.heap_kinds[kind as usize]
    }

    /// The heap kind of locations holding `ty`, or unsupported where heaps lack it (an array
    /// of sequences of references or of sequences; fields of any kind are always present).
    pub fn heap_kind(&self, ty: &Ty, span: Span) -> Result<HeapKind, EncodeError> {
        if matches!(ty, Ty::Set(_) | Ty::Map(..) | Ty::Bag(_) | Ty::Tuple(..)) {
            return Err(EncodeError::Unsupported {
                what: "sets, bags and maps in the heap (fields and array cells of such a type)"
                    .into(),
                span,
            });
        }
        if ty.sequence_depth() > 2 {
            return Err(EncodeError::Unsupported {
                what: "sequences nested more than twice in the heap (fields and array cells of \
                       such a type; locals, parameters and ghost values may nest deeper)"
                    .into(),
                span,
            });
        }
        let kind = ty.heap_kind();
        if self.has_heap_kind(kind) {
            Ok(kind)
        } else {
            Err(EncodeError::Unsupported {
                what: "array cells holding sequences of references or of sequences".into(),
                span,
            })
        }
    }

    pub fn value_sort(&self, kind: HeapKind) -> Z3Sort {
        let seq = |elem: Ty| Ty::Seq(Box::new(elem));
        let object = || Ty::Object(String::new());
        self.sort_of(&match kind {
            HeapKind::Int => Ty::Int,
            HeapKind::Bool => Ty::Bool,
            HeapKind::Perm => Ty::Perm,
            HeapKind::Ref => object(),
            HeapKind::SeqInt => seq(Ty::Int),
            HeapKind::SeqBool => seq(Ty::Bool),
            HeapKind::SeqRef => seq(object()),
            HeapKind::SeqSeqInt => seq(seq(Ty::Int)),
            HeapKind::SeqSeqBool => seq(seq(Ty::Bool)),
            HeapKind::SeqSeqRef => seq(seq(object())),
        })
    }

    /// The Z3 sort of values of `ty`.
    pub fn sort_of(&self, ty: &Ty) -> Z3Sort {
        match ty {
            Ty::Int => Z3Sort::int(),
            Ty::Bool => Z3Sort::bool(),
            Ty::Perm => Z3Sort::real(),
            Ty::Array(_) | Ty::Object(_) | Ty::Null => self.ref_sort.clone(),
            Ty::Seq(elem) | Ty::Option(elem) => Z3Sort::seq(&self.sort_of(elem)),
            Ty::Set(elem) => Z3Sort::set(&self.sort_of(elem)),
            Ty::Map(k, v) => Z3Sort::array(&self.sort_of(k), &Z3Sort::seq(&self.sort_of(v))),
            Ty::Bag(elem) => Z3Sort::array(&self.sort_of(elem), &Z3Sort::int()),
            Ty::Tuple(a, b) => self.tuple_sort(a, b).sort.clone(),
        }
    }

    /// `None` of type `option<elem>`.
    pub fn typed_none(&self, elem: &Ty) -> Value {
        Value {
            term: Term::Seq(Seq::empty(&self.sort_of(elem))),
            ty: Ty::Option(Box::new(elem.clone())),
        }
    }

    pub fn len_of(&self, r: &Dynamic) -> Int {
        self.len
            .apply(&[r as &dyn Ast])
            .as_int()
            .expect("len is an int")
    }

    /// `x * y`, and whether it is the function `mul` (then its definition,
    /// [`World::product_axiom`], must be assumed). A product of two non-literals is `mul`:
    /// Z3 normalises an interpreted product inside a term (`Y * i` may become `i * Y`)
    /// differently in a quantifier's pattern and in the ground term it should match, so an
    /// inverse function over `m[Y * i + j]` was never instantiated; and its nonlinear
    /// arithmetic gave up ("incomplete") before instantiating at all. An application of `mul`
    /// matches syntactically, and the definition brings the product back wherever arithmetic
    /// needs it. Without the definition, `mul` is weaker than `*`: still sound.
    pub fn product(&self, x: &Int, y: &Int) -> (Int, bool) {
        // A numeral as built (no `simplify`: new terms change Z3's numbering, and so its search
        // in programs with no such product; blelloch_2d took 5 s, not 1.8).
        let literal = |t: &Int| t.as_i64().is_some() || t.as_u64().is_some();
        if literal(x) || literal(y) {
            (Int::mul(&[x, y]), false)
        } else {
            let product = self
                .product_decl()
                .apply(&[x as &dyn Ast, y as &dyn Ast])
                .as_int()
                .expect("mul is an int");
            (product, true)
        }
    }

    /// `mul`, declared when first used (a declaration changes Z3's numbering of terms, and with
    /// it the search, in programs that have no such product).
    fn product_decl(&self) -> &FuncDecl {
        self.product.get_or_init(|| {
            let int = Z3Sort::int();
            FuncDecl::new("mul", &[&int, &int], &int)
        })
    }

    /// `mul(x, y) = x * y` for all `x`, `y`, instantiated at `mul` terms; one term per world.
    pub fn product_axiom(&self) -> Bool {
        self.product_axiom
            .get_or_init(|| {
                let x = Int::fresh_const("x");
                let y = Int::fresh_const("y");
                let product = self
                    .product_decl()
                    .apply(&[&x as &dyn Ast, &y as &dyn Ast])
                    .as_int()
                    .expect("mul is an int");
                let pattern = z3::Pattern::new(&[&product as &dyn Ast]);
                ast::forall_const(
                    &[&x as &dyn Ast, &y as &dyn Ast],
                    &[&pattern],
                    &product.eq(Int::mul(&[&x, &y])),
                )
            })
            .clone()
    }

    /// `s[i]`: `seq_at(s, i)`, an uninterpreted function equal to Z3's `seq.nth` (axiom),
    /// declared per sequence sort on first use. Quantified facts about a sequence's cells
    /// (`\forall k; 0 <= k < m; p[k] == k`) are then instantiated at `seq_at` terms, and the
    /// axioms of [`World::sequence_axioms`] carry an index into a concatenation, a slice or a
    /// one-element sequence to its parts, creating the terms those facts need. With `seq.nth`
    /// alone, libz3 4.8's sequence solver never created them: a loop building `0 .. n` by
    /// `p = p ++ seq<int>{m}` came back unknown after 30 s (7 ms with the axioms).
    pub fn seq_at(&self, s: &Seq, i: &Int) -> Dynamic {
        let at = self.indexing(s).0;
        at.apply(&[s as &dyn Ast, i as &dyn Ast])
    }

    /// The axioms of the indexing function of `s`'s sort (built with it).
    pub fn sequence_axioms(&self, s: &Seq) -> Vec<Bool> {
        self.indexing(s).1
    }

    /// The indexing function of `s`'s sort and its axioms, built once per sort and world: with
    /// `at` it, `at(s, i) = nth(s, i)`; in range, `at(a ++ b, i)` is `at(a, i)` below `|a|`
    /// and `at(b, i - |a|)` from there, `at(extract(s, o, l), i) = at(s, o + i)`, and
    /// `at(unit(x), 0) = x`. All valid in the sequence theory, so they can only add proofs of
    /// true facts.
    fn indexing(&self, s: &Seq) -> (std::rc::Rc<FuncDecl>, Vec<Bool>) {
        let sort = s.get_sort();
        let key = sort.to_string();
        if let Some(known) = self
            .sequence_indexing
            .borrow()
            .iter()
            .find(|known| known.sort == key)
        {
            return (known.at.clone(), known.axioms.clone());
        }
        let zero = Int::from_i64(0);
        let elem_sort = s.nth(&zero).get_sort();
        let n = self.sequence_indexing.borrow().len();
        let at = std::rc::Rc::new(FuncDecl::new(
            format!("seq_at_{n}"),
            &[&sort, &Z3Sort::int()],
            &elem_sort,
        ));
        let apply = |s: &Seq, i: &Int| at.apply(&[s as &dyn Ast, i as &dyn Ast]);
        let fresh_seq = |name: &str| {
            Dynamic::fresh_const(name, &sort)
                .as_seq()
                .expect("a constant of a sequence sort is a sequence")
        };
        let forall = |vars: &[&dyn Ast], trigger: &Dynamic, body: &Bool| {
            ast::forall_const(vars, &[&z3::Pattern::new(&[trigger as &dyn Ast])], body)
        };
        let (a, b) = (fresh_seq("a"), fresh_seq("b"));
        let (i, o, l) = (
            Int::fresh_const("i"),
            Int::fresh_const("o"),
            Int::fresh_const("l"),
        );
        let cell = apply(&a, &i);
        let definition = forall(&[&a, &i], &cell, &cell.eq(a.nth(&i)));
        let joined = Seq::concat(&[&a, &b]);
        let cell = apply(&joined, &i);
        let in_range = Bool::and(&[i.ge(&zero), i.lt(Int::add(&[a.length(), b.length()]))]);
        let parts = i.lt(a.length()).ite(
            &apply(&a, &i),
            &apply(&b, &Int::sub(&[i.clone(), a.length()])),
        );
        let concat = forall(&[&a, &b, &i], &cell, &in_range.implies(cell.eq(&parts)));
        let cell = apply(&seq_extract(&a, &o, &l), &i);
        let in_range = Bool::and(&[
            o.ge(&zero),
            l.ge(&zero),
            Int::add(&[&o, &l]).le(a.length()),
            i.ge(&zero),
            i.lt(&l),
        ]);
        let slice = forall(
            &[&a, &o, &l, &i],
            &cell,
            &in_range.implies(cell.eq(apply(&a, &Int::add(&[&o, &i])))),
        );
        let x = Dynamic::fresh_const("x", &elem_sort);
        let unit = Seq::unit(&x);
        let single = forall(
            &[&x],
            &Dynamic::from_ast(&unit),
            &apply(&unit, &zero).eq(&x),
        );
        // The definition ties `at` to the theory (cells of sequences built from literals,
        // updates, lengths), so that a refuted goal has a model: without it, the broken
        // insertion sort (`tests/data/verify/insertion_sort_claims_strict_order.pvl`) came back
        // unknown (resource limit) instead of failed.
        let axioms = vec![definition, concat, slice, single];
        self.sequence_indexing.borrow_mut().push(SequenceIndexing {
            sort: key,
            at: at.clone(),
            axioms: axioms.clone(),
        });
        (at, axioms)
    }

    /// Facts true in every state: lengths are non-negative.
    pub fn axioms(&self) -> Vec<Bool> {
        let r = Dynamic::fresh_const("r", &self.ref_sort);
        let len = self.len_of(&r);
        let pattern = z3::Pattern::new(&[&len as &dyn Ast]);
        vec![ast::forall_const(
            &[&r as &dyn Ast],
            &[&pattern],
            &len.ge(Int::from_i64(0)),
        )]
    }

    /// A fresh *constant* of the sort of `ty`, to quantify over (a function's axioms): unlike
    /// [`World::fresh`], an option is not normalised (a quantifier binds constants only), so
    /// it ranges over every sequence; an option is read by its first element, so that is only
    /// more instances.
    pub fn bound(&self, name: &str, ty: &Ty) -> Value {
        match ty {
            Ty::Option(e) => Value {
                term: Term::Seq(Seq::fresh_const(name, &self.sort_of(e))),
                ty: ty.clone(),
            },
            Ty::Bag(e) => Value {
                term: Term::Bag(Array::fresh_const(name, &self.sort_of(e), &Z3Sort::int())),
                ty: ty.clone(),
            },
            Ty::Map(k, v) => Value {
                term: Term::Map(MapTerm::of_entries(Array::fresh_const(
                    name,
                    &self.sort_of(k),
                    &Z3Sort::seq(&self.sort_of(v)),
                ))),
                ty: ty.clone(),
            },
            _ => self.fresh(name, ty),
        }
    }

    /// A fresh constant of the sort of `ty` (for an option, a normalised term over fresh
    /// constants: `None` or `Some` of one).
    pub fn fresh(&self, name: &str, ty: &Ty) -> Value {
        let term = match ty {
            Ty::Int => Term::Int(Int::fresh_const(name)),
            Ty::Bool => Term::Bool(Bool::fresh_const(name)),
            Ty::Perm => Term::Real(Real::fresh_const(name)),
            Ty::Array(_) | Ty::Object(_) | Ty::Null => {
                Term::Ref(Dynamic::fresh_const(name, &self.ref_sort))
            }
            Ty::Seq(e) => Term::Seq(Seq::fresh_const(name, &self.sort_of(e))),
            Ty::Set(e) => Term::Set(Set::fresh_const(name, &self.sort_of(e))),
            Ty::Tuple(..) => Term::Tuple(Dynamic::fresh_const(name, &self.sort_of(ty))),
            // Normalised: `x ↦ max(count[x], 0)`.
            Ty::Bag(e) => {
                let elem_sort = self.sort_of(e);
                let count = Array::fresh_const(name, &elem_sort, &Z3Sort::int());
                let x = Dynamic::fresh_const(&format!("{name}_elem"), &elem_sort);
                let n = count.select(&x).as_int().expect("a multiplicity");
                let zero = Int::from_i64(0);
                let normal = n.ge(&zero).ite(&n, &zero);
                Term::Bag(ast::lambda_const(
                    &[&x as &dyn Ast],
                    &Dynamic::from_ast(&normal),
                ))
            }
            // Normalised as options are: `k ↦ has[k] ? [at[k]] : []` over fresh arrays.
            Ty::Map(k, v) => {
                let key_sort = self.sort_of(k);
                let value_sort = self.sort_of(v);
                let has = Set::fresh_const(&format!("{name}_has"), &key_sort);
                let at = Array::fresh_const(&format!("{name}_at"), &key_sort, &value_sort);
                let key = Dynamic::fresh_const(&format!("{name}_key"), &key_sort);
                let entry = has
                    .member(&key)
                    .ite(&Seq::unit(&at.select(&key)), &Seq::empty(&value_sort));
                Term::Map(MapTerm {
                    entries: ast::lambda_const(&[&key as &dyn Ast], &Dynamic::from_ast(&entry)),
                    keys: has,
                })
            }
            Ty::Option(e) => {
                let some = Bool::fresh_const(&format!("{name}_some"));
                let elem = self.fresh(name, e).term.as_dynamic();
                Term::Seq(some.ite(&Seq::unit(&elem), &Seq::empty(&self.sort_of(e))))
            }
        };
        Value {
            term,
            ty: ty.clone(),
        }
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

/// The term of a heap cell as a value of `ty`.
pub fn value_of(ty: &Ty, d: Dynamic) -> Value {
    let term = match ty {
        Ty::Int => Term::Int(d.as_int().expect("int cell")),
        Ty::Bool => Term::Bool(d.as_bool().expect("bool cell")),
        Ty::Perm => Term::Real(d.as_real().expect("real cell")),
        Ty::Array(_) | Ty::Object(_) | Ty::Null => Term::Ref(d),
        Ty::Seq(_) => Term::Seq(d.as_seq().expect("seq cell")),
        Ty::Set(_) => Term::Set(d.as_set().expect("a set")),
        Ty::Map(..) => Term::Map(MapTerm::of_entries(d.as_array().expect("a map"))),
        Ty::Bag(_) => Term::Bag(d.as_array().expect("a bag")),
        Ty::Tuple(..) => Term::Tuple(d),
        // A cell holds any sequence: read as an option, only its first element counts.
        Ty::Option(_) => {
            let s = d.as_seq().expect("option cell");
            let zero = Int::from_i64(0);
            let first = Seq::unit(&s.nth(zero.clone()));
            Term::Seq(
                s.length()
                    .gt(&zero)
                    .ite(&first, &seq_extract(&s, &zero, &zero)),
            )
        }
    };
    Value {
        term,
        ty: ty.clone(),
    }
}

pub fn real(n: i64) -> Real {
    Real::from_int(&Int::from_i64(n))
}

fn sum_decl(name: &str) -> FuncDecl {
    let int = Z3Sort::int();
    FuncDecl::new(name, &[&Z3Sort::array(&int, &int), &int, &int], &int)
}

/// `s[offset .. offset + length]` — the one sequence operation z3 0.22 does not wrap.
pub fn seq_extract(s: &Seq, offset: &Int, length: &Int) -> Seq {
    let ctx = s.get_ctx();
    // SAFETY: the three ASTs are live terms of `ctx` (the calling thread's context, which
    // every term here belongs to); Z3_mk_seq_extract returns a new term of that context, or
    // null on a sort error, which the sorts above rule out. `wrap` takes a reference to it.
    unsafe {
        let raw = z3_sys::Z3_mk_seq_extract(
            ctx.get_z3_context(),
            s.get_z3_ast(),
            offset.get_z3_ast(),
            length.get_z3_ast(),
        )
        .expect("Z3_mk_seq_extract on well-sorted terms");
        Seq::wrap(ctx, raw)
    }
}
