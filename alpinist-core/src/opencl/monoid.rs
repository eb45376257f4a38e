//! The monoids a generated kernel is compiled with: one source, several preludes. Plain Rust
//! (no OpenCL needed), so `alpinist emit-opencl` can print a compilable program without the
//! `opencl` feature.

use super::interval;

/// The monoid a run uses: its prelude defines `ELEM`, `IDENTITY` and `OP(a, b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Monoid {
    /// `uint` with wrapping addition.
    IntAdd,
    /// The interval monoid.
    Interval,
    /// The interval monoid with the operands swapped: the self-check.
    IntervalSwapped,
    /// Voigtländer-style baseline, first operator: saturating addition on {0, 1, 2}.
    Saturating012,
    /// Voigtländer-style baseline, second operator: "the last non-zero wins" on {0, 1, 2}.
    LastNonZero012,
}

impl Monoid {
    /// The `#define`s of `ELEM`, `IDENTITY` and `OP(a, b)` (and the interval monoid's
    /// helpers) that the generated source is compiled behind.
    pub fn prelude(self) -> String {
        match self {
            Monoid::IntAdd => {
                "#define ELEM uint\n#define IDENTITY 0u\n#define OP(a, b) ((a) + (b))\n".into()
            }
            Monoid::Interval => interval::OPENCL_PRELUDE.into(),
            Monoid::IntervalSwapped => interval::OPENCL_PRELUDE.replace(
                "#define OP(a, b) alp_interval_op((a), (b))",
                "#define OP(a, b) alp_interval_op((b), (a))",
            ),
            Monoid::Saturating012 => "#define ELEM uint\n#define IDENTITY 0u\n\
                 #define OP(a, b) min((a) + (b), 2u)\n"
                .into(),
            Monoid::LastNonZero012 => "#define ELEM uint\n#define IDENTITY 0u\n\
                 #define OP(a, b) ((b) == 0u ? (a) : (b))\n"
                .into(),
        }
    }

    /// The host's operator for the `uint` monoids.
    #[cfg_attr(not(feature = "opencl"), allow(dead_code))]
    pub(crate) fn host_op(self) -> fn(u32, u32) -> u32 {
        match self {
            Monoid::Saturating012 => |a, b| (a + b).min(2),
            Monoid::LastNonZero012 => |a, b| if b == 0 { a } else { b },
            _ => u32::wrapping_add,
        }
    }
}
