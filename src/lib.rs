//! The umbrella package: `alpinist` re-exports [`alpinist_core`], and is what a crate of kernels
//! written in Rust depends on: `#[alpinist::kernel]`, `alpinist::include_pvl!` and [`prelude`].
pub use alpinist_core::*;

pub use alpinist_core::rust::KernelVerdict;
pub use alpinist_macros::{
    context, context_everywhere, decreases, ensures, include_pvl, kernel, lemma, module, pure,
    requires,
};

/// What a kernel's body uses. After `#[alpinist::kernel]` has consumed its helpers these are
/// ordinary items that the CPU function calls (`ghost!` code it drops), so a kernel reads as
/// Rust to rust-analyzer and to a build with `ALPINIST_VERIFY=0`.
pub mod prelude {
    pub use crate::{
        context, context_everywhere, decreases, ensures, ghost, kernel, lemma, module, pure,
        requires,
    };

    /// The threads of a par block: `for tid in par(0..n) { .. }`. On the CPU they run one after
    /// another (race freedom, proved, makes that equal to every interleaving).
    pub fn par<T>(range: core::ops::Range<T>) -> core::ops::Range<T> {
        range
    }

    /// A work-group barrier, `#[barrier(..)] barrier();` inside a par block.
    pub fn barrier() {}
}

/// Ghost code: verified, never run.
#[macro_export]
macro_rules! ghost {
    ($($code:tt)*) => {};
}

/// What `#[alpinist::kernel]` wraps its OpenCL launcher in: the launcher where this package's
/// `opencl` feature is on, nothing where it is off. A macro of this crate rather than a
/// `#[cfg(feature = "opencl")]` in the expansion, which would test the *user's* crate's
/// features.
#[cfg(feature = "opencl")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_opencl {
    ($($item:tt)*) => { $($item)* };
}

/// See the `opencl` twin: without the feature, no launcher.
#[cfg(not(feature = "opencl"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_opencl {
    ($($item:tt)*) => {};
}
