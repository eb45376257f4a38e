//! The one-point rule for quantifier binders: `∀x, y. (x = e(y) ∧ G) ⇒ B` is `∀y. G[x:=e] ⇒
//! B[x:=e]` when `x` does not occur in `e`.
//!
//! The two forms are equivalent, so the rule cannot make a verdict wrong; it decides whether Z3
//! can *use* a quantified fact. Z3 instantiates a quantifier through patterns, and a pattern must
//! mention every binder under an uninterpreted function. A binder that occurs only under
//! arithmetic — the thread `t` in a tiled contract's `(i - lo) / T == t` — has no pattern, so
//! the fact would never be instantiated (and the proof would end in "unknown"). Eliminating that
//! binder leaves a quantifier over the cell `i`, which Z3 instantiates at every heap read `a[i]`.
//!
//! Invariants:
//! - Only a binder that occurs nowhere under an uninterpreted function (nor under a nested
//!   quantifier, which is not looked into) is eliminated: one that has patterns keeps them.
//! - Callers test [`has_candidate`] first and otherwise leave the terms alone: Z3's search
//!   depends on term ids, and merely rebuilding wrappers around a proof that needs none moved
//!   the two-dimensional Blelloch proof from 3 s to 13 s.
//! - Terms are inspected by declaration *name*, never by Z3's declaration kinds (renumbered
//!   between the system libz3 and the crate's headers, see `verify/mod.rs`). A user function
//!   that happens to be called like an arithmetic operator only makes a binder look
//!   unpatterned, which costs instantiation, never soundness.

use std::collections::HashSet;

use z3::ast::{Ast, Bool, Dynamic, Int};

/// Declarations through which a binder gives Z3 no pattern: connectives, comparisons and
/// integer/real arithmetic.
const INTERPRETED: &[&str] = &[
    "and", "or", "not", "=>", "=", "distinct", "ite", "xor", "iff", "<=", ">=", "<", ">", "+", "-",
    "*", "/", "div", "mod", "rem", "to_real", "to_int", "true", "false",
];

/// Whether some conjunct of `guards` is an equation with a binder of `xs` on one side: the
/// cheap test before [`eliminate`], which only then touches the terms.
pub fn has_candidate(xs: &[Int], guards: &[Bool]) -> bool {
    let mut conj = Vec::new();
    for g in guards {
        conjuncts(&Dynamic::from_ast(g), &mut conj);
    }
    conj.iter().any(|c| {
        c.is_app()
            && c.num_children() == 2
            && name_of(c).as_deref() == Some("=")
            && c.children()
                .iter()
                .any(|side| xs.iter().any(|x| *side == Dynamic::from_ast(x)))
    })
}

/// Eliminates from `xs` every binder marked `movable` that a conjunct of `guards` defines as
/// `x = e` (or `e = x`) and that has no pattern, substituting `e` for it in `guards` and `uses`.
/// Returns, for each original binder, whether it is still bound.
pub fn eliminate(
    xs: &mut Vec<Int>,
    movable: &[bool],
    guards: &mut [Bool],
    uses: &mut [Dynamic],
) -> Vec<bool> {
    let mut kept = vec![true; xs.len()];
    // Original index of each remaining binder.
    let mut origin: Vec<usize> = (0..xs.len()).collect();
    while let Some((k, e)) = find(xs, &origin, movable, guards, uses) {
        let x = xs.remove(k);
        kept[origin.remove(k)] = false;
        let pair = [(&x, &e)];
        for g in guards.iter_mut() {
            *g = g.substitute(&pair);
        }
        let pair = [(&Dynamic::from_ast(&x), &Dynamic::from_ast(&e))];
        for u in uses.iter_mut() {
            *u = u.substitute(&pair);
        }
    }
    kept
}

/// The first eliminable binder (its position in `xs`) with its definition.
fn find(
    xs: &[Int],
    origin: &[usize],
    movable: &[bool],
    guards: &[Bool],
    uses: &[Dynamic],
) -> Option<(usize, Int)> {
    let mut conj = Vec::new();
    for g in guards {
        conjuncts(&Dynamic::from_ast(g), &mut conj);
    }
    for (k, x) in xs.iter().enumerate() {
        if !movable.get(origin[k]).copied().unwrap_or(false) {
            continue;
        }
        let x = Dynamic::from_ast(x);
        let Some(e) = conj.iter().find_map(|c| definition(c, &x)) else {
            continue;
        };
        let mut terms: Vec<Dynamic> = guards.iter().map(|g| Dynamic::from_ast(g)).collect();
        terms.extend(uses.iter().cloned());
        let mut seen = HashSet::new();
        if terms.iter().all(|t| !patterned(t, &x, false, &mut seen)) {
            return Some((k, e));
        }
    }
    None
}

