//! `verify --int32`: the integer arithmetic of executable code proved free of 32-bit overflow
//! and of negative `/` `%` operands.
//!
//! PVL integers are unbounded; OpenCL's `int` has 32 bits, and C's `/` `%` truncate where the
//! checker's semantics (see `expr.rs`) only agree with C for non-negative operands. In this
//! mode every integer `+ - * / %`, unary minus, `++`/`--` and integer literal evaluated in
//! *executable* code gets an extra obligation: the result lies in [-2^31, 2^31 − 1]
//! ([`ObligationKind::Int32Overflow`], E0623), and for `/` `%` both operands are ≥ 0
//! ([`ObligationKind::NegativeDivOperand`], E0624).
//!
//! # What is executable
//! Statements of executable routines, outside `ghost`: right-hand sides, assignment targets
//! (their index arithmetic), conditions of `if` and loops, `return` values, call arguments,
//! par iterator bounds, array sizes — and the body of every pure function such code calls,
//! checked *at the call* with the actual arguments (as the generated C function runs it).
//! Contracts, invariants, barrier clauses, `assert`, `assume` and ghost statements are not.
//! A non-pure routine is executable unless it is called and every call of it outside its own
//! body is a `ghost` statement (a lemma). Pure functions are executable only through their
//! calls; a recursive one called from executable code is unsupported (C has no recursion).
//!
//! # Assumptions
//! The `int` parameters of an executable routine that nothing in the program calls (a kernel
//! entry: the host passes a C `int`) are assumed to lie in the 32-bit range. Nothing else is
//! assumed: heap values and the parameters of called routines carry no range.
//!
//! # Exempt operations
//! [`Int32::exempt`] names, by span, the `+` that the OpenCL code generator turns into the scan
//! operator `OP(a, b)` (element values, which run in the monoid's own type, 64-bit interval
//! words included): for those no obligation is made. Code generation computes the set
//! (`opencl::codegen::Kernel::element_ops`), so exactly the operations it emits as `OP` are
//! exempt. Two distinct `+` nodes never share a span in parsed code; nodes a transformation
//! copies keep the span *and* the operands of their original.

use std::collections::BTreeSet;

use z3::ast::{Bool, Int};

use crate::syntax::{ExprKind, MethodBody, Span, StmtKind};

use super::program::ProgramInfo;

/// The smallest 32-bit `int`.
pub const INT32_MIN: i64 = i32::MIN as i64;
/// The largest 32-bit `int`.
pub const INT32_MAX: i64 = i32::MAX as i64;

/// The `--int32` mode: what is exempt from the 32-bit obligations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Int32 {
    /// Spans of the `+` operations that are not checked (the scan operator's element
    /// combinations, see the module docs).
    pub exempt: BTreeSet<Span>,
    /// Spans of the operations of an unsigned Rust type (`usize`, `u32`: kernels written in
    /// Rust, `crate::rust`): besides the 32-bit range, their result must be ≥ 0
    /// ([`ObligationKind::UnsignedUnderflow`](super::ObligationKind::UnsignedUnderflow)),
    /// since Rust panics (or wraps) where the checker's integers would go negative.
    pub unsigned: BTreeSet<Span>,
}

impl Int32 {
    /// Every operation checked, none exempt.
    pub fn all() -> Int32 {
        Int32::default()
    }
}

/// The mode, resolved against one program: which routines are executable, which are entries.
#[derive(Debug)]
pub(super) struct Plan {
    pub mode: Int32,
    /// Non-pure routines whose statements are executable code.
    pub executable: BTreeSet<String>,
    /// Executable routines nothing calls: their `int` parameters are 32-bit values.
    pub entries: BTreeSet<String>,
}

impl Plan {
    pub fn new(info: &ProgramInfo<'_>, mode: &Int32) -> Plan {
        // name → (called from executable code elsewhere, called at all elsewhere)
        let mut called: BTreeSet<String> = BTreeSet::new();
        let mut called_in_code: BTreeSet<String> = BTreeSet::new();
        for routine in &info.order {
            let MethodBody::Block(body) = routine.body() else {
                continue;
            };
            let own = &routine.method.name.name;
            let mut ghost_calls: Vec<*const crate::syntax::Stmt> = Vec::new();
            for s in &body.stmts {
                s.visit(&mut |s| {
                    if let StmtKind::Ghost(inner) = &s.kind {
                        ghost_calls.push(&**inner as *const _);
                    }
                    let ghost = ghost_calls.contains(&(s as *const _));
                    let mut rhs = Vec::new();
                    match &s.kind {
                        StmtKind::Expr(e) | StmtKind::Assign { value: e, .. } => rhs.push(e),
                        StmtKind::LocalDecl { vars, .. } => {
                            rhs.extend(vars.iter().filter_map(|v| v.init.as_ref()))
                        }
                        StmtKind::Return(Some(e)) => rhs.push(e),
                        _ => {}
                    }
                    for e in rhs {
                        if let ExprKind::Call { name, .. } = &e.kind {
                            if &name.name == own {
                                continue;
                            }
                            called.insert(name.name.clone());
                            if !ghost {
                                called_in_code.insert(name.name.clone());
                            }
                        }
                    }
                });
            }
        }
        let mut executable = BTreeSet::new();
        let mut entries = BTreeSet::new();
        for routine in &info.order {
            if routine.is_pure() {
                continue;
            }
            let name = &routine.method.name.name;
            if !called.contains(name) {
                entries.insert(name.clone());
                executable.insert(name.clone());
            } else if called_in_code.contains(name) {
                executable.insert(name.clone());
            }
        }
        Plan {
            mode: mode.clone(),
            executable,
            entries,
        }
    }
}

/// `INT32_MIN <= i <= INT32_MAX`.
pub(super) fn in_range(i: &Int) -> Bool {
    Bool::and(&[
        i.ge(Int::from_i64(INT32_MIN)),
        i.le(Int::from_i64(INT32_MAX)),
    ])
}

/// Whether a literal fits in 32 bits.
pub(super) fn literal_fits(n: &num_bigint::BigUint) -> bool {
    i32::try_from(n).is_ok()
}
