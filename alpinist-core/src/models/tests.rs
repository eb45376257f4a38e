//! The process algebra's canonical form, interleavings and the one-point rule of `exists`.
//! Lowering whole programs is tested on `tests/data/verify*/models_*.pvl`.

use super::process::{exists, Proc, MAX_INTERLEAVINGS};
use crate::syntax::*;

fn act(name: &str) -> Proc {
    Proc::Act {
        name: name.to_string(),
        args: Vec::new(),
    }
}

fn with_arg(name: &str, arg: &str) -> Proc {
    Proc::Act {
        name: name.to_string(),
        args: vec![Expr::name(arg, Span::default())],
    }
}

#[test]
fn the_laws_of_sequence_and_parallel_composition_give_one_shape() {
    let left = Proc::par(vec![Proc::par(vec![act("a"), act("b")]), act("c")]);
    let right = Proc::par(vec![act("c"), Proc::par(vec![act("b"), act("a")])]);
    assert_eq!(left.shape(), right.shape());
    let left = Proc::seq(vec![act("a"), Proc::seq(vec![act("b"), act("c")])]);
    let right = Proc::seq(vec![Proc::seq(vec![act("a"), act("b")]), act("c")]);
    assert_eq!(left.shape(), right.shape());
    // `empty` is the unit of both.
    assert_eq!(Proc::seq(vec![act("a"), Proc::empty()]).shape(), "a/0");
    assert_eq!(Proc::par(vec![Proc::empty(), act("a")]).shape(), "a/0");
    assert_eq!(
        Proc::par(vec![Proc::empty(), Proc::empty()]).shape(),
        "empty"
    );
    // A sequence does not commute.
    assert_ne!(
        Proc::seq(vec![act("a"), act("b")]).shape(),
        Proc::seq(vec![act("b"), act("a")]).shape()
    );
}

#[test]
fn same_shape_branches_keep_their_written_order() {
    let p = Proc::par(vec![with_arg("take", "one"), with_arg("take", "two")]);
    let args: Vec<String> = p
        .actions()
        .iter()
        .flat_map(|(_, a)| a.iter().map(print_expr))
        .collect();
    assert_eq!(args, ["one", "two"]);
}

#[test]
fn interleavings_are_every_order_each_once() {
    let count = |p: Proc| p.interleavings().map(|runs| runs.len());
    assert_eq!(
        count(Proc::par(vec![act("a"), act("b"), act("c")])),
        Some(6)
    );
    assert_eq!(
        count(Proc::par(vec![
            Proc::seq(vec![act("a"), act("b")]),
            act("c")
        ])),
        Some(3)
    );
    // The same action twice in parallel: one order.
    assert_eq!(count(Proc::par(vec![act("a"), act("a")])), Some(1));
    assert_eq!(count(Proc::seq(vec![act("a"), act("b")])), Some(1));
    assert_eq!(count(Proc::empty()), Some(1));
    // Four sequences of two in parallel: 8! / 2^4 = 2520 orders, past the limit.
    let pairs = ["ab", "cd", "ef", "gh"]
        .iter()
        .map(|p| {
            let (x, y) = p.split_at(1);
            Proc::seq(vec![act(x), act(y)])
        })
        .collect();
    const { assert!(2520 > MAX_INTERLEAVINGS) };
    assert_eq!(count(Proc::par(pairs)), None);
}

#[test]
fn a_binder_an_equation_defines_is_substituted_away() {
    let s = Span::default();
    let x = || Expr::name("x", s);
    let y = || Expr::name("y", s);
    let one = Expr {
        kind: ExprKind::IntLit(1u32.into()),
        span: s,
    };
    let binder = |name: &str| Binder {
        ty: Type {
            kind: TypeKind::Int,
            span: s,
        },
        name: Ident {
            name: name.to_string(),
            span: s,
        },
        range: None,
        span: s,
    };
    let defined = exists(
        vec![binder("x")],
        vec![
            Expr::binary(
                BinaryOp::Eq,
                x(),
                Expr::binary(BinaryOp::Add, y(), one.clone()),
            ),
            Expr::binary(BinaryOp::Gt, x(), y()),
        ],
        s,
    );
    assert_eq!(print_expr(&defined), "y + 1 > y");
    let kept = exists(
        vec![binder("x")],
        vec![Expr::binary(BinaryOp::Gt, x(), y())],
        s,
    );
    assert!(matches!(kept.kind, ExprKind::Quantifier(_)), "{kept:?}");
}