pub(super) fn name_of(t: &Dynamic) -> Option<String> {
    t.is_app().then(|| t.decl().name())
}

pub(super) fn conjuncts(t: &Dynamic, out: &mut Vec<Dynamic>) {
    if t.is_app() && t.num_children() > 0 && name_of(t).as_deref() == Some("and") {
        for c in t.children() {
            conjuncts(&c, out);
        }
    } else {
        out.push(t.clone());
    }
}

/// `e` when `c` is `x = e` or `e = x` with `x` not in `e` (an integer).
fn definition(c: &Dynamic, x: &Dynamic) -> Option<Int> {
    if !c.is_app() || c.num_children() != 2 || name_of(c).as_deref() != Some("=") {
        return None;
    }
    let [a, b] = <[Dynamic; 2]>::try_from(c.children()).ok()?;
    let e = if a == *x {
        b
    } else if b == *x {
        a
    } else {
        return None;
    };
    if occurs(&e, x, &mut HashSet::new()) {
        return None;
    }
    e.as_int()
}

pub(super) fn occurs(t: &Dynamic, x: &Dynamic, seen: &mut HashSet<Dynamic>) -> bool {
    if t == x {
        return true;
    }
    if !t.is_app() {
        return occurs_in_binder(t, x);
    }
    if !seen.insert(t.clone()) {
        return false;
    }
    t.children().iter().any(|c| occurs(c, x, seen))
}

/// Whether `x` occurs in the quantifier or lambda `t` (whose body the crate does not expose:
/// Z3's substitution does look inside).
fn occurs_in_binder(t: &Dynamic, x: &Dynamic) -> bool {
    let Some(x) = x.as_int() else {
        return true;
    };
    let probe = Int::fresh_const("occurs");
    t.substitute(&[(&Dynamic::from_ast(&x), &Dynamic::from_ast(&probe))]) != *t
}

/// Whether `x` occurs in `t` under an uninterpreted function or a quantifier (`under`: the
/// context of `t` already is one).
fn patterned(t: &Dynamic, x: &Dynamic, under: bool, seen: &mut HashSet<(Dynamic, bool)>) -> bool {
    if t == x {
        return under;
    }
    if !t.is_app() {
        // Under a quantifier or lambda, `x` may well have patterns.
        return occurs_in_binder(t, x);
    }
    if t.num_children() == 0 || !seen.insert((t.clone(), under)) {
        return false;
    }
    let name = t.decl().name();
    let under = under || !INTERPRETED.contains(&name.as_str());
    t.children().iter().any(|c| patterned(c, x, under, seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard_and_use() -> (Int, Int, Int) {
        (
            Int::new_const("t"),
            Int::new_const("i"),
            Int::new_const("n"),
        )
    }

    #[test]
    fn a_binder_defined_under_arithmetic_only_is_substituted() {
        let (t, i, n) = guard_and_use();
        let heap = z3::FuncDecl::new("heap", &[&z3::Sort::int()], &z3::Sort::int());
        let read = heap.apply(&[&i as &dyn Ast]);
        let mut xs = vec![t.clone(), i.clone()];
        let mut guards = vec![
            Bool::and(&[t.ge(Int::from_i64(0)), t.lt(&n)]),
            i.div(Int::from_i64(5)).eq(&t),
        ];
        let mut uses = [read.clone()];
        let kept = eliminate(&mut xs, &[true, true], &mut guards, &mut uses);
        assert_eq!(kept, vec![false, true]);
        assert_eq!(xs, vec![i.clone()]);
        let mut seen = HashSet::new();
        assert!(!guards.iter().any(|g| occurs(
            &Dynamic::from_ast(g),
            &Dynamic::from_ast(&t),
            &mut seen
        )));
        assert_eq!(uses[0], read);
    }

    #[test]
    fn a_binder_with_a_pattern_or_not_movable_or_self_referential_stays() {
        let (t, i, _) = guard_and_use();
        let heap = z3::FuncDecl::new("heap", &[&z3::Sort::int()], &z3::Sort::int());
        let read_t = heap.apply(&[&t as &dyn Ast]);
        let def = i.div(Int::from_i64(5)).eq(&t);
        // Occurs under `heap`: has a pattern.
        let mut xs = vec![t.clone(), i.clone()];
        let kept = eliminate(&mut xs, &[true, true], &mut [def.clone()], &mut [read_t]);
        assert_eq!(kept, vec![true, true]);
        // Not movable.
        let kept = eliminate(&mut xs, &[false, true], &mut [def], &mut []);
        assert_eq!(kept, vec![true, true]);
        // `t = t + 1` defines nothing.
        let circular = t.eq(Int::add(&[t.clone(), Int::from_i64(1)]));
        let kept = eliminate(&mut xs, &[true, true], &mut [circular], &mut []);
        assert_eq!(kept, vec![true, true]);
    }
}
