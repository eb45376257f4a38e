//! Interpreter errors, with stable codes E07xx (never renumber, only add). Every error that
//! comes from the program carries the span where it happened; [`InterpError::BadCall`] is about
//! the caller's use of the API and has none.

use crate::syntax::Span;

/// How a location was touched, for race reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Read => "reads",
            Access::Write => "writes",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum InterpError {
    #[error(
        "data race on {location}: {first_thread} {first_access} it and {second_thread} {second_access} it between the same barriers"
    )]
    #[diagnostic(
        code(E0701),
        help("two threads touch the same location in one barrier interval, at least one writing")
    )]
    DataRace {
        /// `a[3]` style, with the array's reference number: `array#2[3]`.
        location: String,
        first_thread: String,
        first_access: Access,
        #[label("first access")]
        first_span: Span,
        second_thread: String,
        second_access: Access,
        /// The access that completed the race.
        #[label(primary, "conflicting access")]
        span: Span,
    },

    #[error("assertion failed")]
    #[diagnostic(code(E0702))]
    AssertFailed {
        /// The thread it failed in, empty in sequential code.
        thread: String,
        #[label("this assertion is false{thread}")]
        span: Span,
    },

    #[error("index {index} out of bounds for an array of length {len}")]
    #[diagnostic(code(E0703))]
    OutOfBounds {
        index: i128,
        len: usize,
        #[label("out of bounds")]
        span: Span,
    },

    #[error("null dereference")]
    #[diagnostic(code(E0704))]
    NullDereference {
        #[label("this is null")]
        span: Span,
    },

    #[error("division by zero")]
    #[diagnostic(code(E0705))]
    DivisionByZero {
        #[label("the divisor is 0")]
        span: Span,
    },

    #[error("integer overflow: the value does not fit in 128 bits")]
    #[diagnostic(
        code(E0706),
        help("the interpreter computes with i128 and refuses rather than wraps")
    )]
    Overflow {
        #[label("overflows")]
        span: Span,
    },

    #[error("step limit of {limit} exceeded")]
    #[diagnostic(
        code(E0707),
        help("the program may not terminate; raise `Limits::max_steps` if it is just long")
    )]
    StepLimit {
        limit: u64,
        #[label("still running here")]
        span: Span,
    },

    #[error("{what} limit of {limit} exceeded")]
    #[diagnostic(code(E0708))]
    ResourceLimit {
        /// `call depth`, `threads`, `memory cells`.
        what: &'static str,
        limit: u64,
        #[label("here")]
        span: Span,
    },

    #[error("divergent barrier: {reached} reached `barrier({label})` but {other}")]
    #[diagnostic(
        code(E0709),
        help("every thread of a par block must reach the same barriers in the same order")
    )]
    DivergentBarrier {
        label: String,
        reached: String,
        /// What the other thread did: `tid = 3 finished` or `tid = 3 waits at another barrier`.
        other: String,
        #[label("this barrier")]
        span: Span,
    },

    #[error("not supported by the interpreter: {what}")]
    #[diagnostic(code(E0710))]
    Unsupported {
        what: String,
        #[label("here")]
        span: Span,
    },

    #[error("`{name}` is read before it is assigned")]
    #[diagnostic(code(E0711))]
    Uninitialised {
        name: String,
        #[label("no value yet")]
        span: Span,
    },

    #[error("method `{method}` ended without returning a value")]
    #[diagnostic(code(E0712))]
    MissingReturn {
        method: String,
        #[label("declared here")]
        span: Span,
    },

    #[error("negative array size {size}")]
    #[diagnostic(code(E0713))]
    NegativeSize {
        size: i128,
        #[label("negative")]
        span: Span,
    },

    #[error("{0}")]
    #[diagnostic(code(E0714))]
    BadCall(String),

    #[error("unexpected {found} where {expected} is needed")]
    #[diagnostic(
        code(E0715),
        help("`check` rules this out: was the program type-checked before it was run?")
    )]
    TypeMismatch {
        expected: &'static str,
        found: &'static str,
        #[label("here")]
        span: Span,
    },

    /// Only with [`super::Limits::check_specs`]: a contract, loop invariant or permission the
    /// verifier must prove is false in this concrete run.
    #[error("{what} does not hold{thread}: {detail}")]
    #[diagnostic(code(E0716))]
    SpecFailed {
        what: Spec,
        detail: String,
        /// The thread it failed in, empty in sequential code.
        thread: String,
        #[label("{what}")]
        span: Span,
    },

    /// A [`super::Launcher`] could not run a par block (no kernel for it, an OpenCL error, a
    /// value beyond the device's integer type).
    #[error("the launch of this par block failed: {message}")]
    #[diagnostic(code(E0718))]
    Launch {
        message: String,
        #[label("launched here")]
        span: Span,
    },

    /// Only with [`super::Limits::check_specs`]: the run left the paths the verifier considers
    /// (an `assume` or the entry precondition is false here, or it cannot be decided; an inhale
    /// would hold more than a full permission). Nothing about the program follows from it.
    #[error("this run is not one the verifier considers: {reason}")]
    #[diagnostic(code(E0717))]
    Infeasible {
        reason: String,
        #[label("here")]
        span: Span,
    },
}

