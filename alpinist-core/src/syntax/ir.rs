//! The IR: one tree of typed enums carrying code and specifications together.
//!
//! Architecture invariants:
//! - Code and annotations live in the same nodes (a method owns its contract, a loop its
//!   invariants, a par block its thread contract), so a transformation cannot forget one.
//! - Every node carries the [`Span`] of the text it came from; nodes made by a transformation
//!   carry the span of the node they were derived from.
//! - The IR holds no comments and no parentheses: comments travel beside it as
//!   [`crate::syntax::Trivia`], parentheses are recomputed by the printer from precedence.
//! - Surface spellings that mean the same thing are one node (`bool`/`boolean`, `|s|`/`(\| s \|)`,
//!   `and`-joined blocks and `parallel { }`), except where the distinction is the user's style
//!   and the printer must reproduce it ([`BarrierStyle`], [`ParGroupStyle`]).
//! - Nothing here is resolved: names are strings; `check` gives them meaning.

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};

pub use super::span::Span;

mod walk;
pub use walk::AssignedLocal;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole source file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub items: Vec<Item>,
    pub span: Span,
}

// A file holds a handful of items: their size does not matter, boxing would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Item {
    Class(Class),
    /// A top-level method, pure function or predicate (outside any class).
    Member(Member),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Class {
    /// Clauses written before the class (1.x `lock_invariant I; class C { .. }`); usually
    /// empty. The class span covers them.
    pub contract: Contract,
    pub name: Ident,
    pub members: Vec<Member>,
    pub span: Span,
    /// `model M { .. }` (VerCors' process-algebra models, `--check-history`): fields, and
    /// `action`/`process` declarations (see [`ModelMember`]) instead of methods.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_model: bool,
}

/// A class member or top-level declaration with everything written before it.
///
/// `gpuopts` and `contract` are kept on every member, also where they are not allowed (before a
/// field): the parser accepts them so that `check` can report the misplacement with a span.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub gpuopts: Vec<GpuOpt>,
    pub contract: Contract,
    pub kind: MemberKind,
    pub span: Span,
}

// As for `Item`: a handful per class, boxing methods would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MemberKind {
    /// `int x;` — one member per declared name (`int x, y;` becomes two).
    Field(Field),
    /// Methods, constructors, pure functions and predicates (`resource p() = e;`).
    Method(Method),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub ty: Type,
    pub name: Ident,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Modifier {
    Static,
    Pure,
    Inline,
    ThreadLocal,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// In the order written.
    pub modifiers: Vec<Modifier>,
    /// `None` for a constructor. A predicate has [`TypeKind::Resource`]. `void` for a `run`
    /// block.
    pub return_type: Option<Type>,
    pub name: Ident,
    /// `T f<T, U>(..)`: the type parameters of a generic method, function or predicate
    /// (usually none). Inside it, a type written `T` names the parameter, not a class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub type_params: Vec<Ident>,
    pub params: Vec<Param>,
    pub body: MethodBody,
    pub span: Span,
    /// `run { .. }`: the thread body of its class, a `void run()` started by `fork` and
    /// awaited by `join` (written without a type and parameters).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_run: bool,
    /// A model's `action a(..);` or `process p(..) = P;` (the process, if any, is the
    /// [`MethodBody::Expr`]; `return_type` is `None`, as for a constructor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_member: Option<ModelMember>,
}

