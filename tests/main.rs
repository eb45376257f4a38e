//! The workspace's single integration-test binary (one binary links the tool once).

mod cache;
mod cli;
mod common;
mod diagnostics;
mod differential;
mod fuse;
mod int32;
mod linearise;
mod merge;
mod multi_file;
#[cfg(feature = "opencl")]
mod opencl;
mod optimise;
mod prefetch;
mod properties;
mod roundtrip;
mod rust_kernels;
mod tile;
mod verify;
mod witness;
