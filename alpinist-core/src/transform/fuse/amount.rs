//! Permission amounts for fusion's accounting: `num/den + reads·ε + Σ coef·p`, where `ε`
//! stands for `read` (smaller than every positive fraction) and each `p` for a fraction the
//! program names (a `frac` parameter): non-negative, otherwise unknown. Amounts are compared
//! only where the difference's sign is certain; elsewhere the caller refuses or assumes the
//! worst (a named share may be a whole permission).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use crate::syntax::{BinaryOp, Expr, ExprKind, PermLit};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Amount {
    num: i128,
    den: i128,
    reads: i64,
    /// Named fractions with their (non-zero) coefficients.
    named: BTreeMap<String, i64>,
}

impl Amount {
    pub(super) fn zero() -> Amount {
        Amount::new(0, 1, 0)
    }

    fn whole() -> Amount {
        Amount::new(1, 1, 0)
    }

    fn new(num: i128, den: i128, reads: i64) -> Amount {
        let g = gcd(num.abs(), den.abs()).max(1);
        let sign = if den < 0 { -1 } else { 1 };
        Amount {
            num: sign * num / g,
            den: sign * den / g,
            reads,
            named: BTreeMap::new(),
        }
    }

    /// The amount `e` denotes: a literal fraction (`write`, `read`, `1\2`, `1`) or a name.
    pub(super) fn of(e: &Expr) -> Option<Amount> {
        let int = |e: &Expr| match &e.kind {
            ExprKind::IntLit(n) => i128::try_from(n).ok(),
            _ => None,
        };
        match &e.kind {
            ExprKind::PermLit(PermLit::Write) => Some(Amount::whole()),
            ExprKind::PermLit(PermLit::Read) => Some(Amount::new(0, 1, 1)),
            ExprKind::PermLit(PermLit::None) => Some(Amount::zero()),
            ExprKind::IntLit(_) => Some(Amount::new(int(e)?, 1, 0)),
            ExprKind::Binary {
                op: BinaryOp::FracDiv | BinaryOp::Div,
                lhs,
                rhs,
            } => {
                let (n, d) = (int(lhs)?, int(rhs)?);
                (d > 0).then(|| Amount::new(n, d, 0))
            }
            ExprKind::Name(id) => {
                let mut out = Amount::zero();
                out.named.insert(id.name.clone(), 1);
                Some(out)
            }
            _ => None,
        }
    }

    pub(super) fn add(&self, o: &Amount) -> Amount {
        let mut out = Amount::new(
            self.num * o.den + o.num * self.den,
            self.den * o.den,
            self.reads + o.reads,
        );
        out.named = self.named.clone();
        for (p, c) in &o.named {
            *out.named.entry(p.clone()).or_insert(0) += c;
        }
        out.named.retain(|_, c| *c != 0);
        out
    }

    pub(super) fn sub(&self, o: &Amount) -> Amount {
        let mut neg = Amount::new(-o.num, o.den, -o.reads);
        neg.named = o.named.iter().map(|(p, c)| (p.clone(), -c)).collect();
        self.add(&neg)
    }

    /// The sign where it is certain: the named fractions are non-negative, so a sum with
    /// non-negative coefficients and a non-negative rest is at least zero ("greater" here
    /// means "greater or equal, not identically zero").
    fn sign(&self) -> Option<Ordering> {
        let rest = self.num.cmp(&0).then(self.reads.cmp(&0));
        let all = |o: Ordering| self.named.values().all(|c| c.cmp(&0) == o);
        match rest {
            Ordering::Equal if self.named.is_empty() => Some(Ordering::Equal),
            Ordering::Equal | Ordering::Greater if all(Ordering::Greater) => {
                Some(Ordering::Greater)
            }
            Ordering::Equal | Ordering::Less if all(Ordering::Less) => Some(Ordering::Less),
            _ => None,
        }
    }

    /// `self` against `o`, where certain.
    pub(super) fn compare(&self, o: &Amount) -> Option<Ordering> {
        self.sub(o).sign()
    }

    /// Some share, possibly (a named fraction may be zero: it still counts, which costs at most
    /// a `Perm(l, p)` that holds nothing).
    pub(super) fn is_positive(&self) -> bool {
        self.sign() == Some(Ordering::Greater)
    }

