//! Instances of a tiled quantified fact at the tile that holds a cell.
//!
//! A par block over `k` whose threads each state a fact about their own tile of cells,
//! `∀k, i. lo ≤ k < hi ∧ k·N ≤ i < (k+1)·N ∧ R ⇒ P(k, i)`, gives the caller that fact for every
//! cell; but to use it at a cell `i₀`, Z3 must find the thread `k = i₀ div N`, a term no
//! pattern creates (`k` occurs only under arithmetic and `mul`), and then prove `i₀`'s place in
//! its tile, nonlinear arithmetic. A postcondition over all cells stayed "unknown". This module
//! adds, beside the fact, `∀i. W > 0 ∧ c + lo·W ≤ i < c + hi·W ∧ R[k:=q] ⇒ P(q, i)` with
//! `q = (i - c) div W`, where `c + k·W` is the tile's lower bound and `W` its width: a
//! quantifier over `i` alone, which Z3 instantiates at every heap read of a cell, and whose
//! range is the cells' own.
//!
//! Invariants:
//! - The added fact follows from the original: the bounds are *proved* (by a query of their
//!   own) to be `L(k) = c + k·W` and `U(k) = c + (k+1)·W` for every `k`; then for `W > 0` and
//!   `c + lo·W ≤ i < c + hi·W`, floor division gives `L(q) ≤ i < U(q)` and `lo ≤ q < hi`, so the
//!   fact is the original's instance at `(q, i)`. Where the proof is not found, nothing is added.
//! - Terms are built only where a candidate exists (a binder bounded below and above by terms
//!   of another binder): Z3's search depends on term ids (see `one_point.rs`).
//! - Terms are inspected by declaration *name*, never by Z3's declaration kinds.

use std::collections::HashSet;

use z3::ast::{Ast, Bool, Dynamic, Int};
use z3::{Params, SatResult, Solver};

use super::one_point::{conjuncts, name_of, occurs};

/// At most this many instances per fact: each is a quantifier Z3 may instantiate.
const MAX_INSTANCES: usize = 2;

/// Z3's budget for proving a tile's bounds affine (a polynomial identity: a few thousand units).
const SHAPE_RLIMIT: u32 = 200_000;

