//! The typing relations: which value may stand where another type is expected, and the common
//! type of two branches. Kept apart from the walker so the rules can be read in one place.

use super::env::Ty;

/// May a value of type `found` be used where `expected` is required?
///
/// Follows VerCors' implicit coercions: `int` to any fraction type; fraction types among each
/// other (VerCors inserts a run-time range check, `verify` proves it); `boolean` to `resource`;
/// `null` to arrays, objects and options. Containers are compared element-wise.
pub fn assignable(expected: &Ty, found: &Ty) -> bool {
    use Ty::*;
    match (expected, found) {
        (Unknown, _) | (_, Unknown) => true,
        (Int, Int) | (Bool, Bool) | (Void, Void) | (Resource, Resource) | (Null, Null) => true,
        (Type, Type) => true,
        (Frac | ZFrac | Rational, Int | Frac | ZFrac | Rational) => true,
        (Resource, Bool) => true,
        (Array(_) | Class(_) | Option(_), Null) => true,
        (Class(a), Class(b)) => a == b,
        (Param(a), Param(b)) => a == b,
        (Seq(a), Seq(b)) | (Set(a), Set(b)) | (Bag(a), Bag(b)) | (Option(a), Option(b)) => {
            assignable(a, b)
        }
        // Arrays are mutable and shared: their element types must agree exactly.
        (Array(a), Array(b)) => same_modulo_unknown(a, b),
        (Map(k1, v1), Map(k2, v2)) | (Tuple(k1, v1), Tuple(k2, v2)) => {
            assignable(k1, k2) && assignable(v1, v2)
        }
        _ => false,
    }
}

fn same_modulo_unknown(a: &Ty, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Unknown, _) | (_, Ty::Unknown) => true,
        (Ty::Array(x), Ty::Array(y)) => same_modulo_unknown(x, y),
        _ => a == b,
    }
}

/// May `a == b` be asked? Resources cannot be compared (they are not values).
pub fn comparable(a: &Ty, b: &Ty) -> bool {
    if matches!(a, Ty::Resource) || matches!(b, Ty::Resource) {
        return false;
    }
    (a.is_numeric() && b.is_numeric()) || assignable(a, b) || assignable(b, a)
}

/// The type of `c ? a : b` (and of `s1 + s2` on containers), or `None` if there is none.
pub fn join(a: &Ty, b: &Ty) -> Option<Ty> {
    use Ty::*;
    Some(match (a, b) {
        (Unknown, t) | (t, Unknown) => t.clone(),
        _ if a == b => a.clone(),
        _ if a.is_numeric() && b.is_numeric() => Rational,
        (Bool | Resource, Bool | Resource) => Resource,
        (Null, t) | (t, Null) if t.is_reference() => t.clone(),
        (Seq(x), Seq(y)) => Seq(Box::new(join(x, y)?)),
        (Set(x), Set(y)) => Set(Box::new(join(x, y)?)),
        (Bag(x), Bag(y)) => Bag(Box::new(join(x, y)?)),
        (Option(x), Option(y)) => Option(Box::new(join(x, y)?)),
        (Tuple(a1, b1), Tuple(a2, b2)) => Tuple(Box::new(join(a1, a2)?), Box::new(join(b1, b2)?)),
        _ if assignable(a, b) => a.clone(),
        _ if assignable(b, a) => b.clone(),
        _ => return None,
    })
}

/// The type of `a + b`, `a - b`, `a * b` on numbers: `int` stays `int`, anything with a
/// fraction in it is a `rational` (which coerces back to `frac`/`zfrac` where needed).
pub fn arith(a: &Ty, b: &Ty) -> Option<Ty> {
    match (a, b) {
        (Ty::Int, Ty::Int) => Some(Ty::Int),
        (Ty::Unknown, t) | (t, Ty::Unknown) if t.is_numeric() || *t == Ty::Unknown => {
            Some(if *t == Ty::Int { Ty::Int } else { Ty::Unknown })
        }
        _ if a.is_numeric() && b.is_numeric() => Some(Ty::Rational),
        _ => None,
    }
}

/// Boolean or resource (or unknown): what may stand in an assertion.
pub fn is_assertion(t: &Ty) -> bool {
    matches!(t, Ty::Bool | Ty::Resource | Ty::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coercions() {
        assert!(assignable(&Ty::Frac, &Ty::Int));
        assert!(!assignable(&Ty::Int, &Ty::Frac));
        assert!(assignable(&Ty::Resource, &Ty::Bool));
        assert!(!assignable(&Ty::Bool, &Ty::Resource));
        assert!(assignable(&Ty::Array(Box::new(Ty::Int)), &Ty::Null));
        assert!(!assignable(&Ty::Seq(Box::new(Ty::Int)), &Ty::Null));
        assert!(assignable(
            &Ty::Option(Box::new(Ty::Int)),
            &Ty::Option(Box::new(Ty::Unknown))
        ));
        assert!(!comparable(&Ty::Resource, &Ty::Resource));
        assert!(comparable(&Ty::Frac, &Ty::ZFrac));
        assert_eq!(join(&Ty::Bool, &Ty::Resource), Some(Ty::Resource));
        assert_eq!(join(&Ty::Int, &Ty::Bool), None);
        assert_eq!(arith(&Ty::Int, &Ty::Frac), Some(Ty::Rational));
        assert_eq!(arith(&Ty::Int, &Ty::Bool), None);
    }
}