/// What a [`InterpError::SpecFailed`] is about; each is an obligation of the verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spec {
    /// A called method's precondition, at the call.
    Precondition,
    /// A pure function's precondition, at the application (not of `inline` functions, which
    /// are their bodies).
    FunctionPrecondition,
    /// A method's postcondition, at its end.
    Postcondition,
    /// A loop invariant where the loop starts.
    InvariantEstablished,
    /// A loop invariant after an iteration.
    InvariantMaintained,
    /// A par block's thread precondition, at the launch.
    ParPrecondition,
    /// A par block's thread postcondition, where the thread ends.
    ParPostcondition,
    /// A barrier's precondition, where a thread arrives.
    BarrierPrecondition,
    /// A barrier's postcondition, where the threads are released: not justified by what all
    /// threads brought.
    BarrierPostcondition,
    /// A read without permission.
    ReadPermission,
    /// A write without full permission.
    WritePermission,
}

impl std::fmt::Display for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Spec::Precondition => "the precondition of the call",
            Spec::FunctionPrecondition => "the precondition of the function",
            Spec::Postcondition => "the postcondition",
            Spec::InvariantEstablished => "the loop invariant where the loop starts",
            Spec::InvariantMaintained => "the loop invariant after an iteration",
            Spec::ParPrecondition => "the par block's precondition",
            Spec::ParPostcondition => "the par block's postcondition",
            Spec::BarrierPrecondition => "the barrier's precondition",
            Spec::BarrierPostcondition => "the barrier's postcondition",
            Spec::ReadPermission => "permission to read",
            Spec::WritePermission => "permission to write",
        })
    }
}

impl InterpError {
    /// Where it happened; `None` only for [`InterpError::BadCall`].
    pub fn span(&self) -> Option<Span> {
        use InterpError::*;
        match self {
            DataRace { span, .. }
            | AssertFailed { span, .. }
            | OutOfBounds { span, .. }
            | NullDereference { span }
            | DivisionByZero { span }
            | Overflow { span }
            | StepLimit { span, .. }
            | ResourceLimit { span, .. }
            | DivergentBarrier { span, .. }
            | Unsupported { span, .. }
            | Uninitialised { span, .. }
            | MissingReturn { span, .. }
            | NegativeSize { span, .. }
            | TypeMismatch { span, .. }
            | SpecFailed { span, .. }
            | Launch { span, .. }
            | Infeasible { span, .. } => Some(*span),
            BadCall(_) => None,
        }
    }

    /// Whether this is a failure of the program itself — an obligation the verifier must prove
    /// is false in this run — rather than a limit, something not modelled, or a run the
    /// verifier does not consider (those say nothing about the program).
    pub fn is_failure(&self) -> bool {
        use InterpError::*;
        matches!(
            self,
            DataRace { .. }
                | AssertFailed { .. }
                | OutOfBounds { .. }
                | NullDereference { .. }
                | DivisionByZero { .. }
                | DivergentBarrier { .. }
                | SpecFailed { .. }
        )
    }

    pub(crate) fn unsupported(what: impl Into<String>, span: Span) -> InterpError {
        InterpError::Unsupported {
            what: what.into(),
            span,
        }
    }
}
