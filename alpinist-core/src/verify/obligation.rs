//! What the checker proves and reports: obligation kinds (in VerCors' words), statuses, and the
//! per-method and per-file results.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use z3::ast::Bool;

use crate::syntax::Span;

/// The kind of a proof obligation; its text is how VerCors words the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObligationKind {
    AssertFailed,
    PostconditionFailed,
    PreconditionFailed,
    FunctionPreconditionFailed,
    LoopInvariantNotEstablished,
    LoopInvariantNotMaintained,
    ParPreconditionFailed,
    ParPostconditionFailed,
    BarrierPreconditionFailed,
    BarrierNotJustified,
    InsufficientPermission,
    InsufficientWritePermission,
    NullDereference,
    IndexNegative,
    IndexTooLarge,
    DivisionByZero,
    NegativePermission,
    NotInjective,
    RecursionMayNotTerminate,
    BarrierNotUniform,
    PreconditionUnsatisfiable,
    FoldFailed,
    UnfoldFailed,
    /// `invariant name(R) { .. }`: R may not hold where the block starts.
    InvariantNotEstablished,
    /// `atomic(name) { .. }`: the invariant may not hold again where the atomic block ends.
    InvariantNotMaintained,
    /// `--int32`: an integer operation of executable code may leave the 32-bit range.
    Int32Overflow,
    /// `--int32`: an operand of `/` or `%` in executable code may be negative.
    NegativeDivOperand,
    /// A value bound to a `frac` (`zfrac`) name — a `\let`, a local, a predicate argument —
    /// may lie outside 0 < v ≤ 1 (0 ≤ v ≤ 1).
    FractionOutOfRange,
    /// The routine's verification stopped before its end (only ever `unknown`): Z3 ran out of
    /// the memory `--memory` allows while terms were built.
    RoutineUnfinished,
    /// Ghost code (a `ghost` statement, and every routine it calls, transitively) may not
    /// terminate: a lemma that never returns could "prove" any postcondition.
    GhostMayNotTerminate,
    /// A `decreases` measure may be negative where it must decrease.
    DecreasesNotBounded,
    /// A `decreases` measure may not be strictly smaller at a recursive call or at the end of a
    /// loop iteration.
    DecreasesFailed,
    /// `fork t`: the thread may not be idle (it may be running: forked and not joined).
    ForkNotIdle,
    /// `join t`: the thread may not be running (not forked, or joined already).
    JoinNotRunning,
    /// `lock o` where the lock's invariant may never have been handed to it (`commit o`).
    LockNotCommitted,
    /// `lock o` where the lock may be held already (a second `lock` is not re-entrant).
    LockMayBeHeld,
    /// `unlock o`, `wait o`, `notify o` without `held(o)`.
    LockNotHeld,
    /// The lock invariant may not hold where it is handed to the lock: at `commit`, at the end
    /// of a (1.x) constructor, at `unlock` and `wait`.
    LockInvariantFailed,
    /// `o.get`, `getOption(o)`: the option may be `None`.
    OptionMayBeNone,
    /// An operation of an unsigned Rust type (`usize`, `u32`) in a kernel written in Rust may
    /// go below zero (Rust panics, or wraps in a release build).
    UnsignedUnderflow,
    /// `m[k]`, `getFromMap(m, k)`: the key may not be in the map.
    MapKeyAbsent,
    /// `refute e`: the checker proves `e` where it must not be able to (with `refute false`:
    /// the point is unreachable). Verified only where Z3 finds a state in which `e` is false.
    RefuteFailed,
    /// `exhale e`: a fact of `e` may not hold (its permissions fail as
    /// `InsufficientPermission`).
    ExhaleFailed,
}

