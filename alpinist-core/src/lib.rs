//! alpinist-core: annotation-aware optimisation and verification of GPU kernels written in PVL.
//!
//! See `ARCHITECTURE.md` at the repository root for the bird's-eye view.

pub mod cache;
pub mod check;
pub mod differential;
pub mod inputs;
pub mod interp;
pub mod models;
pub mod opencl;
pub mod pipeline;
pub mod report;
pub mod rust;
pub mod syntax;
pub mod transform;
pub mod verify;
pub mod witness;