    /// It may be more than a whole permission (where uncertain: yes).
    pub(super) fn may_exceed_whole(&self) -> bool {
        !matches!(
            self.compare(&Amount::whole()),
            Some(Ordering::Less | Ordering::Equal)
        )
    }

    /// It may be a whole permission, so the thread may write (a named share may be one).
    pub(super) fn writes(&self) -> bool {
        !self.named.is_empty() || self.num >= self.den
    }

    /// As a PVL fraction expression for Z3 (`1\\2 + p`, `0\\1 - p`), if it has no `read`.
    pub(super) fn pvl(&self) -> Option<String> {
        if self.reads != 0 {
            return None;
        }
        let mut out = format!("{}\\{}", self.num, self.den);
        if self.num < 0 {
            out = format!("(0\\1 - {}\\{})", -self.num, self.den);
        }
        for (p, c) in &self.named {
            let term = match c.abs() {
                1 => p.clone(),
                k => format!("{k} * {p}"),
            };
            out = format!("{out} {} {term}", if *c > 0 { "+" } else { "-" });
        }
        Some(out)
    }

    /// As PVL, if it can be written there.
    pub(super) fn text(&self) -> Option<String> {
        if !self.named.is_empty() {
            return match (self.num, self.reads, self.named.iter().next()) {
                (0, 0, Some((p, 1))) if self.named.len() == 1 => Some(p.clone()),
                _ => None,
            };
        }
        match (self.num, self.den, self.reads) {
            (0, _, 1) => Some("read".into()),
            (n, d, 0) if n == d => Some("write".into()),
            (n, 1, 0) if n > 0 => Some(n.to_string()),
            (n, d, 0) if n > 0 => Some(format!("{n}\\{d}")),
            _ => None,
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(t) = self.text() {
            return write!(f, "{t}");
        }
        write!(f, "{}\\{}", self.num, self.den)?;
        if self.reads != 0 {
            write!(f, " + {} read", self.reads)?;
        }
        for (p, c) in &self.named {
            write!(f, " + {c} * {p}")?;
        }
        Ok(())
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(text: &str) -> Amount {
        Amount::of(&crate::transform::parse_expr(text).unwrap()).unwrap()
    }

    #[test]
    fn literal_shares_compare_and_print() {
        assert_eq!(
            amount("1\\2").compare(&amount("1\\3")),
            Some(Ordering::Greater)
        );
        assert_eq!(
            amount("read").compare(&amount("1\\4")),
            Some(Ordering::Less)
        );
        assert_eq!(
            amount("1\\2").add(&amount("1\\2")).text().as_deref(),
            Some("write")
        );
        assert_eq!(
            amount("5\\6").sub(&amount("1\\3")).text().as_deref(),
            Some("1\\2")
        );
        assert!(amount("1\\2").add(&amount("read")).text().is_none());
        assert!(!amount("write").may_exceed_whole());
        assert!(amount("write").add(&amount("read")).may_exceed_whole());
    }

    #[test]
    fn named_shares_compare_only_where_certain() {
        let p = amount("p");
        assert_eq!(p.compare(&p), Some(Ordering::Equal));
        assert_eq!(p.compare(&Amount::zero()), Some(Ordering::Greater));
        assert_eq!(p.add(&amount("1\\2")).compare(&p), Some(Ordering::Greater));
        // p against 1\2, or against q: either may be larger.
        assert_eq!(p.compare(&amount("1\\2")), None);
        assert_eq!(p.compare(&amount("q")), None);
        assert!(p.writes() && p.may_exceed_whole() && p.is_positive());
        assert_eq!(p.text().as_deref(), Some("p"));
        assert_eq!(p.sub(&p), Amount::zero());
        assert!(p.add(&p).text().is_none());
        assert_eq!(amount("1\\2").sub(&p).pvl().as_deref(), Some("1\\2 - p"));
        assert_eq!(Amount::zero().sub(&p).pvl().as_deref(), Some("0\\1 - p"));
        assert_eq!(amount("read").pvl(), None);
    }
}