impl ObligationKind {
    /// The stable diagnostic code of a failure of this kind (E06xx).
    pub fn code(self) -> &'static str {
        use ObligationKind::*;
        match self {
            AssertFailed => "E0601",
            PostconditionFailed => "E0602",
            PreconditionFailed => "E0603",
            FunctionPreconditionFailed => "E0604",
            LoopInvariantNotEstablished => "E0605",
            LoopInvariantNotMaintained => "E0606",
            ParPreconditionFailed => "E0607",
            ParPostconditionFailed => "E0608",
            BarrierPreconditionFailed => "E0609",
            BarrierNotJustified => "E0610",
            InsufficientPermission => "E0611",
            InsufficientWritePermission => "E0612",
            NullDereference => "E0613",
            IndexNegative => "E0614",
            IndexTooLarge => "E0615",
            DivisionByZero => "E0616",
            NegativePermission => "E0617",
            NotInjective => "E0618",
            RecursionMayNotTerminate => "E0619",
            BarrierNotUniform => "E0621",
            PreconditionUnsatisfiable => "E0622",
            Int32Overflow => "E0623",
            NegativeDivOperand => "E0624",
            FoldFailed => "E0625",
            UnfoldFailed => "E0626",
            InvariantNotEstablished => "E0627",
            InvariantNotMaintained => "E0628",
            FractionOutOfRange => "E0629",
            RoutineUnfinished => "E0633",
            GhostMayNotTerminate => "E0632",
            DecreasesNotBounded => "E0630",
            DecreasesFailed => "E0631",
            ForkNotIdle => "E0634",
            JoinNotRunning => "E0635",
            LockNotCommitted => "E0636",
            LockMayBeHeld => "E0637",
            LockNotHeld => "E0638",
            LockInvariantFailed => "E0639",
            OptionMayBeNone => "E0640",
            UnsignedUnderflow => "E0641",
            MapKeyAbsent => "E0642",
            RefuteFailed => "E0643",
            ExhaleFailed => "E0644",
        }
    }

    pub fn describe(self) -> &'static str {
        use ObligationKind::*;
        match self {
            AssertFailed => "assertion may not hold",
            PostconditionFailed => "postcondition may not hold",
            PreconditionFailed => "precondition of the call may not hold",
            FunctionPreconditionFailed => "precondition of the function application may not hold",
            LoopInvariantNotEstablished => "loop invariant may not hold on entry",
            LoopInvariantNotMaintained => "loop invariant may not be maintained",
            ParPreconditionFailed => "precondition of the par block may not hold",
            ParPostconditionFailed => "postcondition of the par block may not hold",
            BarrierPreconditionFailed => "barrier precondition may not hold",
            BarrierNotJustified => {
                "barrier postcondition is not justified by the preconditions of all threads"
            }
            InsufficientPermission => "there may be insufficient permission to access this",
            InsufficientWritePermission => {
                "there may be insufficient permission to write this (write permission needed)"
            }
            NullDereference => "the reference may be null",
            IndexNegative => "the index may be negative",
            IndexTooLarge => "the index may exceed the length of the array",
            DivisionByZero => "the divisor may be zero",
            NegativePermission => "the permission amount may be negative",
            NotInjective => {
                "the quantified permission may not be injective: two values of the bound \
                 variables may name the same location"
            }
            PreconditionUnsatisfiable => {
                "the precondition is unsatisfiable, so the method verifies vacuously (write \
                 `requires false;` if that is intended)"
            }
            BarrierNotUniform => {
                "the barrier may not be reached by all threads of its block alike (a guard or \
                 a local it depends on is derived from a thread id or a heap read)"
            }
            Int32Overflow => "the integer operation may overflow 32 bits (OpenCL `int`)",
            NegativeDivOperand => {
                "an operand of `/` or `%` may be negative (C truncates where the checker's \
                 semantics does not)"
            }
            FoldFailed => "the predicate's body may not hold where it is folded",
            UnfoldFailed => "the predicate instance may not be held where it is unfolded",
            InvariantNotEstablished => "the invariant may not hold where its block starts",
            InvariantNotMaintained => "the invariant may not be maintained by the atomic block",
            FractionOutOfRange => {
                "the value may lie outside the range of its fraction type (`frac`: 0 < v <= 1, \
                 `zfrac`: 0 <= v <= 1)"
            }
            RoutineUnfinished => "the verification of this routine did not finish",
            GhostMayNotTerminate => {
                "the ghost code may not terminate, so what follows it could rest on a lemma \
                 that never returns"
            }
            DecreasesNotBounded => "the termination measure may be negative where it must decrease",
            DecreasesFailed => "the termination measure may not decrease",
            ForkNotIdle => {
                "the thread may not be idle: it may have been forked and not joined (`idle(t)` \
                 is needed)"
            }
            JoinNotRunning => {
                "the thread may not be running: it may not have been forked, or been joined \
                 already (`running(t)` is needed)"
            }
            LockNotCommitted => {
                "the lock may not be committed: its invariant may never have been established \
                 (`commit` it first; `committed(o)` is needed)"
            }
            LockMayBeHeld => "the lock may be held already (locks are not re-entrant)",
            LockNotHeld => "the lock may not be held here (`held(o)` is needed)",
            LockInvariantFailed => "the lock invariant may not hold where it is handed to the lock",
            OptionMayBeNone => "the option may be `None` (`get` needs `Some`)",
            MapKeyAbsent => "the key may not be in the map",
            ExhaleFailed => "the exhaled assertion may not hold",
            RefuteFailed => {
                "the refuted assertion holds here: the checker proves it (so the point may be \
                 unreachable, or the refutation is wrong)"
            }
            UnsignedUnderflow => {
                "the unsigned integer operation may go below zero (Rust `usize`/`u32` underflow)"
            }
            RecursionMayNotTerminate => {
                "the recursion may not terminate: no integer parameter, difference of two, \
                 sequence length, or distance of an integer parameter to an array's or \
                 sequence's length decreases at every recursive call while staying non-negative"
            }
        }
    }
}

impl fmt::Display for ObligationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// One goal to prove in the current state, closed over its quantifier binders.
#[derive(Clone, Debug)]
pub struct Check {
    pub goal: Bool,
    pub kind: ObligationKind,
    pub span: Span,
    /// More about a failure than the kind says (which operation, for `--int32`).
    pub note: Option<String>,
}

/// How an obligation ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Status {
    Verified,
    /// Z3's counterexample: values of the locals involved, as (name, value).
    Failed {
        model: Vec<(String, String)>,
    },
    /// Z3 gave up (never counted as verified).
    Unknown {
        reason: String,
    },
}

/// A checked obligation.
#[derive(Clone, Debug, Serialize)]
pub struct Obligation {
    pub kind: ObligationKind,
    pub span: Span,
    #[serde(flatten)]
    pub status: Status,
    #[serde(serialize_with = "millis")]
    pub time: Duration,
    /// More about a failure, when there is more to say than the kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

/// Something the verdict takes on trust.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trusted {
    pub what: String,
    pub span: Span,
}

/// A warning that does not change the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub message: String,
    pub span: Span,
}