/// For `∀xs. guards ⇒ goal`: its instances at the tile holding each tiled binder, each closed
/// over the remaining binders. Empty where no binder is bounded by a tile of another.
pub fn instances(xs: &[Int], guards: &[Bool], goal: &Bool) -> Vec<Bool> {
    if xs.len() < 2 {
        return Vec::new();
    }
    let mut conj = Vec::new();
    for g in guards {
        conjuncts(&Dynamic::from_ast(g), &mut conj);
    }
    let free_of = |t: &Dynamic, x: &Dynamic| !occurs(t, x, &mut HashSet::new());
    let mut out = Vec::new();
    for (b, inner) in xs.iter().enumerate() {
        let inner_d = Dynamic::from_ast(inner);
        for (a, outer) in xs.iter().enumerate() {
            if a == b || out.len() >= MAX_INSTANCES {
                continue;
            }
            let outer_d = Dynamic::from_ast(outer);
            // A conjunct bounding `x` on `side` by a term free of `inner` that mentions `outer`
            // exactly when `tiled`: the tile of `inner` over `outer`, or the range of `outer`.
            let find = |x: &Dynamic, tiled: bool, side| {
                conj.iter().enumerate().find_map(|(n, c)| {
                    let t = bound(c, x, side)?;
                    (free_of(&t, &inner_d) && free_of(&t, &outer_d) != tiled).then_some((n, t))
                })
            };
            let (Some((l, lower)), Some((u, upper))) = (
                find(&inner_d, true, Side::Lower),
                find(&inner_d, true, Side::Upper),
            ) else {
                continue;
            };
            let (Some((rl, lo)), Some((ru, hi))) = (
                find(&outer_d, false, Side::Lower),
                find(&outer_d, false, Side::Upper),
            ) else {
                continue;
            };
            let Some((start, width)) = tile_of(&lower, &upper, outer) else {
                continue;
            };
            let (Some(lo), Some(hi)) = (lo.as_int(), hi.as_int()) else {
                continue;
            };
            let q = (inner - &start).div(&width);
            let pair = [(&outer_d, &Dynamic::from_ast(&q))];
            let mut hyps = vec![
                width.gt(Int::from_i64(0)),
                (&start + Int::mul(&[&lo, &width])).le(inner),
                inner.lt(&(&start + Int::mul(&[&hi, &width]))),
            ];
            for (n, c) in conj.iter().enumerate() {
                if ![l, u, rl, ru].contains(&n) {
                    hyps.push(c.substitute(&pair).as_bool().expect("a guard is boolean"));
                }
            }
            let body = Bool::and(&hyps).implies(goal.substitute(&[(outer, &q)]));
            let rest: Vec<&dyn Ast> = xs
                .iter()
                .enumerate()
                .filter(|&(k, _)| k != a)
                .map(|(_, x)| x as &dyn Ast)
                .collect();
            out.push(z3::ast::forall_const(&rest, &[], &body));
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// `L ≤ x` (or `x ≥ L`): `L`.
    Lower,
    /// `x < U` (or `U > x`): `U`.
    Upper,
}

/// The bound `c` puts on `x` on `side`, as an inclusive lower or exclusive upper bound.
fn bound(c: &Dynamic, x: &Dynamic, side: Side) -> Option<Dynamic> {
    if !c.is_app() || c.num_children() != 2 {
        return None;
    }
    let [l, r] = <[Dynamic; 2]>::try_from(c.children()).ok()?;
    let (other, x_on_left) = if l == *x {
        (r, true)
    } else if r == *x {
        (l, false)
    } else {
        return None;
    };
    let found = match (name_of(c)?.as_str(), x_on_left) {
        ("<=", false) | (">=", true) => Side::Lower,
        ("<", true) | (">", false) => Side::Upper,
        _ => return None,
    };
    (found == side).then_some(other)
}

/// `(c, W)` where `lower = c + outer·W` and `upper = c + (outer+1)·W` for every `outer`
/// (after `mul` is read as `*`), proved by a query of its own, and `W` is not a numeral ≤ 0;
/// `None` for any other shape, or where the query does not answer.
fn tile_of(lower: &Dynamic, upper: &Dynamic, outer: &Int) -> Option<(Int, Int)> {
    let (lower, upper) = (products(lower)?.as_int()?, products(upper)?.as_int()?);
    let at = |t: &Int, k: i64| t.substitute(&[(outer, &Int::from_i64(k))]).simplify();
    let start = at(&lower, 0);
    let width = (at(&upper, 0) - &start).simplify();
    if width.as_i64().is_some_and(|w| w <= 0) || occurs_int(&width, outer) {
        return None;
    }
    let affine = Bool::and(&[
        lower.eq(&(&start + Int::mul(&[outer, &width]))),
        upper.eq(&(&start + Int::mul(&[&(outer + Int::from_i64(1)), &width]))),
    ]);
    let solver = Solver::new();
    let mut params = Params::new();
    params.set_u32("rlimit", SHAPE_RLIMIT);
    solver.set_params(&params);
    solver.assert(affine.not());
    (solver.check() == SatResult::Unsat).then_some((start, width))
}

fn occurs_int(t: &Int, x: &Int) -> bool {
    occurs(
        &Dynamic::from_ast(t),
        &Dynamic::from_ast(x),
        &mut HashSet::new(),
    )
}

/// `t` with every `mul(x, y)` (the checker's product of non-literals) read as `x * y`, so that
/// simplification sees the arithmetic. `None` where a product is not of two integers.
fn products(t: &Dynamic) -> Option<Dynamic> {
    let mut t = t.clone();
    // Innermost products first; a handful at most in a bound.
    for _ in 0..16 {
        let Some(m) = innermost_product(&t) else {
            return Some(t);
        };
        let [x, y] = <[Dynamic; 2]>::try_from(m.children()).ok()?;
        let product = Dynamic::from_ast(&Int::mul(&[&x.as_int()?, &y.as_int()?]));
        t = t.substitute(&[(&m, &product)]);
    }
    None
}

fn innermost_product(t: &Dynamic) -> Option<Dynamic> {
    if !t.is_app() || t.num_children() == 0 {
        return None;
    }
    if let Some(inner) = t.children().iter().find_map(innermost_product) {
        return Some(inner);
    }
    (name_of(t).as_deref() == Some("mul") && t.num_children() == 2).then(|| t.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use z3::FuncDecl;

    /// The checker's `mul` of two non-literals (`World::product`).
    fn mul(x: &Int, y: &Int) -> Dynamic {
        let int = z3::Sort::int();
        FuncDecl::new("mul", &[&int, &int], &int).apply(&[x as &dyn Ast, y as &dyn Ast])
    }

    #[test]
    fn consecutive_tiles_are_recognised_and_nothing_else() {
        let (k, n, m) = (
            Int::new_const("k"),
            Int::new_const("n"),
            Int::new_const("m"),
        );
        let one = Int::from_i64(1);
        // k * N .. (k + 1) * N, through `mul` as the checker builds it.
        let lower = mul(&k, &n);
        let upper = mul(&(&k + &one), &n);
        let (start, width) = tile_of(&lower, &upper, &k).expect("consecutive tiles");
        assert_eq!(start.as_i64(), Some(0));
        assert_eq!(width, n);
        // m + 4 * k .. m + 4 * k + 4: an offset and a literal width.
        let four = Int::from_i64(4);
        let lower = Dynamic::from_ast(&(&m + Int::mul(&[&four, &k])));
        let upper = Dynamic::from_ast(&(&m + Int::mul(&[&four, &k]) + &four));
        assert!(tile_of(&lower, &upper, &k).is_some());
        // Gaps (the tile one cell short), overlaps, k² N: not consecutive tiles.
        let short = Dynamic::from_ast(&(mul(&(&k + &one), &n).as_int().unwrap() - &one));
        assert!(tile_of(&mul(&k, &n), &short, &k).is_none());
        let wide = mul(&(&k + Int::from_i64(2)), &n);
        assert!(tile_of(&mul(&k, &n), &wide, &k).is_none());
        let square = Dynamic::from_ast(&Int::mul(&[&k, &k, &n]));
        let next = Dynamic::from_ast(&(Int::mul(&[&k, &k, &n]) + &n));
        assert!(tile_of(&square, &next, &k).is_none());
        // Empty or backwards tiles.
        let back = Dynamic::from_ast(&(Int::mul(&[&four, &k]) - &four));
        assert!(tile_of(&Dynamic::from_ast(&Int::mul(&[&four, &k])), &back, &k).is_none());
    }

    #[test]
    fn the_instance_ranges_over_the_cells_of_all_tiles() {
        let (k, i, n, m) = (
            Int::new_const("k"),
            Int::new_const("i"),
            Int::new_const("n"),
            Int::new_const("m"),
        );
        let one = Int::from_i64(1);
        let zero = Int::from_i64(0);
        let lower = mul(&k, &n).as_int().unwrap();
        let upper = mul(&(&k + &one), &n).as_int().unwrap();
        let guards = [
            Bool::and(&[zero.le(&k), k.lt(&m)]),
            Bool::and(&[lower.le(&i), i.lt(&upper)]),
        ];
        let p = FuncDecl::new(
            "p",
            &[&z3::Sort::int(), &z3::Sort::int()],
            &z3::Sort::bool(),
        );
        let goal = p
            .apply(&[&k as &dyn Ast, &i as &dyn Ast])
            .as_bool()
            .unwrap();
        let found = instances(&[k.clone(), i.clone()], &guards, &goal);
        assert_eq!(found.len(), 1, "{found:?}");
        // The instance gives p(i div n, i) for a cell i of the m * n, n > 0 ...
        let cell = Int::new_const("cell");
        let solver = Solver::new();
        solver.assert(&found[0]);
        solver.assert(n.gt(&zero));
        solver.assert(zero.le(&cell));
        solver.assert(cell.lt(Int::mul(&[&m, &n])));
        let claim = p
            .apply(&[&cell.div(&n) as &dyn Ast, &cell as &dyn Ast])
            .as_bool()
            .unwrap();
        solver.push();
        solver.assert(claim.not());
        assert_eq!(solver.check(), SatResult::Unsat);
        solver.pop(1);
        // ... and nothing about a cell past them.
        solver.assert(&found[0]);
        let past = Int::mul(&[&m, &n]);
        let claim = p
            .apply(&[&past.div(&n) as &dyn Ast, &past as &dyn Ast])
            .as_bool()
            .unwrap();
        solver.assert(claim.not());
        assert_eq!(solver.check(), SatResult::Sat);
    }
}
