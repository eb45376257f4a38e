//! What a method's precondition says about its inputs, for the two clients that run methods
//! on concrete inputs: [`crate::witness`] (the smallest failing input) and
//! [`crate::differential`] (`alpinist run`: seeded inputs at given sizes). One reading of the
//! contract for both.
//!
//! - [`preconditions`] — the conjuncts of `requires`, `context` and `context_everywhere`.
//! - [`length_of`] — an array's (or sequence's) length: `a.length == e`, `\array(a, e)`,
//!   `|s| == e`.
//! - [`matrix_dims`] — a matrix's rows and columns: `\matrix(m, r, c)`.
//! - [`fixed_values`] — what conjuncts `x == e` equate an integer input with.
//! - [`int_value`] — an integer expression over values already chosen.
//! - [`SplitMix64`] — the seeded generator of input contents.

use crate::syntax::{BinaryOp, Builtin, ClauseKind, Contract, Expr, ExprKind, UnaryOp};

/// The conjuncts a caller must establish: of `requires`, `context` and
/// `context_everywhere`, flattened at `&&` and `**`.
pub fn preconditions(contract: &Contract) -> Vec<&Expr> {
    let mut conjuncts = Vec::new();
    for c in &contract.clauses {
        if let ClauseKind::Requires(e) | ClauseKind::Context(e) | ClauseKind::ContextEverywhere(e) =
            &c.kind
        {
            e.flatten_and(&mut conjuncts);
        }
    }
    conjuncts
}

/// The expressions conjuncts `name == e` or `e == name` equate the integer input `name`
/// with, in order (the caller takes the first it can evaluate: `a.length == N` names `N`
/// too, but says nothing the caller can compute first).
pub fn fixed_values<'e>(conjuncts: &[&'e Expr], name: &str) -> Vec<&'e Expr> {
    conjuncts
        .iter()
        .filter_map(|c| match &c.kind {
            ExprKind::Binary {
                op: BinaryOp::Eq,
                lhs,
                rhs,
            } if is_name(lhs, name) => Some(&**rhs),
            ExprKind::Binary {
                op: BinaryOp::Eq,
                lhs,
                rhs,
            } if is_name(rhs, name) => Some(&**lhs),
            _ => None,
        })
        .collect()
}

/// The rows and columns the precondition gives the matrix `name`: `\matrix(name, r, c)`.
pub fn matrix_dims<'e>(conjuncts: &[&'e Expr], name: &str) -> Option<(&'e Expr, &'e Expr)> {
    conjuncts.iter().find_map(|c| match &c.kind {
        ExprKind::Builtin {
            op: Builtin::Matrix,
            args,
        } if args.len() == 3 && is_name(&args[0], name) => Some((&args[1], &args[2])),
        _ => None,
    })
}

/// splitmix64 (Steele, Lea, Flood): small, seeded, and good enough for test inputs; no
/// dependency.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

/// The length the precondition gives `name`: `name.length == e`, `e == name.length`,
/// `\array(name, e)`, `|name| == e`.
pub fn length_of(conjuncts: &[&Expr], name: &str) -> Option<Expr> {
    let is_len = |e: &Expr| match &e.kind {
        ExprKind::Field { base, name: f } => f.name == "length" && is_name(base, name),
        ExprKind::Length(inner) => is_name(inner, name),
        _ => false,
    };
    conjuncts.iter().find_map(|c| match &c.kind {
        ExprKind::Binary {
            op: BinaryOp::Eq,
            lhs,
            rhs,
        } if is_len(lhs) => Some((**rhs).clone()),
        ExprKind::Binary {
            op: BinaryOp::Eq,
            lhs,
            rhs,
        } if is_len(rhs) => Some((**lhs).clone()),
        ExprKind::Builtin {
            op: Builtin::Array,
            args,
        } if args.len() == 2 && is_name(&args[0], name) => Some(args[1].clone()),
        _ => None,
    })
}

pub fn is_name(e: &Expr, name: &str) -> bool {
    matches!(&e.kind, ExprKind::Name(id) if id.name == name)
}

/// A length expression over the integer inputs: `value_of` gives a name's value, and the
/// length of array `a` under the name `a.length` (which no variable can have).
pub fn int_value(e: &Expr, value_of: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
    match &e.kind {
        ExprKind::IntLit(n) => i128::try_from(n).ok(),
        ExprKind::Name(id) => value_of(&id.name),
        ExprKind::Field { base, name } if name.name == "length" => match &base.kind {
            ExprKind::Name(a) => value_of(&format!("{}.length", a.name)),
            _ => None,
        },
        ExprKind::Unary {
            op: UnaryOp::Neg,
            operand,
        } => int_value(operand, value_of)?.checked_neg(),
        ExprKind::Binary { op, lhs, rhs } => {
            let (a, b) = (int_value(lhs, value_of)?, int_value(rhs, value_of)?);
            match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Sub => a.checked_sub(b),
                BinaryOp::Mul => a.checked_mul(b),
                BinaryOp::Div if b != 0 => a.checked_div(b),
                BinaryOp::Mod if b != 0 => a.checked_rem(b),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::int_value;

    /// Names and array lengths (`a.length`, asked for by that name) over `+ - * / %`; anything
    /// else, an unknown name or an overflow is no value.
    #[test]
    fn int_values_read_names_and_lengths() {
        let value = |src: &str| {
            let program = crate::syntax::parse(&format!("pure int f(int n, int[] a) = {src};"))
                .expect("parses")
                .program;
            let crate::syntax::Item::Member(member) = &program.items[0] else {
                panic!("a function")
            };
            let crate::syntax::MemberKind::Method(m) = &member.kind else {
                panic!("a function")
            };
            let crate::syntax::MethodBody::Expr(e) = &m.body else {
                panic!("an expression body")
            };
            int_value(e, &|name| match name {
                "n" => Some(7),
                "a.length" => Some(10),
                _ => None,
            })
        };
        assert_eq!(value("(n + 1) * 2 - a.length"), Some(6));
        assert_eq!(value("a.length / 3 + a.length % 3"), Some(4));
        assert_eq!(value("m + 1"), None);
        assert_eq!(value("n / 0"), None);
        assert_eq!(value("n < 2 ? 1 : 0"), None);
    }
}
