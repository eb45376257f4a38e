//! Property tests of the front end: random IR programs survive `print` then `parse`, printing is
//! idempotent, and no input (random bytes, mutated kernels) makes `parse` or `print` panic.
//!
//! The generator stays inside what PVL's concrete syntax can express. Where the IR can express
//! something the syntax cannot (or where two IR trees print to the same text by design), the
//! generator is restricted; every such restriction is marked `RESTRICTION:` below.

use alpinist::syntax::{self, *};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::Config as ProptestConfig;

use crate::common::{first_difference, spanless};

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// `default_cases` cases unless `PROPTEST_CASES` is set, which then wins.
pub(crate) fn config(default_cases: u32) -> ProptestConfig {
    if std::env::var_os("PROPTEST_CASES").is_some() {
        ProptestConfig::default()
    } else {
        ProptestConfig {
            cases: default_cases,
            ..ProptestConfig::default()
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Name pools. None of them is a PVL keyword (checked by `pools_avoid_keywords` below). Names
// that follow `\` in a backslash keyword (`old`, `result`, `array`, `let`, ...) are avoided too:
// `1\old` must not be confusable with `1 \old`.
// ---------------------------------------------------------------------------------------------

const VARS: &[&str] = &[
    "a", "b", "c", "x", "y", "z", "n", "i", "j", "k", "tid", "foo", "bar", "xs", "ys", "N", "M",
    "len", "acc", "tmp",
];
const FIELDS: &[&str] = &["f", "val", "next", "length", "get", "data"];
const FUNCS: &[&str] = &[
    "f", "g", "p", "q", "swap", "lemma", "sum_to", "head", "tail", "isEmpty", "valid",
];
const CLASSES: &[&str] = &["C", "D", "Box", "Main", "Node"];
const LABELS: &[&str] = &["A", "B", "fwd", "blk", "L", "main"];

const KEYWORDS: &[&str] = &[
    "in",
    "read",
    "write",
    "none",
    "seq",
    "set",
    "bag",
    "map",
    "option",
    "new",
    "this",
    "null",
    "true",
    "false",
    "int",
    "boolean",
    "bool",
    "void",
    "frac",
    "zfrac",
    "rational",
    "resource",
    "class",
    "static",
    "pure",
    "inline",
    "thread_local",
    "requires",
    "ensures",
    "context",
    "context_everywhere",
    "loop_invariant",
    "given",
    "yields",
    "lock_invariant",
    "if",
    "else",
    "while",
    "for",
    "return",
    "par",
    "parallel",
    "and",
    "barrier",
    "assert",
    "assume",
    "ghost",
    "invariant",
    "atomic",
    "lock",
    "unlock",
    "fold",
    "unfold",
    "unfolding",
    "gpuopt",
    "loop_unroll",
    "iter_merge",
    "matrix_lin",
    "glob_to_reg",
    "tile",
    "inter",
    "intra",
    "fuse",
    "with",
    "then",
    "Perm",
    "HPerm",
    "APerm",
    "PointsTo",
    "Value",
    "model",
    "action",
    "process",
    "modifies",
    "accessible",
    "old",
    "result",
    "array",
    "matrix",
    "let",
    "sum",
    "forall",
    "exists",
    "R",
    "Some",
    "None",
];

#[test]
fn pools_avoid_keywords() {
    for pool in [VARS, FIELDS, FUNCS, CLASSES, LABELS] {
        for name in pool {
            assert!(!KEYWORDS.contains(name), "{name} is a keyword");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Node builders (every span is `Span::default()`)
// ---------------------------------------------------------------------------------------------

fn sp() -> Span {
    Span::default()
}

fn ident(name: &str) -> Ident {
    Ident {
        name: name.to_string(),
        span: sp(),
    }
}

fn ex(kind: ExprKind) -> Expr {
    Expr { kind, span: sp() }
}

fn bx(kind: ExprKind) -> Box<Expr> {
    Box::new(ex(kind))
}

fn ty(kind: TypeKind) -> Type {
    Type { kind, span: sp() }
}

fn st(kind: StmtKind) -> Stmt {
    Stmt { kind, span: sp() }
}

fn block(stmts: Vec<Stmt>) -> Block {
    Block { stmts, span: sp() }
}

fn clause(kind: ClauseKind) -> Clause {
    Clause { kind, span: sp() }
}

/// An integer literal from little-endian base-2^32 digits.
fn int_lit(digits: Vec<u32>) -> Expr {
    ex(ExprKind::IntLit(num_bigint::BigUint::new(digits)))
}

// ---------------------------------------------------------------------------------------------
// Leaves
// ---------------------------------------------------------------------------------------------

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = Ident> + Clone {
    select(pool).prop_map(ident)
}

fn var() -> impl Strategy<Value = Ident> + Clone {
    pick(VARS)
}

fn int_lit_strategy() -> BoxedStrategy<Expr> {
    prop_oneof![
        6 => (0u32..100).prop_map(|n| int_lit(vec![n])),
        2 => any::<u64>().prop_map(|n| int_lit(vec![n as u32, (n >> 32) as u32])),
        1 => proptest::collection::vec(any::<u32>(), 3..5).prop_map(int_lit),
    ]
    .boxed()
}

/// Names and small non-negative literals: used where PVL juxtaposes expressions with nothing
/// between them.
fn atom() -> BoxedStrategy<Expr> {
    prop_oneof![
        var().prop_map(|v| ex(ExprKind::Name(v))),
        (0u32..64).prop_map(|n| int_lit(vec![n])),
    ]
    .boxed()
}

fn leaf_expr() -> BoxedStrategy<Expr> {
    prop_oneof![
        6 => var().prop_map(|v| ex(ExprKind::Name(v))),
        4 => int_lit_strategy(),
        1 => any::<bool>().prop_map(|b| ex(ExprKind::BoolLit(b))),
        1 => Just(ex(ExprKind::Null)),
        1 => Just(ex(ExprKind::This)),
        1 => Just(ex(ExprKind::Result)),
        1 => select(vec![PermLit::Write, PermLit::Read, PermLit::None])
            .prop_map(|p| ex(ExprKind::PermLit(p))),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

fn leaf_type() -> BoxedStrategy<Type> {
    prop_oneof![
        4 => Just(ty(TypeKind::Int)),
        2 => Just(ty(TypeKind::Bool)),
        1 => Just(ty(TypeKind::Frac)),
        1 => Just(ty(TypeKind::ZFrac)),
        1 => Just(ty(TypeKind::Rational)),
        1 => pick(CLASSES).prop_map(|c| ty(TypeKind::Class(c))),
    ]
    .boxed()
}

/// Value types (no `void`, no `resource`), array sizes never written.
fn value_type() -> BoxedStrategy<Type> {
    leaf_type()
        .prop_recursive(2, 6, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|t| ty(TypeKind::Seq(Box::new(t)))),
                inner.clone().prop_map(|t| ty(TypeKind::Set(Box::new(t)))),
                inner.clone().prop_map(|t| ty(TypeKind::Bag(Box::new(t)))),
                inner
                    .clone()
                    .prop_map(|t| ty(TypeKind::Option(Box::new(t)))),
                (inner.clone(), inner.clone())
                    .prop_map(|(k, v)| ty(TypeKind::Map(Box::new(k), Box::new(v)))),
                inner.prop_map(|t| ty(TypeKind::Array {
                    elem: Box::new(t),
                    size: None
                })),
            ]
        })
        .boxed()
}

/// Types of declarations (fields, params, locals): value types, plus sized arrays `T[N]` and
/// `T[M][N]`.
///
/// RESTRICTION: sizes only on the outermost array dimensions of a declaration's type, all
/// dimensions sized or none, and a size is a name or a literal. pvl.md shows sized types only
/// as `int[N]`/`int[M][N]` in declarations; `seq<int[N]>` or `int[][N]` are not PVL.
fn decl_type() -> BoxedStrategy<Type> {
    prop_oneof![
        4 => value_type(),
        1 => (leaf_type(), proptest::collection::vec(atom(), 1..=2)).prop_map(|(elem, sizes)| {
            sizes.into_iter().rev().fold(elem, |elem, size| {
                ty(TypeKind::Array {
                    elem: Box::new(elem),
                    size: Some(Box::new(size)),
                })
            })
        }),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------

const BINARY_OPS: &[BinaryOp] = &[
    BinaryOp::Implies,
    BinaryOp::Or,
    BinaryOp::And,
    BinaryOp::Star,
    BinaryOp::Eq,
    BinaryOp::Neq,
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::In,
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Concat,
    BinaryOp::Cons,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Mod,
    BinaryOp::FracDiv,
];

fn binary(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    ex(ExprKind::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    })
}

fn call_with(
    receiver: Option<Expr>,
    name: Ident,
    type_args: Vec<Type>,
    args: Vec<Expr>,
    given: Vec<GhostArg>,
    yields: Vec<GhostArg>,
) -> Expr {
    ex(ExprKind::Call {
        receiver: receiver.map(Box::new),
        name,
        type_args,
        args,
        given,
        yields,
    })
}

fn ghost_arg(name: Ident, value: Expr) -> GhostArg {
    GhostArg {
        name,
        value,
        span: sp(),
    }
}

/// The `with { x = e; }` of a call or a `new`: usually none.
fn given_args(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Vec<GhostArg>> {
    prop_oneof![
        3 => Just(vec![]),
        1 => proptest::collection::vec(
            (var(), inner).prop_map(|(n, v)| ghost_arg(n, v)),
            1..=2
        ),
    ]
    .boxed()
}

/// The `then { y = z; }` of a call or a `new`: its target is a ghost result name.
fn yields_args() -> BoxedStrategy<Vec<GhostArg>> {
    prop_oneof![
        3 => Just(vec![]),
        1 => proptest::collection::vec(
            (var(), var()).prop_map(|(n, v)| ghost_arg(n, ex(ExprKind::Name(v)))),
            1..=2
        ),
    ]
    .boxed()
}

/// A `new C(args)`, optionally with ghost arguments.
fn new_object(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    (
        pick(CLASSES),
        proptest::collection::vec(inner.clone(), 0..=2),
        given_args(inner),
        yields_args(),
    )
        .prop_map(|(class, args, given, yields)| {
            ex(ExprKind::New {
                class,
                args,
                given,
                yields,
            })
        })
        .boxed()
}

/// A call `f(args)`, `r.f(args)`, optionally with type arguments `f<T>(args)`, `with { x = e; }`
/// and `then { y = z; }`.
fn call(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    let receiver = prop_oneof![
        3 => Just(None),
        1 => Just(Some(ex(ExprKind::This))),
        1 => pick(CLASSES).prop_map(|c| Some(ex(ExprKind::Name(c)))),
        1 => inner.clone().prop_map(Some),
    ];
    let given = given_args(inner.clone());
    let yields = yields_args();
    let type_args = prop_oneof![
        4 => Just(vec![]),
        1 => proptest::collection::vec(value_type(), 1..=2),
    ];
    (
        receiver,
        (pick(FUNCS), type_args),
        proptest::collection::vec(inner, 0..=3),
        given,
        yields,
    )
        .prop_map(|(r, (n, ts), args, g, y)| call_with(r, n, ts, args, g, y))
        .boxed()
}

/// A predicate application as written after `fold`, `unfold`, `unfolding`, possibly scaled
/// (`[p]P(args)`, `[p][q]P(args)`).
fn pred_call(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    (
        prop_oneof![3 => Just(None), 1 => Just(Some(ex(ExprKind::This)))],
        pick(FUNCS),
        proptest::collection::vec(inner.clone(), 0..=2),
        prop_oneof![3 => Just(vec![]), 1 => proptest::collection::vec(inner, 1..=2)],
    )
        .prop_map(|(r, n, args, scales)| {
            let mut e = call_with(r, n, vec![], args, vec![], vec![]);
            for amount in scales {
                e = ex(ExprKind::Scaled {
                    amount: Box::new(amount),
                    pred: Box::new(e),
                });
            }
            e
        })
        .boxed()
}

/// The body of a quantifier: possibly with a trigger `{: e :}` or `{:n: e :}` as (part of) it.
///
/// RESTRICTION: `Trigger` only directly as the body or an operand of the body's top operator;
/// the IR allows it anywhere, PVL only inside quantifier bodies.
fn quantifier_body(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    let trig = (inner.clone(), proptest::option::of(0u32..1000))
        .prop_map(|(e, group)| ex(ExprKind::Trigger(Box::new(e), group)));
    let ops = select(vec![
        BinaryOp::Implies,
        BinaryOp::And,
        BinaryOp::Star,
        BinaryOp::Eq,
        BinaryOp::Add,
    ]);
    prop_oneof![
        4 => inner.clone(),
        1 => trig.clone(),
        1 => (ops.clone(), trig.clone(), inner.clone()).prop_map(|(op, t, e)| binary(op, t, e)),
        1 => (ops, inner, trig).prop_map(|(op, e, t)| binary(op, e, t)),
    ]
    .boxed()
}

fn binder(ty: Type, name: Ident, range: Option<(Expr, Expr)>) -> Binder {
    Binder {
        ty,
        name,
        range,
        span: sp(),
    }
}

/// Quantifiers.
///
/// RESTRICTION (following pvl.md's forms): a range binder `int i = lo .. hi` is the only
/// binder and has no condition (`(\forall* int i = lo .. hi; body)`); `\sum` is always the
/// three-part form `(\sum int i; cond; body)`. Other forms take one or two plain binders with
/// or without a condition.
fn quantifier(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    let binder_ty = prop_oneof![4 => Just(ty(TypeKind::Int)), 1 => Just(ty(TypeKind::Bool))];
    let plain = proptest::collection::vec(
        (binder_ty, var()).prop_map(|(t, n)| binder(t, n, None)),
        1..=2,
    );
    let kind = select(vec![
        QuantifierKind::Forall,
        QuantifierKind::ForallStar,
        QuantifierKind::Exists,
        QuantifierKind::Sum,
    ]);
    let body = quantifier_body(inner.clone());
    let plain_form = (
        kind,
        plain,
        proptest::option::of(inner.clone()),
        body.clone(),
    )
        .prop_map(|(kind, binders, cond, body)| {
            let cond = match (kind, cond) {
                (QuantifierKind::Sum, None) => Some(ex(ExprKind::BoolLit(true))),
                (_, c) => c,
            };
            Quantifier {
                kind,
                binders,
                cond,
                body,
            }
        });
    let range_form = (
        select(vec![
            QuantifierKind::Forall,
            QuantifierKind::ForallStar,
            QuantifierKind::Exists,
        ]),
        var(),
        inner.clone(),
        inner,
        body,
    )
        .prop_map(|(kind, n, lo, hi, body)| Quantifier {
            kind,
            binders: vec![binder(ty(TypeKind::Int), n, Some((lo, hi)))],
            cond: None,
            body,
        });
    prop_oneof![2 => plain_form, 1 => range_form]
        .prop_map(|q| ex(ExprKind::Quantifier(Box::new(q))))
        .boxed()
}

fn builtin(inner: BoxedStrategy<Expr>) -> BoxedStrategy<Expr> {
    let args = |n: usize| proptest::collection::vec(inner.clone(), n..=n);
    prop_oneof![
        args(2).prop_map(|args| (Builtin::Perm, args)),
        args(3).prop_map(|args| (Builtin::PointsTo, args)),
        args(1).prop_map(|args| (Builtin::Value, args)),
        args(2).prop_map(|args| (Builtin::Array, args)),
        args(3).prop_map(|args| (Builtin::Matrix, args)),
        args(2).prop_map(|args| (Builtin::HPerm, args)),
        args(2).prop_map(|args| (Builtin::APerm, args)),
    ]
    .prop_map(|(op, args)| ex(ExprKind::Builtin { op, args }))
    .boxed()
}

/// Expressions of bounded depth over every user-writable `ExprKind` (`Trigger` only in
/// quantifier bodies).
fn expr_depth(depth: u32) -> BoxedStrategy<Expr> {
    leaf_expr()
        .prop_recursive(depth, 24, 3, |inner| {
            let unary =
                (select(vec![UnaryOp::Not, UnaryOp::Neg]), inner.clone()).prop_map(|(op, e)| {
                    ex(ExprKind::Unary {
                        op,
                        operand: Box::new(e),
                    })
                });
            let bin = (select(BINARY_OPS), inner.clone(), inner.clone())
                .prop_map(|(op, l, r)| binary(op, l, r));
            let cond = (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, t, e)| {
                ex(ExprKind::Cond {
                    cond: Box::new(c),
                    then_expr: Box::new(t),
                    else_expr: Box::new(e),
                })
            });
            let index = (inner.clone(), inner.clone()).prop_map(|(b, i)| {
                ex(ExprKind::Index {
                    base: Box::new(b),
                    index: Box::new(i),
                })
            });
            // RESTRICTION: no slice with neither bound (`s[..]` is not one of PVL's forms).
            let bounds = prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| (Some(a), Some(b))),
                inner.clone().prop_map(|a| (Some(a), None)),
                inner.clone().prop_map(|b| (None, Some(b))),
            ];
            let slice = (inner.clone(), bounds).prop_map(|(b, (from, to))| {
                ex(ExprKind::Slice {
                    base: Box::new(b),
                    from: from.map(Box::new),
                    to: to.map(Box::new),
                })
            });
            let update = (inner.clone(), inner.clone(), inner.clone()).prop_map(|(b, i, v)| {
                ex(ExprKind::Update {
                    base: Box::new(b),
                    index: Box::new(i),
                    value: Box::new(v),
                })
            });
            let field = (inner.clone(), pick(FIELDS)).prop_map(|(b, n)| {
                ex(ExprKind::Field {
                    base: Box::new(b),
                    name: n,
                })
            });
            let new = new_object(inner.clone());
            // RESTRICTION: the element type of `new T[..]` is not itself an array type
            // (`new int[][n]` is not PVL).
            let new_array = (leaf_type(), proptest::collection::vec(inner.clone(), 1..=2))
                .prop_map(|(elem, dims)| ex(ExprKind::NewArray { elem, dims }));
            let old = inner.clone().prop_map(|e| ex(ExprKind::Old(Box::new(e))));
            let length = inner
                .clone()
                .prop_map(|e| ex(ExprKind::Length(Box::new(e))));
            let let_ = (value_type(), var(), inner.clone(), inner.clone()).prop_map(
                |(ty, name, value, body)| {
                    ex(ExprKind::Let {
                        ty,
                        name,
                        value: Box::new(value),
                        body: Box::new(body),
                    })
                },
            );
            let collection = (
                select(vec![
                    CollectionKind::Seq,
                    CollectionKind::Set,
                    CollectionKind::Bag,
                ]),
                value_type(),
                proptest::collection::vec(inner.clone(), 0..=3),
            )
                .prop_map(|(kind, elem, elems)| {
                    ex(ExprKind::Collection {
                        kind,
                        elem: Some(elem),
                        elems,
                    })
                });
            let map_lit = (
                value_type(),
                value_type(),
                proptest::collection::vec((inner.clone(), inner.clone()), 0..=2),
            )
                .prop_map(|(key, value, entries)| {
                    ex(ExprKind::MapLit {
                        key,
                        value,
                        entries,
                    })
                });
            let unfolding = (pred_call(inner.clone()), inner.clone()).prop_map(|(p, b)| {
                ex(ExprKind::Unfolding {
                    pred: Box::new(p),
                    body: Box::new(b),
                })
            });
            prop_oneof![
                3 => unary,
                8 => bin,
                2 => cond,
                2 => index,
                1 => slice,
                1 => update,
                2 => field,
                3 => call(inner.clone()),
                1 => new,
                1 => new_array,
                1 => old,
                1 => length,
                2 => builtin(inner.clone()),
                2 => quantifier(inner.clone()),
                1 => let_,
                1 => collection,
                1 => map_lit,
                1 => unfolding,
            ]
        })
        .boxed()
}

fn expr() -> BoxedStrategy<Expr> {
    expr_depth(3)
}

/// Shallower expressions for statement and contract positions, to keep programs small.
fn small_expr() -> BoxedStrategy<Expr> {
    expr_depth(2)
}

// ---------------------------------------------------------------------------------------------
// Contracts and gpuopt annotations
// ---------------------------------------------------------------------------------------------

fn param() -> BoxedStrategy<Param> {
    (decl_type(), var())
        .prop_map(|(ty, name)| Param {
            ty,
            name,
            span: sp(),
        })
        .boxed()
}

fn method_clause() -> BoxedStrategy<Clause> {
    prop_oneof![
        3 => small_expr().prop_map(ClauseKind::Requires),
        3 => small_expr().prop_map(ClauseKind::Ensures),
        2 => small_expr().prop_map(ClauseKind::Context),
        1 => small_expr().prop_map(ClauseKind::ContextEverywhere),
        1 => small_expr().prop_map(ClauseKind::LoopInvariant),
        1 => param().prop_map(ClauseKind::Given),
        1 => param().prop_map(ClauseKind::Yields),
        1 => small_expr().prop_map(ClauseKind::LockInvariant),
    ]
    .prop_map(clause)
    .boxed()
}

/// requires / ensures / context: the clauses of a par block or a barrier.
fn thread_clause() -> BoxedStrategy<Clause> {
    prop_oneof![
        small_expr().prop_map(ClauseKind::Requires),
        small_expr().prop_map(ClauseKind::Ensures),
        small_expr().prop_map(ClauseKind::Context),
    ]
    .prop_map(clause)
    .boxed()
}

fn contract_of(
    clause: BoxedStrategy<Clause>,
    len: std::ops::RangeInclusive<usize>,
) -> BoxedStrategy<Contract> {
    proptest::collection::vec(clause, len)
        .prop_map(|clauses| Contract { clauses })
        .boxed()
}

fn loop_contract() -> BoxedStrategy<Contract> {
    contract_of(
        small_expr()
            .prop_map(|e| clause(ClauseKind::LoopInvariant(e)))
            .boxed(),
        0..=2,
    )
}

/// Every `GpuOptKind`.
///
/// RESTRICTION: the operands PVL writes side by side with nothing between them
/// (`matrix_lin m R X Y`, `fuse F N`) are names or literals: `X Y` with arbitrary expressions
/// is ambiguous (`a -b`, `f (x)`), and no parenthesisation can fix `f (x)`.
fn gpuopt() -> BoxedStrategy<GpuOpt> {
    let e = || expr_depth(1);
    prop_oneof![
        (var(), e()).prop_map(|(var, factor)| GpuOptKind::LoopUnroll { var, factor }),
        (var(), e()).prop_map(|(var, factor)| GpuOptKind::IterMerge { var, factor }),
        (
            var(),
            select(vec![MatrixOrder::RowMajor, MatrixOrder::ColumnMajor]),
            atom(),
            atom()
        )
            .prop_map(|(matrix, order, rows, cols)| GpuOptKind::MatrixLin {
                matrix,
                order,
                rows,
                cols
            }),
        (
            var(),
            proptest::collection::vec(e(), 0..=1),
            proptest::collection::vec(e(), 1..=3)
        )
            .prop_map(|(array, rows, indices)| GpuOptKind::GlobToReg {
                array,
                rows,
                indices
            }),
        (select(vec![TileLayout::Inter, TileLayout::Intra]), e())
            .prop_map(|(layout, size)| GpuOptKind::Tile { layout, size }),
        (atom(), proptest::option::of(atom()))
            .prop_map(|(count, block_hint)| GpuOptKind::Fuse { count, block_hint }),
    ]
    .prop_map(|kind| GpuOpt { kind, span: sp() })
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------------------------

/// Assignable places: `x`, `a[i]`, `m[i][j]`, `this.f`, `x.f`.
fn place() -> BoxedStrategy<Expr> {
    prop_oneof![
        4 => var().prop_map(|v| ex(ExprKind::Name(v))),
        2 => (var(), small_expr()).prop_map(|(a, i)| ex(ExprKind::Index {
            base: bx(ExprKind::Name(a)),
            index: Box::new(i)
        })),
        1 => (var(), small_expr(), small_expr()).prop_map(|(a, i, j)| ex(ExprKind::Index {
            base: bx(ExprKind::Index {
                base: bx(ExprKind::Name(a)),
                index: Box::new(i)
            }),
            index: Box::new(j)
        })),
        1 => (
            prop_oneof![
                Just(ex(ExprKind::This)),
                var().prop_map(|v| ex(ExprKind::Name(v)))
            ],
            pick(FIELDS)
        )
            .prop_map(|(b, f)| ex(ExprKind::Field {
                base: Box::new(b),
                name: f
            })),
    ]
    .boxed()
}

fn local_decl() -> BoxedStrategy<Stmt> {
    (
        decl_type(),
        proptest::collection::vec((var(), proptest::option::of(small_expr())), 1..=3),
    )
        .prop_map(|(ty, vars)| {
            st(StmtKind::LocalDecl {
                ty,
                vars: vars
                    .into_iter()
                    .map(|(name, init)| LocalVar {
                        name,
                        init,
                        span: sp(),
                    })
                    .collect(),
            })
        })
        .boxed()
}

fn assign() -> BoxedStrategy<Stmt> {
    (place(), small_expr())
        .prop_map(|(target, value)| st(StmtKind::Assign { target, value }))
        .boxed()
}

/// `x++` / `x--` on names and fields.
fn step() -> BoxedStrategy<Stmt> {
    let target = prop_oneof![
        3 => var().prop_map(|v| ex(ExprKind::Name(v))),
        1 => pick(FIELDS).prop_map(|f| ex(ExprKind::Field {
            base: bx(ExprKind::This),
            name: f
        })),
    ];
    (any::<bool>(), target)
        .prop_map(|(inc, t)| {
            st(if inc {
                StmtKind::Increment(t)
            } else {
                StmtKind::Decrement(t)
            })
        })
        .boxed()
}

/// Calls and `new C(..)` as statements.
fn expr_stmt() -> BoxedStrategy<Stmt> {
    prop_oneof![
        4 => call(expr_depth(1)),
        1 => new_object(expr_depth(1)),
    ]
    .prop_map(|e| st(StmtKind::Expr(e)))
    .boxed()
}

/// Statements without nested statements.
fn simple_stmt() -> BoxedStrategy<Stmt> {
    let pred = pred_call(expr_depth(1));
    let lockable = prop_oneof![
        2 => Just(ex(ExprKind::This)),
        1 => small_expr(),
    ];
    prop_oneof![
        4 => local_decl(),
        5 => assign(),
        2 => step(),
        3 => expr_stmt(),
        1 => proptest::option::of(small_expr()).prop_map(|e| st(StmtKind::Return(e))),
        2 => small_expr().prop_map(|e| st(StmtKind::Assert(e))),
        1 => small_expr().prop_map(|e| st(StmtKind::Assume(e))),
        1 => small_expr().prop_map(|e| st(StmtKind::Refute(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Lock(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Unlock(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Fork(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Join(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Commit(e))),
        1 => lockable.clone().prop_map(|e| st(StmtKind::Wait(e))),
        1 => lockable.prop_map(|e| st(StmtKind::Notify(e))),
        1 => pred.clone().prop_map(|e| st(StmtKind::Fold(e))),
        1 => pred.prop_map(|e| st(StmtKind::Unfold(e))),
        1 => gpuopt().prop_map(|g| st(StmtKind::GpuOpt(g))),
        1 => prop_oneof![local_decl(), assign(), expr_stmt()]
            .prop_map(|s| st(StmtKind::Ghost(Box::new(s)))),
    ]
    .boxed()
}

fn block_of(inner: BoxedStrategy<Stmt>, max: usize) -> BoxedStrategy<Block> {
    proptest::collection::vec(inner, 0..=max)
        .prop_map(block)
        .boxed()
}

/// RESTRICTION: a barrier always has at least one clause. With none, `barrier(L) { S }` is the
/// same text for both `BarrierStyle`s, so the style cannot survive a round trip.
fn barrier(inner: BoxedStrategy<Stmt>) -> BoxedStrategy<Stmt> {
    (
        pick(LABELS),
        proptest::collection::vec(var(), 0..=1),
        contract_of(thread_clause(), 1..=2),
        block_of(inner, 2),
        select(vec![
            BarrierStyle::ClausesInside,
            BarrierStyle::ClausesBefore,
        ]),
    )
        .prop_map(|(label, invariants, contract, body, style)| {
            st(StmtKind::Barrier(Barrier {
                label,
                invariants,
                contract,
                body,
                style,
            }))
        })
        .boxed()
}

fn par_iter() -> BoxedStrategy<ParIter> {
    (var(), small_expr(), small_expr())
        .prop_map(|(name, lo, hi)| ParIter {
            ty: ty(TypeKind::Int),
            name,
            lo,
            hi,
            span: sp(),
        })
        .boxed()
}

fn par_block(inner: BoxedStrategy<Stmt>) -> BoxedStrategy<ParBlock> {
    let body_stmt = prop_oneof![3 => inner.clone(), 1 => barrier(inner)].boxed();
    (
        proptest::option::of(pick(LABELS)),
        proptest::collection::vec(par_iter(), 0..=2),
        contract_of(thread_clause(), 0..=2),
        block_of(body_stmt, 3),
    )
        .prop_map(|(label, iters, contract, body)| ParBlock {
            label,
            iters,
            contract,
            body,
            span: sp(),
        })
        .boxed()
}

fn par_group(inner: BoxedStrategy<Stmt>) -> BoxedStrategy<Stmt> {
    prop_oneof![
        proptest::collection::vec(par_block(inner.clone()), 1..=2)
            .prop_map(|blocks| (blocks, ParGroupStyle::And)),
        proptest::collection::vec(par_block(inner), 1..=3)
            .prop_map(|blocks| (blocks, ParGroupStyle::Parallel)),
    ]
    .prop_map(|(blocks, style)| st(StmtKind::Par(ParGroup { blocks, style })))
    .boxed()
}

/// `if (c) { .. }`, with `else { .. }` or `else if (c) { .. } [else { .. }]`.
///
/// RESTRICTION: branches are blocks (a bare `if` in a then-branch followed by `else` is the
/// dangling-else ambiguity).
fn if_stmt(inner: BoxedStrategy<Stmt>) -> BoxedStrategy<Stmt> {
    let blk = || block_of(inner.clone(), 2).prop_map(|b| st(StmtKind::Block(b)));
    let else_branch = prop_oneof![
        2 => Just(None),
        2 => blk().prop_map(Some),
        1 => (small_expr(), blk(), proptest::option::of(blk())).prop_map(|(c, t, e)| {
            Some(st(StmtKind::If {
                cond: c,
                then_branch: Box::new(t),
                else_branch: e.map(Box::new),
            }))
        }),
    ];
    (small_expr(), blk(), else_branch)
        .prop_map(|(cond, t, e)| {
            st(StmtKind::If {
                cond,
                then_branch: Box::new(t),
                else_branch: e.map(Box::new),
            })
        })
        .boxed()
}

fn for_stmt(inner: BoxedStrategy<Stmt>) -> BoxedStrategy<Stmt> {
    let init = prop_oneof![
        1 => Just(None),
        3 => (
            prop_oneof![Just(ty(TypeKind::Int)), leaf_type()],
            var(),
            small_expr()
        )
            .prop_map(|(ty, name, init)| Some(st(StmtKind::LocalDecl {
                ty,
                vars: vec![LocalVar {
                    name,
                    init: Some(init),
                    span: sp()
                }]
            }))),
        1 => (var(), small_expr()).prop_map(|(v, e)| Some(st(StmtKind::Assign {
            target: ex(ExprKind::Name(v)),
            value: e
        }))),
    ];
    let update = prop_oneof![
        1 => Just(None),
        3 => step().prop_map(Some),
        1 => (var(), small_expr()).prop_map(|(v, e)| Some(st(StmtKind::Assign {
            target: ex(ExprKind::Name(v)),
            value: e
        }))),
    ];
    (
        loop_contract(),
        init,
        proptest::option::of(small_expr()),
        update,
        block_of(inner, 3),
    )
        .prop_map(|(contract, init, cond, update, body)| {
            st(StmtKind::For {
                contract,
                init: init.map(Box::new),
                cond,
                update: update.map(Box::new),
                body: Box::new(st(StmtKind::Block(body))),
            })
        })
        .boxed()
}

fn stmt() -> BoxedStrategy<Stmt> {
    simple_stmt()
        .prop_recursive(3, 24, 3, |inner| {
            prop_oneof![
                3 => if_stmt(inner.clone()),
                2 => (loop_contract(), small_expr(), block_of(inner.clone(), 3)).prop_map(
                    |(contract, cond, body)| st(StmtKind::While {
                        contract,
                        cond,
                        body: Box::new(st(StmtKind::Block(body))),
                    })
                ),
                2 => for_stmt(inner.clone()),
                1 => block_of(inner.clone(), 3).prop_map(|b| st(StmtKind::Block(b))),
                3 => par_group(inner.clone()),
                1 => block_of(inner.clone(), 2)
                    .prop_map(|b| st(StmtKind::Ghost(Box::new(st(StmtKind::Block(b)))))),
                1 => (var(), small_expr(), block_of(inner.clone(), 2))
                    .prop_map(|(name, inv, body)| st(StmtKind::Invariant { name, inv, body })),
                1 => (var(), block_of(inner.clone(), 2))
                    .prop_map(|(name, body)| st(StmtKind::Atomic { name, body })),
                1 => (
                    proptest::collection::vec(small_expr(), 4..=4),
                    proptest::collection::vec((small_expr(), small_expr()), 0..=2),
                    block_of(inner, 2)
                )
                    .prop_map(|(es, converts, body)| {
                        let [model, fraction, rest, action] = <[Expr; 4]>::try_from(es).unwrap();
                        st(StmtKind::Action {
                            header: Box::new(ActionHeader {
                                model,
                                fraction,
                                rest,
                                action,
                                converts,
                            }),
                            body,
                        })
                    }),
            ]
        })
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Members, classes, programs
// ---------------------------------------------------------------------------------------------

fn modifiers() -> BoxedStrategy<Vec<Modifier>> {
    // A subset of static/pure/inline, in any order, without repetition.
    // (`ThreadLocal` is not part of the PVL described in pvl.md.)
    Just(vec![Modifier::Static, Modifier::Pure, Modifier::Inline])
        .prop_shuffle()
        .prop_flat_map(|all| {
            proptest::collection::vec(any::<bool>(), 3).prop_map(move |keep| {
                all.iter()
                    .zip(keep)
                    .filter(|(_, k)| *k)
                    .map(|(m, _)| *m)
                    .collect()
            })
        })
        .boxed()
}

fn member(gpuopts: Vec<GpuOpt>, contract: Contract, kind: MemberKind) -> Member {
    Member {
        gpuopts,
        contract,
        kind,
        span: sp(),
    }
}

fn method(
    modifiers: Vec<Modifier>,
    return_type: Option<Type>,
    name: Ident,
    type_params: Vec<Ident>,
    params: Vec<Param>,
    body: MethodBody,
) -> MemberKind {
    MemberKind::Method(Method {
        modifiers,
        return_type,
        name,
        type_params,
        params,
        body,
        span: sp(),
        is_run: false,
        model_member: None,
    })
}

fn member_gpuopts() -> BoxedStrategy<Vec<GpuOpt>> {
    prop_oneof![3 => Just(vec![]), 1 => proptest::collection::vec(gpuopt(), 1..=2)].boxed()
}

fn method_contract() -> BoxedStrategy<Contract> {
    contract_of(method_clause(), 0..=3)
}

fn params() -> BoxedStrategy<Vec<Param>> {
    proptest::collection::vec(param(), 0..=3).boxed()
}

fn block_body() -> BoxedStrategy<MethodBody> {
    block_of(stmt(), 4).prop_map(MethodBody::Block).boxed()
}

/// Methods, pure functions and predicates (no constructors).
///
/// RESTRICTION: `= expr;` bodies only on `pure` functions and `resource` predicates (what
/// pvl.md allows), and predicates have no block body.
fn method_member() -> BoxedStrategy<Member> {
    let ordinary = (
        modifiers().prop_map(|ms| {
            ms.into_iter()
                .filter(|m| *m != Modifier::Pure)
                .collect::<Vec<_>>()
        }),
        prop_oneof![1 => Just(ty(TypeKind::Void)), 2 => decl_type()],
        prop_oneof![1 => Just(MethodBody::Abstract), 3 => block_body()],
    )
        .prop_map(|(ms, rt, body)| (ms, rt, body));
    let pure = (
        modifiers().prop_map(|mut ms| {
            if !ms.contains(&Modifier::Pure) {
                ms.push(Modifier::Pure);
            }
            ms
        }),
        value_type(),
        prop_oneof![
            3 => expr().prop_map(MethodBody::Expr),
            1 => Just(MethodBody::Abstract),
            1 => block_body(),
        ],
    );
    let predicate = (
        select(vec![vec![], vec![Modifier::Inline], vec![Modifier::Static]]),
        Just(ty(TypeKind::Resource)),
        prop_oneof![
            3 => expr().prop_map(MethodBody::Expr),
            1 => Just(MethodBody::Abstract),
        ],
    );
    (
        member_gpuopts(),
        method_contract(),
        prop_oneof![2 => ordinary, 1 => pure, 1 => predicate],
        (
            pick(FUNCS),
            prop_oneof![
                4 => Just(vec![]),
                1 => proptest::collection::vec(pick(CLASSES), 1..=2),
            ],
        ),
        params(),
    )
        .prop_map(|(gpuopts, contract, (ms, rt, body), (name, tps), params)| {
            member(
                gpuopts,
                contract,
                method(ms, Some(rt), name, tps, params, body),
            )
        })
        .boxed()
}

/// Members of class `class`: fields, methods, constructors.
///
/// Fields get a contract or gpuopts only rarely: the parser accepts them there so that `check`
/// can report the misplacement.
fn class_member(class: Ident) -> BoxedStrategy<Member> {
    let field = (
        prop_oneof![9 => Just(vec![]), 1 => proptest::collection::vec(gpuopt(), 1..=1)],
        prop_oneof![9 => Just(Contract::default()), 1 => contract_of(method_clause(), 1..=1)],
        decl_type(),
        pick(FIELDS),
    )
        .prop_map(|(gpuopts, contract, ty, name)| {
            member(
                gpuopts,
                contract,
                MemberKind::Field(Field {
                    ty,
                    name,
                    span: sp(),
                }),
            )
        });
    let constructor = (
        member_gpuopts(),
        method_contract(),
        params(),
        prop_oneof![1 => Just(MethodBody::Abstract), 3 => block_body()],
    )
        .prop_map(move |(gpuopts, contract, params, body)| {
            member(
                gpuopts,
                contract,
                method(vec![], None, class.clone(), vec![], params, body),
            )
        });
    prop_oneof![2 => field, 3 => method_member(), 1 => constructor].boxed()
}

/// Clauses before a class: 1.x writes a `lock_invariant` there.
fn class_contract() -> BoxedStrategy<Contract> {
    let lock_invariant = small_expr().prop_map(|e| clause(ClauseKind::LockInvariant(e)));
    prop_oneof![4 => Just(Contract::default()), 1 => contract_of(lock_invariant.boxed(), 1..=1)]
        .boxed()
}

/// A model's action or process: `modifies`/`accessible` clauses among the others, a process
/// with or without its `= P`.
fn model_member() -> BoxedStrategy<Member> {
    let fields = || proptest::collection::vec(pick(FIELDS), 1..=2);
    let model_clause = prop_oneof![
        2 => method_clause(),
        1 => fields().prop_map(|f| clause(ClauseKind::Modifies(f))),
        1 => fields().prop_map(|f| clause(ClauseKind::Accessible(f))),
    ];
    (
        proptest::collection::vec(model_clause, 0..=3),
        pick(FUNCS),
        params(),
        prop_oneof![
            1 => Just(None),
            1 => Just(Some(MethodBody::Abstract)),
            2 => small_expr().prop_map(|e| Some(MethodBody::Expr(e))),
        ],
    )
        .prop_map(|(clauses, name, params, process)| {
            let kind = if process.is_some() {
                ModelMember::Process
            } else {
                ModelMember::Action
            };
            let mut m = method(
                vec![],
                None,
                name,
                vec![],
                params,
                process.unwrap_or(MethodBody::Abstract),
            );
            if let MemberKind::Method(method) = &mut m {
                method.model_member = Some(kind);
            }
            member(vec![], Contract { clauses }, m)
        })
        .boxed()
}

fn class() -> BoxedStrategy<Item> {
    (
        pick(CLASSES),
        class_contract(),
        prop_oneof![4 => Just(false), 1 => Just(true)],
    )
        .prop_flat_map(|(name, contract, is_model)| {
            let members = if is_model {
                prop_oneof![1 => class_member(name.clone()), 2 => model_member()].boxed()
            } else {
                class_member(name.clone())
            };
            proptest::collection::vec(members, 0..=4).prop_map(move |members| {
                Item::Class(Class {
                    contract: contract.clone(),
                    name: name.clone(),
                    members,
                    span: sp(),
                    is_model,
                })
            })
        })
        .boxed()
}

fn program() -> BoxedStrategy<Program> {
    proptest::collection::vec(
        prop_oneof![2 => class(), 1 => method_member().prop_map(Item::Member)],
        0..=3,
    )
    .prop_map(|items| Program { items, span: sp() })
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Property 1 and 2: round trip and idempotence
// ---------------------------------------------------------------------------------------------

fn show_errors(errors: &[SyntaxError]) -> String {
    errors
        .iter()
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

proptest! {
    #![proptest_config(config(128))]

    /// `parse(print(p)) == p`, ignoring spans.
    #[test]
    fn print_then_parse_is_identity(p in program()) {
        let text = syntax::print(&p, &Trivia::default());
        let result = syntax::parse(&text);
        same_as_reference(&result, &text);
        match result {
            Err(errors) => prop_assert!(
                false,
                "printed program does not parse:\n{}\n--- printed text ---\n{}",
                show_errors(&errors),
                text
            ),
            Ok(parsed) => {
                let want = spanless(&p);
                let got = spanless(&parsed.program);
                if want != got {
                    let diff = first_difference(&want, &got).unwrap_or_default();
                    prop_assert!(
                        false,
                        "parse(print(p)) != p; first difference (left: p, right: parsed) at {}\n--- printed text ---\n{}",
                        diff,
                        text
                    );
                }
            }
        }
    }

    /// `print(parse(print(p))) == print(p)`.
    #[test]
    fn printing_is_idempotent(p in program()) {
        let text = syntax::print(&p, &Trivia::default());
        match syntax::parse(&text) {
            Err(errors) => prop_assert!(
                false,
                "printed program does not parse:\n{}\n--- printed text ---\n{}",
                show_errors(&errors),
                text
            ),
            Ok(parsed) => {
                let again = syntax::print(&parsed.program, &parsed.trivia);
                prop_assert!(
                    again == text,
                    "printing is not idempotent\n--- first print ---\n{}\n--- second print ---\n{}",
                    text,
                    again
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Property 3: no input makes the front end panic
// ---------------------------------------------------------------------------------------------

/// A realistic kernel: par block, barrier, loop, quantifiers, comments, gpuopt lines.
const KERNEL: &str = r#"//:: cases KernelStep
//:: verdict Pass
class Kernel {
  int[] data;

  /* One step of a prefix sum: every thread bumps its own cell. */
  context_everywhere a != null && a.length == N;
  context_everywhere N > 0;
  requires (\forall* int i; 0 <= i && i < N; Perm(a[i], write));
  ensures (\forall* int i = 0 .. N; Perm(a[i], write));
  ensures (\forall int i; 0 <= i && i < N; {: a[i] :} == \old(a[i]) + 1);
  gpuopt glob_to_reg a 0 N - 1;
  void step(int[] a, int N) {
    int k = 0, s;
    gpuopt loop_unroll k 2;
    loop_invariant 0 <= k && k <= N;
    while (k < N) {
      k++;
    }
    par blk(int tid = 0 .. N)
      requires Perm(a[tid], write) ** a[tid] == \old(a[tid]);
      ensures Perm(a[tid], write);
    {
      a[tid] = a[tid] + 1; // bump
      barrier(blk) {
        requires Perm(a[tid], write);
        ensures Perm(a[tid], 1\2);
      }
      assert (\exists int j = 0 .. N; j == tid) || tid < 0;
    }
  }

  pure int sum(seq<int> xs) = |xs| == 0 ? 0 : xs[0] + sum(xs[1..]);
  resource inv(int[] a) = a != null ** (\forall* int i = 0 .. a.length; Perm(a[i], read));
}
"#;

const TOKENS: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    ".",
    "..",
    "=",
    "==",
    "==>",
    "**",
    "\\",
    "|",
    "||",
    "{:",
    ":}",
    "->",
    "-",
    "--",
    "++",
    "::",
    "?",
    ":",
    "!",
    "<",
    ">",
    "\\forall*",
    "\\forall",
    "\\exists",
    "\\sum",
    "\\let",
    "\\old(",
    "\\result",
    "\\array(",
    "par",
    "parallel",
    "and",
    "barrier",
    "gpuopt",
    "loop_unroll",
    "requires",
    "ensures",
    "context",
    "loop_invariant",
    "with",
    "then",
    "in",
    "unfolding",
    "new",
    "int",
    "seq<",
    "map<",
    "class",
    "pure",
    "resource",
    "if",
    "else",
    "while",
    "for",
    "return",
    "ghost",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "0",
    "99999999999999999999999999",
    "\"",
    "é",
    "\u{0}",
    "x",
    "tid",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete(Index, usize),
    Duplicate(Index, usize),
    Insert(Index, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), 1usize..40).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<Index>(), 1usize..40).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        (any::<Index>(), select(TOKENS)).prop_map(|(i, t)| Mutation::Insert(i, t)),
    ]
}

fn mutate(source: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = source.chars().collect();
    for m in mutations {
        let len = chars.len();
        match m {
            Mutation::Delete(i, n) if len > 0 => {
                let at = i.index(len);
                let end = (at + n).min(len);
                chars.drain(at..end);
            }
            Mutation::Duplicate(i, n) if len > 0 => {
                let at = i.index(len);
                let end = (at + n).min(len);
                let copy: Vec<char> = chars[at..end].to_vec();
                chars.splice(end..end, copy);
            }
            Mutation::Insert(i, token) => {
                let at = i.index(len + 1);
                chars.splice(at..at, token.chars());
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Parse, and print what parses: neither may panic. And the parser's fast path must give
/// exactly what its reference, the pest path, gives: IR with spans, warnings, errors.
fn parse_and_print(source: &str) {
    let result = syntax::parse(source);
    same_as_reference(&result, source);
    if let Ok(parsed) = result {
        let _ = syntax::print(&parsed.program, &parsed.trivia);
    }
}

fn same_as_reference(result: &Result<syntax::Parsed, Vec<SyntaxError>>, source: &str) {
    match (result, &syntax::parse_reference(source)) {
        (Ok(got), Ok(want)) => {
            assert!(
                got.program == want.program,
                "fast path and pest differ on:\n{source}"
            );
            assert_eq!(got.warnings, want.warnings, "warnings differ on:\n{source}");
        }
        (Err(got), Err(want)) => assert_eq!(format!("{got:?}"), format!("{want:?}")),
        (got, want) => panic!("fast path {got:?}\npest {want:?}\non:\n{source}"),
    }
}

#[test]
fn kernel_parses() {
    // The unmutated kernel is valid PVL; if it does not parse, the mutation test below
    // exercises only the error paths.
    match syntax::parse(KERNEL) {
        Ok(parsed) => {
            let _ = syntax::print(&parsed.program, &parsed.trivia);
        }
        Err(errors) => panic!("the reference kernel must parse:\n{}", show_errors(&errors)),
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(source) = std::str::from_utf8(&bytes) {
            parse_and_print(source);
        }
    }

    #[test]
    fn random_pvlish_text_never_panics(
        source in "[a-z_ 0-9(){}\\[\\];,.=<>!&|*+\\-/\\\\:?%\n]{0,200}"
    ) {
        parse_and_print(&source);
    }

    #[test]
    fn mutated_kernel_never_panics(
        mutations in proptest::collection::vec(mutation(), 1..=4)
    ) {
        let source = mutate(KERNEL, &mutations);
        parse_and_print(&source);
    }
}
