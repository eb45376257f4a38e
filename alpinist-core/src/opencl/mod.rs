//! The OpenCL back end: code generation from IR kernels, the interval monoid, device listing,
//! and the host harness of the interval-of-summations test with its baselines. What needs an
//! OpenCL ICD ([`platform`], [`harness`]) is behind the cargo feature `opencl`; code
//! generation, the monoid and the verdict are plain Rust, so `verify --int32` can ask code
//! generation which operations are the scan operator's without OpenCL.
//!
//! - [`interval`] — the interval monoid packed in 64 bits (host implementation and the OpenCL
//!   prelude that mirrors it).
//! - [`monoid`] — the monoids a generated source is compiled with (its preludes) and their
//!   host operators.
//! - [`platform`] — platforms and devices, listed without panicking when there are none.
//! - [`codegen`] — IR kernel → OpenCL C with `ELEM`, `IDENTITY`, `OP(a, b)` as macros; refuses
//!   kernels that touch element values other than through the operator and the identity.
//! - [`device_run`] — runs a method on a device: the interpreter runs the host code and
//!   launches each par block's kernel ([`codegen::generate_method`]) with the launching
//!   scope's variables (`alpinist run`).
//! - [`harness`] — runs a generated kernel: integer addition on random input against a host
//!   scan, the interval test with a device-side check, the swapped-operand self-check, and the
//!   baselines (Voigtländer's 0-1-2 set, random inputs).
//! - [`throughput`] — the throughput benchmark's fast reduce-then-scan (a hand-written block
//!   scan, not the verified path: no verdict uses it) and the device-to-device copy it is
//!   measured against.
//! - [`verdict`] — combines the checker's half (race freedom and 32-bit arithmetic, proved by
//!   `verify --int32`) with the interval half.
//!
//! Invariants:
//! - One generated source per kernel; every monoid compiles that same source behind its own
//!   prelude (reports carry [`codegen::Kernel::source_hash`]).
//! - Nothing here panics on a missing platform or device: `ocl`'s `Platform::default()` and
//!   `Platform::list()` are never called.
//! - A pass is never reported without both halves: [`verdict::Verdict::Pass`] needs
//!   [`verdict::RaceFreedom::Proved`].

pub mod codegen;
#[cfg(feature = "opencl")]
pub mod device_run;
#[cfg(feature = "opencl")]
pub mod harness;
pub mod interval;
#[cfg(feature = "opencl")]
pub mod kernel_run;
pub mod monoid;
#[cfg(feature = "opencl")]
pub mod platform;
#[cfg(feature = "opencl")]
pub mod throughput;
pub mod verdict;

/// The OpenCL host API alpinist is built on, for the buffers of a kernel's `OnDevice`
/// launcher (`#[alpinist::kernel]`).
#[cfg(feature = "opencl")]
pub use ocl;

/// An error reported by the OpenCL runtime.
#[cfg(feature = "opencl")]
#[derive(Debug, thiserror::Error)]
#[error("OpenCL error: {0}")]
pub struct OpenClError(pub String);

#[cfg(feature = "opencl")]
impl From<ocl::Error> for OpenClError {
    fn from(e: ocl::Error) -> Self {
        OpenClError(e.to_string())
    }
}

#[cfg(feature = "opencl")]
impl From<ocl::OclCoreError> for OpenClError {
    fn from(e: ocl::OclCoreError) -> Self {
        OpenClError(e.to_string())
    }
}
