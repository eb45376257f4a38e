//! Runs a kernel written in Rust on an OpenCL device: what the launcher of
//! `#[alpinist::kernel]` (`<name>::launch`) calls. The kernel's `PVL` (after its optimisations,
//! as verified) goes through the same code generation and device run as `alpinist run`: one
//! kernel per par block the host code reaches, the host code on the interpreter
//! ([`super::device_run::DeviceLauncher`]), integers as OpenCL `int`.

use super::codegen::{generate_method, IntWidth};
use super::device_run::DeviceLauncher;
use super::platform::DeviceInfo;
pub use crate::interp::call::{Arg, CallError, Ran};
use crate::interp::{call, Limits, Memory};

/// Why a launch did not run.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The kernel's PVL does not parse or generate (a bug: it was verified).
    #[error("the kernel has no OpenCL form: {0}")]
    Generate(String),
    /// The device's runtime or compiler.
    #[error("{0}")]
    Device(String),
    /// The run: the host code on the interpreter, or a launch.
    #[error("the run failed: {0}")]
    Run(String),
    /// What the run gave back.
    #[error(transparent)]
    Call(#[from] CallError),
}

/// Runs method `method` of the program `pvl` on `device` with `args`. The program is
/// generated and compiled at each call.
pub fn run_on_device(
    pvl: &str,
    method: &str,
    device: &DeviceInfo,
    args: Vec<Arg>,
) -> Result<Ran, LaunchError> {
    let program = crate::syntax::parse(pvl)
        .map_err(|_| LaunchError::Generate("its PVL does not parse".into()))?
        .program;
    let kernels = generate_method(&program, method, IntWidth::Bits32)
        .map_err(|e| LaunchError::Generate(e.to_string()))?;
    let mut memory = Memory::new();
    let values = call::values(args, &mut memory);
    let mut launcher =
        DeviceLauncher::new(&kernels, device).map_err(|e| LaunchError::Device(e.to_string()))?;
    // The interpreter runs the host code only; the cells are the caller's slices, already
    // in memory.
    let limits = Limits {
        max_cells: u64::MAX,
        ..Limits::default().beyond_the_interpreter()
    };
    let out = launcher
        .run(&program, &values, memory, &limits)
        .map_err(|e| LaunchError::Run(e.to_string()))?;
    Ok(Ran::new(&values, &out.memory, out.result))
}