/// What a member of a `model` declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelMember {
    /// `action a(params);`: one atomic step on the model's fields, specified by its contract
    /// (`modifies`, `accessible`, `requires`, `ensures` over `\old` field values).
    Action,
    /// `process p(params) = P;`: a process built of actions and processes with `*`
    /// (sequence), `+` (choice), `||` (parallel), `c ? P : Q` and `empty`.
    Process,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum MethodBody {
    /// `;` — no body: a trusted lemma, an abstract method or predicate.
    Abstract,
    Block(Block),
    /// `= expr;` — a pure function or predicate body.
    Expr(Expr),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub ty: Type,
    pub name: Ident,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Type {
    pub kind: TypeKind,
    pub span: Span,
}

impl Type {
    /// `T[][]` (sized or not) with `T` an `int` or `boolean`: a matrix `gpuopt matrix_lin`
    /// can linearise.
    pub fn is_scalar_matrix(&self) -> bool {
        match &self.kind {
            TypeKind::Array { elem, .. } => match &elem.kind {
                TypeKind::Array { elem, .. } => {
                    matches!(elem.kind, TypeKind::Int | TypeKind::Bool)
                }
                _ => false,
            },
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TypeKind {
    Int,
    /// `boolean` (also written `bool`).
    Bool,
    Void,
    /// `frac`: a fraction in (0, 1].
    Frac,
    /// `zfrac`: a fraction in [0, 1].
    ZFrac,
    Rational,
    Resource,
    Seq(Box<Type>),
    Set(Box<Type>),
    Bag(Box<Type>),
    Option(Box<Type>),
    Map(Box<Type>, Box<Type>),
    /// `tuple<A, B>`: a pair.
    Tuple(Box<Type>, Box<Type>),
    /// `T[]`, or `T[size]` where the size is informative. `int[M][N]` is
    /// `Array { elem: Array { elem: int, size: N }, size: M }` (M rows of N).
    Array {
        elem: Box<Type>,
        size: Option<Box<Expr>>,
    },
    /// A class name.
    Class(Ident),
}

/// Specification clauses in the order written.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    pub clauses: Vec<Clause>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Clause {
    pub kind: ClauseKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClauseKind {
    Requires(Expr),
    Ensures(Expr),
    Context(Expr),
    ContextEverywhere(Expr),
    LoopInvariant(Expr),
    /// `given T x;` — a ghost input parameter.
    Given(Param),
    /// `yields T x;` — a ghost output parameter.
    Yields(Param),
    /// 1.x: `lock_invariant I;` on a class constructor or method.
    LockInvariant(Expr),
    /// `decreases ...;` — a termination measure on a method or a loop.
    Decreases(Decreases),
    /// `modifies x, y;` — on a model's action or process: the fields it may change.
    Modifies(Vec<Ident>),
    /// `accessible x, y;` — on a model's action or process: the fields it may read.
    Accessible(Vec<Ident>),
}

/// What a `decreases` clause says about termination.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Decreases {
    /// `decreases e1, .., en;` — a measure, compared lexicographically, that is non-negative
    /// and strictly smaller at every recursive call and every loop iteration. `decreases;`
    /// is the empty tuple: the routine terminates and never recurses.
    Measure(Vec<Expr>),
    /// `decreases assume;` — termination is trusted, not checked.
    Assume,
}

impl ClauseKind {
    /// The keyword the clause is written with.
    pub fn keyword(&self) -> &'static str {
        match self {
            ClauseKind::Requires(_) => "requires",
            ClauseKind::Ensures(_) => "ensures",
            ClauseKind::Context(_) => "context",
            ClauseKind::ContextEverywhere(_) => "context_everywhere",
            ClauseKind::LoopInvariant(_) => "loop_invariant",
            ClauseKind::Given(_) => "given",
            ClauseKind::Yields(_) => "yields",
            ClauseKind::LockInvariant(_) => "lock_invariant",
            ClauseKind::Decreases(_) => "decreases",
            ClauseKind::Modifies(_) => "modifies",
            ClauseKind::Accessible(_) => "accessible",
        }
    }
}

/// An Alpinist optimisation annotation: one `gpuopt ...;` line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuOpt {
    pub kind: GpuOptKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum GpuOptKind {
    /// `gpuopt loop_unroll i K;`
    LoopUnroll { var: Ident, factor: Expr },
    /// `gpuopt iter_merge i M;`
    IterMerge { var: Ident, factor: Expr },
    /// `gpuopt matrix_lin m R X Y;` (row-major) or `... C X Y;` (column-major).
    MatrixLin {
        matrix: Ident,
        order: MatrixOrder,
        rows: Expr,
        cols: Expr,
    },
    /// `gpuopt glob_to_reg a e1 e2 ...;` — printed with commas. `rows` is the two-dimensional
    /// form's row, `gpuopt glob_to_reg m[i] j;` (the cell `m[i][j]`).
    GlobToReg {
        array: Ident,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        rows: Vec<Expr>,
        indices: Vec<Expr>,
    },
    /// `gpuopt tile inter T;` / `gpuopt tile intra T;`
    Tile { layout: TileLayout, size: Expr },
    /// `gpuopt fuse F N;` — fuse F consecutive par blocks; N is a thread-block hint.
    Fuse {
        count: Expr,
        block_hint: Option<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatrixOrder {
    RowMajor,
    ColumnMajor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TileLayout {
    Inter,
    Intra,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StmtKind {
    /// `int x, y = 0;`
    LocalDecl {
        ty: Type,
        vars: Vec<LocalVar>,
    },
    /// `x = e;`, `a[i] = e;`, `m[i][j] = e;`, `this.x = e;`
    Assign {
        target: Expr,
        value: Expr,
    },
    /// `x++;`
    Increment(Expr),
    /// `x--;`
    Decrement(Expr),
    /// An expression evaluated for its effect: calls, `new C();`.
    Expr(Expr),
    If {
        cond: Expr,
        then_branch: Box<Stmt>,
        else_branch: Option<Box<Stmt>>,
    },
    /// `loop_invariant ...; while (c) s`
    While {
        contract: Contract,
        cond: Expr,
        body: Box<Stmt>,
    },
    /// `loop_invariant ...; for (init; c; update) s`
    For {
        contract: Contract,
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        update: Option<Box<Stmt>>,
        body: Box<Stmt>,
    },
    Block(Block),
    Return(Option<Expr>),
    /// One or more par blocks launched together.
    Par(ParGroup),
    Barrier(Barrier),
    Assert(Expr),
    Assume(Expr),
    /// `inhale e;`: the permissions and facts of `e` are added, unchecked (trusted, like
    /// `assume`).
    Inhale(Expr),
    /// `exhale e;`: the permissions of `e` are checked and taken away, its facts checked.
    Exhale(Expr),
    /// `refute e;`: the checker must not be able to prove `e` at this point — a state in which
    /// `e` is false must be consistent with everything it knows (VerCors' `refute`; `refute
    /// false;` says the point is reachable).
    Refute(Expr),
    /// `ghost <statement>`
    Ghost(Box<Stmt>),
    /// `invariant name(I) { ... }`: a resource invariant, used by `atomic(name)` inside.
    Invariant {
        name: Ident,
        inv: Expr,
        body: Block,
    },
    /// `atomic(name) { ... }`
    Atomic {
        name: Ident,
        body: Block,
    },
    /// 1.x `lock e;`
    Lock(Expr),
    /// 1.x `unlock e;`
    Unlock(Expr),
    /// `fold p(args);`
    Fold(Expr),
    /// `unfold p(args);`
    Unfold(Expr),
    /// `fork t;`: starts the `run` block of object `t` in a new thread.
    Fork(Expr),
    /// `join t;`: waits for the thread `fork t` started.
    Join(Expr),
    /// `commit o;`: hands the lock invariant of `o` to its lock (VerCors 2.x).
    Commit(Expr),
    /// `wait o;`: releases the lock of `o` until notified, then takes it again.
    Wait(Expr),
    /// `notify o;`: wakes a thread waiting on the lock of `o` (which must be held).
    Notify(Expr),
    /// A `gpuopt` line in statement position. It must stand directly before the loop
    /// (`loop_unroll`, `iter_merge`) or the first par block (`fuse`) it targets; `check`
    /// reports it otherwise.
    GpuOpt(GpuOpt),
    /// `goto l;`: continues after `label l;` (VerCors 2.x).
    Goto(Ident),
    /// `label l;`: a target of `goto l;`; does nothing itself.
    Label(Ident),
    /// `action(m, p, rest, a(args)) { .. }`: the body performs action `a` of model object `m`,
    /// whose process state `m.state(p, a(args) * rest)` becomes `m.state(p, rest)`.
    Action {
        header: Box<ActionHeader>,
        body: Block,
    },
}

/// The parenthesised part of `action(m, p, rest, a(args)) { .. }` (boxed: statements stay
/// small).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActionHeader {
    /// The model object.
    pub model: Expr,
    /// The fraction `p` of the process state `m.state(p, ..)` the block takes and gives.
    pub fraction: Expr,
    /// The process left after the action.
    pub rest: Expr,
    /// The action performed, `m.a(args)`.
    pub action: Expr,
    /// VerCors 1.x's list of the fields whose history permission the block converts, with
    /// the amount: `action(m, p, rest, m.a(), x, write)` (2.x derives them from `modifies`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub converts: Vec<(Expr, Expr)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalVar {
    pub name: Ident,
    pub init: Option<Expr>,
    pub span: Span,
}

/// Par blocks launched together as one kernel launch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParGroup {
    /// At least one.
    pub blocks: Vec<ParBlock>,
    pub style: ParGroupStyle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ParGroupStyle {
    /// `par A(..) {..}` or, 1.x, `par A(..) {..} and B(..) {..}`.
    And,
    /// 2.x `parallel { par A(..) {..} par B(..) {..} }`.
    Parallel,
    /// 1.x `sequential { par A(..) {..} par B(..) {..} }`: the blocks run one after another,
    /// like consecutive par statements.
    Sequential,
    /// `vec(int j = lo .. hi) { .. }`: one block whose lanes run in lock-step; it needs no
    /// contract (the checker infers one where it has none: `verify::vector`).
    Vector,
}

/// `par Name(int t = lo .. hi, ...) <contract> { body }`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParBlock {
    pub label: Option<Ident>,
    /// Empty for `par { }` without iterators; two or more for a multi-dimensional thread space.
    pub iters: Vec<ParIter>,
    pub contract: Contract,
    pub body: Block,
    pub span: Span,
}

/// `int t = lo .. hi` — the half-open range [lo, hi).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParIter {
    pub ty: Type,
    pub name: Ident,
    pub lo: Expr,
    pub hi: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Barrier {
    /// The label of an enclosing par block.
    pub label: Ident,
    /// 1.x `barrier(L; inv1, inv2)`: the `invariant` blocks it synchronises with; usually empty.
    pub invariants: Vec<Ident>,
    pub contract: Contract,
    pub body: Block,
    pub style: BarrierStyle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BarrierStyle {
    /// `barrier(L) { requires P; ensures Q; }` — clauses (then any statements) inside the braces.
    ClausesInside,
    /// `barrier(L) requires P; ensures Q; { }` — clauses before the block.
    ClausesBefore,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ExprKind {
    /// Unsigned: `-1` is `Unary(Neg, 1)`. PVL integers are unbounded.
    IntLit(#[serde(with = "decimal")] BigUint),
    BoolLit(bool),
    Null,
    This,
    /// `\result`
    Result,
    /// The `*` of `a[*]`: every index of the array, only as the index of a permission's
    /// location (`Perm(a[*], p)` is `Perm(a[i], p)` for every `0 <= i < a.length`).
    AllIndices,
    /// Permission literals `write`, `read`, `none`.
    PermLit(PermLit),
    Name(Ident),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `c ? a : b`
    Cond {
        cond: Box<Expr>,
        then_expr: Box<Expr>,
        else_expr: Box<Expr>,
    },
    /// `a[i]`
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `s[a..b]`, `s[a..]`, `s[..b]`
    Slice {
        base: Box<Expr>,
        from: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
    },
    /// `s[i -> v]`
    Update {
        base: Box<Expr>,
        index: Box<Expr>,
        value: Box<Expr>,
    },
    /// `x.f`, also `a.length` and `o.get`.
    Field {
        base: Box<Expr>,
        name: Ident,
    },
    /// `f(args)`, `x.m(args)`, `C.m(args)`, with optional ghost arguments
    /// `with { x = e; }` and ghost results `then { y = z; }`.
    Call {
        receiver: Option<Box<Expr>>,
        name: Ident,
        /// `f<int>(..)`: explicit type arguments of a generic callee (usually none; `check`
        /// infers omitted ones).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        type_args: Vec<Type>,
        args: Vec<Expr>,
        given: Vec<GhostArg>,
        yields: Vec<GhostArg>,
    },
    /// `new C(args)`, `new C(args) with { .. } then { .. }`
    New {
        class: Ident,
        args: Vec<Expr>,
        given: Vec<GhostArg>,
        yields: Vec<GhostArg>,
    },
    /// `new int[N]`, `new int[M][N]` — one size per dimension, outermost first.
    NewArray {
        elem: Type,
        dims: Vec<Expr>,
    },
    /// `\old(e)`
    Old(Box<Expr>),
    /// `|s|`, and 1.x `(\| s \|)`.
    Length(Box<Expr>),
    /// Built-in predicates written like calls: `Perm(l, p)`, `\array(a, n)`, ...
    Builtin {
        op: Builtin,
        args: Vec<Expr>,
    },
    Quantifier(Box<Quantifier>),
    /// `(\let T x = e; body)`
    Let {
        ty: Type,
        name: Ident,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// `seq<T>{..}`, `set<T>{..}`, `bag<T>{..}`; also the sequence literals `[e1, .., en]`
    /// (`elem` `None`: the elements' type, n ≥ 1) and `[t: T]` (the empty `seq<T>{}`).
    Collection {
        kind: CollectionKind,
        elem: Option<Type>,
        elems: Vec<Expr>,
    },
    /// `tuple<A,B>{a, b}`, or `(a, b)` (no types written: the elements' own).
    Tuple {
        types: Option<Box<(Type, Type)>>,
        first: Box<Expr>,
        second: Box<Expr>,
    },
    /// `map<K,V>{k -> v, ...}`
    MapLit {
        key: Type,
        value: Type,
        entries: Vec<(Expr, Expr)>,
    },
    /// `[p]P(args)`: the predicate application `pred` at the fraction `amount` of its
    /// permissions.
    Scaled {
        amount: Box<Expr>,
        pred: Box<Expr>,
    },
    /// A trigger `{: e :}` inside a quantifier body; means `e`. Numbered, `{:n: e :}`, it is
    /// one term of the multi-pattern `n` (the terms with one number match together); else a
    /// pattern of its own.
    Trigger(Box<Expr>, Option<u32>),
    /// `unfolding p(args) in e`
    Unfolding {
        pred: Box<Expr>,
        body: Box<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PermLit {
    Write,
    Read,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UnaryOp {
    /// `!`
    Not,
    /// `-`
    Neg,
}

/// Binary operators, with their precedence and associativity (loosest first) in
/// [`BinaryOp::precedence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    /// `==>`
    Implies,
    /// `||`
    Or,
    /// `&&`
    And,
    /// `**`
    Star,
    Eq,
    Neq,
    Lt,
    Le,
    Gt,
    Ge,
    /// `e in s`
    In,
    Add,
    Sub,
    /// `s ++ t`
    Concat,
    /// `x :: s`
    Cons,
    Mul,
    Div,
    Mod,
    /// `\` — fraction division, `1\2`.
    FracDiv,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assoc {
    Left,
    Right,
    /// Comparisons do not chain: `a < b < c` is printed with parentheses.
    None,
}

/// The direct subexpressions of an expression, for [`Expr::for_each_child`] and its `mut`
/// twin: one list of cases for both.
macro_rules! for_each_child {
    ($e:expr, $f:ident, $iter:ident $(, $m:tt)?) => {
        match & $($m)* $e.kind {
            ExprKind::IntLit(_)
            | ExprKind::BoolLit(_)
            | ExprKind::Null
            | ExprKind::This
            | ExprKind::Result
            | ExprKind::AllIndices
            | ExprKind::PermLit(_)
            | ExprKind::Name(_) => {}
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Old(x)
            | ExprKind::Length(x)
            | ExprKind::Trigger(x, _)
            | ExprKind::Field { base: x, .. } => $f(x),
            ExprKind::Binary { lhs, rhs, .. }
            | ExprKind::Scaled {
                amount: lhs,
                pred: rhs,
            } => {
                $f(lhs);
                $f(rhs);
            }
            ExprKind::Cond {
                cond,
                then_expr,
                else_expr,
            } => {
                $f(cond);
                $f(then_expr);
                $f(else_expr);
            }
            ExprKind::Index { base, index } => {
                $f(base);
                $f(index);
            }
            ExprKind::Slice { base, from, to } => {
                $f(base);
                for x in [from, to].into_iter().flatten() {
                    $f(x);
                }
            }
            ExprKind::Update { base, index, value } => {
                $f(base);
                $f(index);
                $f(value);
            }
            ExprKind::Call {
                receiver,
                args,
                given,
                yields,
                ..
            } => {
                if let Some(r) = receiver {
                    $f(r);
                }
                args.$iter().for_each(&mut *$f);
                given.$iter().chain(yields).for_each(|g| $f(& $($m)* g.value));
            }
            ExprKind::New {
                args,
                given,
                yields,
                ..
            } => {
                args.$iter().for_each(&mut *$f);
                given.$iter().chain(yields).for_each(|g| $f(& $($m)* g.value));
            }
            ExprKind::Builtin { args, .. } => args.$iter().for_each($f),
            ExprKind::NewArray { dims, .. } => dims.$iter().for_each($f),
            ExprKind::Collection { elems, .. } => elems.$iter().for_each($f),
            ExprKind::MapLit { entries, .. } => {
                for (k, v) in entries {
                    $f(k);
                    $f(v);
                }
            }
            ExprKind::Tuple { first, second, .. } => {
                $f(first);
                $f(second);
            }
            ExprKind::Let { value, body, .. } => {
                $f(value);
                $f(body);
            }
            ExprKind::Quantifier(q) => {
                for b in & $($m)* q.binders {
                    if let Some((lo, hi)) = & $($m)* b.range {
                        $f(lo);
                        $f(hi);
                    }
                }
                if let Some(c) = & $($m)* q.cond {
                    $f(c);
                }
                $f(& $($m)* q.body);
            }
            ExprKind::Unfolding { pred, body } => {
                $f(pred);
                $f(body);
            }
        }
    };
}

impl Expr {
    /// In `\typeof(e) == C` (either order, `==` or `!=`): the bare name `C`, which 1.x writes
    /// for `\type(C)`. It names a class only where no variable or field has that name (the
    /// type checker and the checker both look it up first).
    pub fn class_compared_with_typeof<'e>(lhs: &'e Expr, rhs: &'e Expr) -> Option<&'e Ident> {
        let is_typeof = |e: &Expr| {
            matches!(
                e.kind,
                ExprKind::Builtin {
                    op: Builtin::TypeOf,
                    ..
                }
            )
        };
        match (&lhs.kind, &rhs.kind) {
            (_, ExprKind::Name(c)) if is_typeof(lhs) => Some(c),
            (ExprKind::Name(c), _) if is_typeof(rhs) => Some(c),
            _ => None,
        }
    }

    /// `e` without the trigger markers `{: .. :}` around it: a trigger only guides quantifier
    /// instantiation, so `Perm({: a[i] :}, p)` names the location `a[i]`.
    pub fn peel_triggers(&self) -> &Expr {
        let mut e = self;
        while let ExprKind::Trigger(inner, _) = &e.kind {
            e = inner;
        }
        e
    }

    /// `lhs op rhs`, carrying the span of `lhs` (for generated code).
    pub fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr {
            span: lhs.span,
            kind: ExprKind::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            },
        }
    }

    /// The name `name` as an expression, both carrying `span` (for generated code).
    pub fn name(name: &str, span: Span) -> Expr {
        Expr {
            kind: ExprKind::Name(Ident {
                name: name.to_string(),
                span,
            }),
            span,
        }
    }

    /// Whether a permission (`Perm`, `PointsTo`, `Value`) occurs anywhere in `self`: a resource,
    /// not a pure boolean (a quantifier over it is `\forall*`).
    pub fn holds_permission(&self) -> bool {
        let mut found = false;
        self.visit(&mut |x| {
            found |= matches!(
                &x.kind,
                ExprKind::Builtin {
                    op: Builtin::Perm | Builtin::PointsTo | Builtin::Value | Builtin::AutoValue,
                    ..
                }
            )
        });
        found
    }

    /// Calls `f` on `self` and every subexpression (binders are not tracked).
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        self.for_each_child(&mut |c| c.visit(f));
    }

    /// The free names of `self`: a name bound by a quantifier or `\let` inside `self` counts
    /// only outside its binder's scope (a `\let`'s value and a binder's range are outside it,
    /// later binders' ranges inside). A `\let x = v; b` therefore has the free names of `v`
    /// and those of `b` but `x`: the names the whole expression depends on.
    pub fn names(&self, into: &mut std::collections::BTreeSet<String>) {
        LetScope::default().names(self, into);
    }

    /// Whether the name `name` occurs free in `self` (see [`Expr::names`]).
    pub fn mentions(&self, name: &str) -> bool {
        let mut names = std::collections::BTreeSet::new();
        self.names(&mut names);
        names.contains(name)
    }

    /// Appends the top-level `&&`/`**` conjuncts of `self` to `out`, left to right.
    pub fn flatten_and<'e>(&'e self, out: &mut Vec<&'e Expr>) {
        match &self.kind {
            ExprKind::Binary {
                op: BinaryOp::And | BinaryOp::Star,
                lhs,
                rhs,
            } => {
                lhs.flatten_and(out);
                rhs.flatten_and(out);
            }
            _ => out.push(self),
        }
    }

    /// Calls `f` on each direct subexpression, in source order: operands, arguments (ghost
    /// ones included), a quantifier's binder ranges, condition and body, a `\let`'s value and
    /// body. Binding is the caller's business: a visitor that tracks scopes handles
    /// quantifiers and `\let` itself.
    pub fn for_each_child(&self, f: &mut dyn FnMut(&Expr)) {
        for_each_child!(self, f, iter)
    }

    /// The direct subexpressions, as [`Expr::for_each_child`] visits them, borrowed as long
    /// as `self` is.
    pub fn children<'a>(&'a self) -> Vec<&'a Expr> {
        let mut out = Vec::new();
        let mut push_one = |x: &'a Expr| out.push(x);
        let push: &mut dyn FnMut(&'a Expr) = &mut push_one;
        for_each_child!(self, push, iter);
        out
    }

    /// The triggers written in this quantifier body, grouped into the patterns they stand
    /// for ([`group_triggers`]); those of nested quantifiers are theirs. Each is the whole
    /// `{: e :}` node.
    pub fn trigger_groups(&self) -> Vec<Vec<&Expr>> {
        fn collect<'a>(e: &'a Expr, out: &mut Vec<(Option<u32>, &'a Expr)>) {
            match &e.kind {
                ExprKind::Trigger(_, group) => out.push((*group, e)),
                ExprKind::Quantifier(_) => {}
                _ => e.children().into_iter().for_each(|c| collect(c, out)),
            }
        }
        let mut found = Vec::new();
        collect(self, &mut found);
        group_triggers(found)
    }

    /// [`Expr::for_each_child`], mutably.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        for_each_child!(self, f, iter_mut, mut)
    }

    /// `self` with every free occurrence of the name `var` replaced by `by`. Inside the scope of
    /// a quantifier or `\let` that rebinds `var` nothing is replaced; a `\let`'s value and
    /// the ranges of binders before the rebinding one are outside that scope and are. Not
    /// capture-avoiding: a binder of `self` that `by` mentions captures it (the
    /// transformations refuse such input; `verify::inline` renames such binders first).
    pub fn substitute(&self, var: &str, by: &Expr) -> Expr {
        fn go(e: &mut Expr, var: &str, by: &Expr) {
            match &mut e.kind {
                ExprKind::Name(id) if id.name == var => *e = by.clone(),
                ExprKind::Let {
                    name, value, body, ..
                } => {
                    go(value, var, by);
                    if name.name != var {
                        go(body, var, by);
                    }
                }
                ExprKind::Quantifier(q) => {
                    for b in &mut q.binders {
                        if let Some((lo, hi)) = &mut b.range {
                            go(lo, var, by);
                            go(hi, var, by);
                        }
                        if b.name.name == var {
                            return;
                        }
                    }
                    if let Some(c) = &mut q.cond {
                        go(c, var, by);
                    }
                    go(&mut q.body, var, by);
                }
                _ => e.for_each_child_mut(&mut |c| go(c, var, by)),
            }
        }
        let mut out = self.clone();
        go(&mut out, var, by);
        out
    }
}

/// The names in scope at a point inside an expression that a walker has descended to, for
/// deciding what a subexpression *depends on*: a name bound by an enclosing `\let x = v`
/// depends on what `v` depends on (resolved when the `\let` is entered), a name bound by an
/// enclosing quantifier on itself, any other name on itself. So `\let k = tid; Perm(a[k], p)`
/// mentions `tid` at the atom, and `\let tid = 0; Perm(a[tid], p)` does not. Whatever
/// decides by name whether an expression depends on a thread id or a binder asks a scope
/// (an empty one for a whole expression: [`Expr::names`]).
#[derive(Clone, Debug, Default)]
pub struct LetScope {
    /// Innermost last: a `\let` with the names its value depends on, or a quantifier binder
    /// (`None`).
    entries: Vec<(String, Option<std::collections::BTreeSet<String>>)>,
}

impl LetScope {
    /// Enters `\let name = value` (the value resolved in the scope as it is before).
    pub fn push_let(&mut self, name: &str, value: &Expr) {
        let mut depends = std::collections::BTreeSet::new();
        self.names(value, &mut depends);
        self.entries.push((name.to_string(), Some(depends)));
    }

    /// Enters the scope of a quantifier binder `name`.
    pub fn push_binder(&mut self, name: &str) {
        self.entries.push((name.to_string(), None));
    }

    /// The depth, for [`LetScope::truncate`].
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Leaves every scope entered since [`LetScope::len`] was `depth`.
    pub fn truncate(&mut self, depth: usize) {
        self.entries.truncate(depth);
    }

    /// Adds to `into` the names `e`, at this point, depends on: its free names, each one an
    /// enclosing `\let` binds replaced by what that `\let`'s value depends on.
    pub fn names(&self, e: &Expr, into: &mut std::collections::BTreeSet<String>) {
        let mut inner = self.clone();
        inner.collect(e, into);
    }

    /// Whether the innermost binding of `name` here is a `\let` (so the name stands for its
    /// value, not for an iterator or binder of that name).
    pub fn binds_let(&self, name: &str) -> bool {
        matches!(
            self.entries.iter().rev().find(|(n, _)| n == name),
            Some((_, Some(_)))
        )
    }

    /// Whether `e`, at this point, depends on `name` (see [`LetScope::names`]).
    pub fn mentions(&self, e: &Expr, name: &str) -> bool {
        let mut names = std::collections::BTreeSet::new();
        self.names(e, &mut names);
        names.contains(name)
    }

    fn collect(&mut self, e: &Expr, into: &mut std::collections::BTreeSet<String>) {
        match &e.kind {
            ExprKind::Name(id) => match self.entries.iter().rev().find(|(n, _)| *n == id.name) {
                Some((_, Some(depends))) => into.extend(depends.iter().cloned()),
                Some((_, None)) | None => {
                    into.insert(id.name.clone());
                }
            },
            ExprKind::Let {
                name, value, body, ..
            } => {
                let depth = self.len();
                self.push_let(&name.name, value);
                // The value's names count even where the body ignores the binding.
                if let Some((_, Some(depends))) = self.entries.last() {
                    into.extend(depends.iter().cloned());
                }
                self.collect(body, into);
                self.truncate(depth);
            }
            ExprKind::Quantifier(q) => {
                let depth = self.len();
                for b in &q.binders {
                    if let Some((lo, hi)) = &b.range {
                        self.collect(lo, into);
                        self.collect(hi, into);
                    }
                    // Bound inside `e`: not a name `e` depends on.
                    self.entries
                        .push((b.name.name.clone(), Some(Default::default())));
                }
                if let Some(c) = &q.cond {
                    self.collect(c, into);
                }
                self.collect(&q.body, into);
                self.truncate(depth);
            }
            _ => e.for_each_child(&mut |c| self.collect(c, into)),
        }
    }
}

impl BinaryOp {
    /// Binding strength: higher binds tighter. `?:` is level 1, unary operators 11.
    pub fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Implies => 2,
            Or => 3,
            And | Star => 4,
            Eq | Neq => 5,
            Lt | Le | Gt | Ge => 6,
            In => 7,
            Add | Sub | Concat => 8,
            Cons => 9,
            Mul | Div | Mod | FracDiv => 10,
        }
    }

    pub fn assoc(self) -> Assoc {
        use BinaryOp::*;
        match self {
            Implies | Cons => Assoc::Right,
            Eq | Neq | Lt | Le | Gt | Ge | In => Assoc::None,
            _ => Assoc::Left,
        }
    }

    pub fn symbol(self) -> &'static str {
        use BinaryOp::*;
        match self {
            Implies => "==>",
            Or => "||",
            And => "&&",
            Star => "**",
            Eq => "==",
            Neq => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            In => "in",
            Add => "+",
            Sub => "-",
            Concat => "++",
            Cons => "::",
            Mul => "*",
            Div => "/",
            Mod => "%",
            FracDiv => "\\",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Builtin {
    /// `Perm(loc, p)`
    Perm,
    /// `PointsTo(loc, p, v)`
    PointsTo,
    /// `Value(loc)`
    Value,
    /// `AutoValue(loc)`: in a method's precondition, a read of `loc` borrowed from the caller:
    /// some positive amount, given back whole in the postcondition (implicitly where only the
    /// precondition names it), so the caller's permission is what it was. In a function's
    /// contract, `Value(loc)`.
    AutoValue,
    /// `\array(a, n)`: a is non-null with length n.
    Array,
    /// `\matrix(m, rows, cols)`
    Matrix,
    /// `idle(t)`: the token that object `t`'s thread is not running (`fork t` takes it).
    Idle,
    /// `running(t)`: the token that `fork t` gives and `join t` takes.
    Running,
    /// `held(o)`: the token that `lock o` gives and `unlock o` takes.
    Held,
    /// `committed(o)`: the lock of `o` holds its invariant (after `commit o`); a boolean.
    Committed,
    /// `HPerm(loc, p)`: a history permission to a field of a model object (reads; an
    /// `action` block writes through it).
    HPerm,
    /// `APerm(loc, p)`: an action permission to a field of a model object (reads and writes).
    APerm,
    /// `\typeof(e)`: the class of the object `e` refers to, as a value (PVL has no subclasses:
    /// the class `e` is declared with, where `e` is not null).
    TypeOf,
    /// `\type(C)`: the class `C` as a value (1.x also writes a bare `C` where a `\typeof` is
    /// compared with it).
    Type,
    /// `\values(a, from, to)`: the sequence of the cells `a[from .. to)` (reads each of them).
    Values,
}

impl Builtin {
    pub fn spelling(self) -> &'static str {
        match self {
            Builtin::Perm => "Perm",
            Builtin::PointsTo => "PointsTo",
            Builtin::Value => "Value",
            Builtin::AutoValue => "AutoValue",
            Builtin::Array => "\\array",
            Builtin::Matrix => "\\matrix",
            Builtin::Idle => "idle",
            Builtin::Running => "running",
            Builtin::Held => "held",
            Builtin::Committed => "committed",
            Builtin::HPerm => "HPerm",
            Builtin::APerm => "APerm",
            Builtin::TypeOf => "\\typeof",
            Builtin::Type => "\\type",
            Builtin::Values => "\\values",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CollectionKind {
    Seq,
    Set,
    Bag,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GhostArg {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `(\forall int i; cond; body)`, `(\forall* int i = lo .. hi; body)`, `(\exists ...)`,
/// `(\sum int i; cond; body)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantifier {
    pub kind: QuantifierKind,
    /// At least one: `(\forall int i, int j; ...)`.
    pub binders: Vec<Binder>,
    /// The condition between the binders and the body; `None` in the two-part forms.
    pub cond: Option<Expr>,
    pub body: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuantifierKind {
    /// `\forall`
    Forall,
    /// `\forall*` — iterated separating conjunction.
    ForallStar,
    /// `\exists`
    Exists,
    /// `\sum` — `(\sum int i; cond; body)`, an integer.
    Sum,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Binder {
    pub ty: Type,
    pub name: Ident,
    /// The range form `int i = lo .. hi` (half-open).
    pub range: Option<(Expr, Expr)>,
    pub span: Span,
}

/// Integer literals serialise as decimal strings: readable, and exact whatever their size.
mod decimal {
    use num_bigint::BigUint;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &BigUint, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BigUint, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Triggers in the patterns they stand for, in order of first occurrence: an unnumbered one
/// alone, the ones of one number `{:n: e :}` together (a multi-pattern). One rule for the
/// checker's warnings (over the IR) and the verifier's patterns (over Z3 terms).
pub fn group_triggers<T>(triggers: impl IntoIterator<Item = (Option<u32>, T)>) -> Vec<Vec<T>> {
    let mut groups: Vec<(Option<u32>, Vec<T>)> = Vec::new();
    for (group, term) in triggers {
        match groups
            .iter_mut()
            .find(|(g, _)| group.is_some() && *g == group)
        {
            Some((_, terms)) => terms.push(term),
            None => groups.push((group, vec![term])),
        }
    }
    groups.into_iter().map(|(_, terms)| terms).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `requires` expression of the one method in `class C { requires E; void m(); }`.
    fn requires(e: &str) -> Expr {
        let source = format!("class C {{ requires {e}; void m(); }}");
        let parsed = crate::syntax::parse(&source).expect("parses");
        let mut found = None;
        for item in &parsed.program.items {
            if let Item::Class(c) = item {
                for m in &c.members {
                    for clause in &m.contract.clauses {
                        if let ClauseKind::Requires(x) = &clause.kind {
                            found = Some(x.clone());
                        }
                    }
                }
            }
        }
        found.expect("a requires clause")
    }

    fn names(e: &Expr) -> Vec<String> {
        let mut out = std::collections::BTreeSet::new();
        e.names(&mut out);
        out.into_iter().collect()
    }

    #[test]
    fn free_names_leave_out_what_binders_bind() {
        assert_eq!(
            names(&requires("(\\let int k = tid; a[k] == 0)")),
            ["a", "tid"]
        );
        assert_eq!(names(&requires("(\\let int tid = 0; a[tid] == 0)")), ["a"]);
        assert_eq!(
            names(&requires("(\\forall int i = 0 .. n; a[i] == i)")),
            ["a", "n"]
        );
        // A `\let`'s value is outside its own scope.
        assert_eq!(names(&requires("(\\let int x = x + 1; x > 0)")), ["x"]);
    }

    #[test]
    fn a_let_scope_resolves_names_to_what_the_values_depend_on() {
        let mut scope = LetScope::default();
        scope.push_binder("j");
        scope.push_let("k", &Expr::name("tid", Span::default()));
        let atom = Expr::name("k", Span::default());
        assert!(scope.mentions(&atom, "tid"));
        assert!(!scope.mentions(&atom, "k"));
        assert!(scope.binds_let("k") && !scope.binds_let("j"));
        // Shadowing: `\let tid = 0` hides the thread id.
        scope.push_let("tid", &Expr::name("zero", Span::default()));
        assert!(!scope.mentions(&Expr::name("tid", Span::default()), "tid"));
        scope.truncate(1);
        assert!(scope.mentions(&Expr::name("j", Span::default()), "j"));
    }

    #[test]
    fn substitution_reaches_a_lets_value_but_not_its_scope() {
        let e = requires("(\\let int x = x + 1; x > 0)");
        let by = Expr::name("y", Span::default());
        assert_eq!(names(&e.substitute("x", &by)), ["y"]);
    }
}
