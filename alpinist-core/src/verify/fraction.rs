//! The fraction types: `frac` promises 0 < v ≤ 1, `zfrac` 0 ≤ v ≤ 1 (`rational` promises
//! nothing). A callee, a pure function's axioms and its own proof, a predicate's body and the
//! body of a `\let` all *assume* that promise about the names of such a type, so every place
//! that binds a value to one *proves* it:
//! - a call's arguments and `given` ghost arguments (`precondition_failed`; an omitted `given`
//!   is any value in the range), in `exec.rs`;
//! - a pure function's arguments (`function_precondition_failed`) in `expr.rs`, whose axioms
//!   also carry the ranges as hypotheses, so they say nothing outside them;
//! - a `\let` of a fraction type, a local's initial or assigned value, a predicate
//!   instance's arguments (`fraction_out_of_range`).

use z3::ast::{Bool, Real};

use crate::syntax::TypeKind;

use super::state::{real, Term, Ty, Value};

/// What the type `ty` says about the value `v` (a fraction), or `None` when it says nothing.
pub fn range(ty: &TypeKind, v: &Value) -> Option<Bool> {
    let Term::Real(x) = &v.term else {
        return None;
    };
    range_of(ty, x)
}

/// [`range`] for a real term.
pub fn range_of(ty: &TypeKind, x: &Real) -> Option<Bool> {
    match ty {
        TypeKind::Frac => Some(Bool::and(&[x.gt(real(0)), x.le(real(1))])),
        TypeKind::ZFrac => Some(Bool::and(&[x.ge(real(0)), x.le(real(1))])),
        _ => None,
    }
}

/// Whether `ty` promises a range (`frac`, `zfrac`).
pub fn has_range(ty: &TypeKind) -> bool {
    matches!(ty, TypeKind::Frac | TypeKind::ZFrac)
}

/// Whether `ty` is a fraction type (a value of it is a real: ints are converted).
pub fn is_fraction(ty: &TypeKind) -> bool {
    matches!(ty, TypeKind::Frac | TypeKind::ZFrac | TypeKind::Rational)
}

/// `v` as a value of the fraction type `ty` when it is one (an int becomes a real), else `v`.
pub fn convert(ty: &TypeKind, v: Value) -> Value {
    match (&v.term, is_fraction(ty)) {
        (Term::Int(i), true) => Value {
            term: Term::Real(Real::from_int(i)),
            ty: Ty::Perm,
        },
        _ => v,
    }
}

/// A note for a failed range obligation: "`name` is a `frac`: 0 < name <= 1".
pub fn note(ty: &TypeKind, name: &str) -> Option<String> {
    // A parameter bound by an expansion goes by a temporary name `name'n` (`inline.rs`).
    let name = name.split('\'').next().unwrap_or(name);
    match ty {
        TypeKind::Frac => Some(format!("`{name}` is a `frac`: 0 < {name} <= 1")),
        TypeKind::ZFrac => Some(format!("`{name}` is a `zfrac`: 0 <= {name} <= 1")),
        _ => None,
    }
}
