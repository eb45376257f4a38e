//! Runs a kernel written in Rust on an OpenCL device: what the launcher of
//! `#[alpinist::kernel]` (`<name>::launch`) calls. The kernel's `PVL` (after its optimisations,
//! as verified) goes through the same code generation and device run as `alpinist run`: one
//! kernel per par block the host code reaches, the host code on the interpreter
//! ([`super::device_run::DeviceLauncher`]), integers as OpenCL `int`.
//!
//! [`DeviceKernel`] is the other launcher (`<name>::OnDevice`): for a kernel whose method is
//! its par blocks alone, compiled once per queue, launched on buffers the caller keeps on the
//! device (no copies, no interpreter).

use super::codegen::{
    generate_method, DeviceOnly, HostVar, IntWidth, Launch, MethodKernels, ThreadShape,
};
use super::device_run::{
    dims, fit, group_work_size, local_memory_fits, within_limits, DeviceLauncher,
};
use super::platform::DeviceInfo;
use crate::inputs::int_value;
pub use crate::interp::call::{Arg, CallError, Ran};
use crate::interp::{call, Limits, Memory};
use crate::syntax::{print_expr, Expr};

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

/// An argument of [`DeviceKernel::enqueue`], in the method's parameter order (ghost
/// parameters left out).
#[derive(Clone, Copy, Debug)]
pub enum DeviceArg<'a> {
    Int(i128),
    Bool(bool),
    /// An `int[]` parameter: its cells stay in this buffer, of the kernel's queue's context.
    Ints(&'a ocl::Buffer<i32>),
}

/// The global work size of a launch, and its local one where it has one.
type WorkSize = (Vec<u64>, Option<Vec<u64>>);

/// A value an enqueue binds to a name of the method: an argument, or a scratch array.
#[derive(Clone, Copy, Debug)]
enum Bound<'a> {
    Int(i128),
    Bool(bool),
    /// A buffer and the array's length (a buffer has at least one cell, an array may not).
    Cells(&'a ocl::Buffer<i32>, usize),
    /// A scratch array in local memory: its length.
    Local(usize),
}

/// A kernel whose method is its par blocks alone ([`MethodKernels::device_only`]), compiled
/// once for one queue: [`DeviceKernel::enqueue`] launches each block in turn on buffers the
/// caller keeps on the device, with no copy and no host code between the launches. What the
/// `OnDevice` type of `#[alpinist::kernel]` wraps.
#[derive(Debug)]
pub struct DeviceKernel {
    kernels: MethodKernels,
    device_only: DeviceOnly,
    queue: ocl::Queue,
    program: ocl::Program,
    max_work_group_size: u64,
    /// The device's local memory in bytes (0: unknown).
    local_mem_bytes: u64,
}

impl DeviceKernel {
    /// Generates the OpenCL C of method `method` of the program `pvl` and compiles it for the
    /// device of `queue`.
    pub fn new(pvl: &str, method: &str, queue: &ocl::Queue) -> Result<Self, LaunchError> {
        let program = crate::syntax::parse(pvl)
            .map_err(|_| LaunchError::Generate("its PVL does not parse".into()))?
            .program;
        let kernels = generate_method(&program, method, IntWidth::Bits32)
            .map_err(|e| LaunchError::Generate(e.to_string()))?;
        let device_only = kernels.device_only.clone().ok_or_else(|| {
            LaunchError::Generate(format!(
                "`{method}` runs host code between its launches (or returns a value): run it \
                 with `launch`"
            ))
        })?;
        let device = queue.device();
        let device_error = |e: ocl::Error| LaunchError::Device(e.to_string());
        let max_work_group_size = device.max_wg_size().map_err(device_error)? as u64;
        let local_mem_bytes = super::platform::local_mem_bytes(&device).map_err(device_error)?;
        let compiled = ocl::Program::builder()
            .src(kernels.source.clone())
            .devices(device)
            .build(&queue.context())
            .map_err(|e| {
                LaunchError::Device(format!("the generated program does not compile: {e}"))
            })?;
        Ok(DeviceKernel {
            kernels,
            device_only,
            queue: queue.clone(),
            program: compiled,
            max_work_group_size,
            local_mem_bytes,
        })
    }

    /// Enqueues the method's launches on `args` (the method's parameters in order), in turn,
    /// and returns once they are enqueued: a read of a buffer on the same queue waits for them.
    /// The method's scratch arrays are new zero-filled buffers at each call (or local memory
    /// its threads zero, where one launch alone uses them: `MethodKernels::local_arrays`). An
    /// argument of the wrong kind or count, a value beyond 32 bits, or a launch larger than the
    /// device takes is an error, before anything is enqueued.
    pub fn enqueue(&self, args: &[DeviceArg]) -> Result<(), LaunchError> {
        let params = &self.device_only.params;
        if args.len() != params.len() {
            return Err(LaunchError::Run(format!(
                "{} arguments for {} parameters",
                args.len(),
                params.len()
            )));
        }
        let mut bound: Vec<(&str, Bound)> = params
            .iter()
            .zip(args)
            .map(|(p, a)| {
                let value = match *a {
                    DeviceArg::Int(v) => Bound::Int(v),
                    DeviceArg::Bool(b) => Bound::Bool(b),
                    DeviceArg::Ints(buffer) => Bound::Cells(buffer, buffer.len()),
                };
                (p.name.as_str(), value)
            })
            .collect();
        let lookup = |bound: &[(&str, Bound)], name: &str| -> Option<i128> {
            let (array, length) = match name.strip_suffix(".length") {
                Some(array) => (array, true),
                None => (name, false),
            };
            match bound.iter().rev().find(|(n, _)| *n == array)?.1 {
                Bound::Int(v) if !length => Some(v),
                Bound::Cells(_, len) | Bound::Local(len) if length => i128::try_from(len).ok(),
                _ => None,
            }
        };
        // Scratch arrays, as `new int[size]` makes them: zeros. Those in local memory are no
        // buffers: the kernel zeroes them.
        let mut scratch = Vec::new();
        let mut locals = Vec::new();
        for (name, size) in &self.device_only.scratch {
            let len = int_value(size, &|n| lookup(&bound, n))
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| {
                    LaunchError::Run(format!(
                        "cannot compute the size `{}` of `{name}` from the arguments",
                        print_expr(size)
                    ))
                })?;
            if self.kernels.local_arrays.contains(name) {
                locals.push((name.as_str(), len));
                continue;
            }
            let buffer = ocl::Buffer::<i32>::builder()
                .queue(self.queue.clone())
                .len(len.max(1))
                .fill_val(0)
                .build()
                .map_err(|e| LaunchError::Device(e.to_string()))?;
            scratch.push((name.as_str(), buffer, len));
        }
        for (name, buffer, len) in &scratch {
            bound.push((name, Bound::Cells(buffer, *len)));
        }
        for (name, len) in &locals {
            bound.push((name, Bound::Local(*len)));
        }
        let value_of = |name: &str| lookup(&bound, name);
        let mut kernels = Vec::new();
        for launch in &self.kernels.launches {
            let Some((global, local)) = self.work_size(launch, &value_of)? else {
                continue;
            };
            let mut builder = ocl::Kernel::builder();
            builder
                .program(&self.program)
                .name(&launch.kernel)
                .queue(self.queue.clone())
                .global_work_size(dims(&global).map_err(LaunchError::Run)?);
            if let Some(local) = &local {
                builder.local_work_size(dims(local).map_err(LaunchError::Run)?);
            }
            let local_cells: Vec<(&str, usize, u64)> = launch
                .args
                .iter()
                .filter(|arg| arg.var.is_local())
                .filter_map(|arg| locals.iter().find(|(n, _)| *n == arg.name))
                .map(|(name, len)| (*name, *len, 4))
                .collect();
            local_memory_fits(&local_cells, self.local_mem_bytes).map_err(LaunchError::Run)?;
            for arg in &launch.args {
                let value = bound
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == arg.name)
                    .map(|(_, v)| *v)
                    .ok_or_else(|| {
                        LaunchError::Run(format!("`{}` has no value at the launch", arg.name))
                    })?;
                let int = |v: i128| fit::<i32>(v, &arg.name).map_err(LaunchError::Run);
                match (arg.var, value) {
                    (HostVar::Int, Bound::Int(v)) => builder.arg(int(v)?),
                    (HostVar::Bool, Bound::Bool(b)) => builder.arg(i32::from(b)),
                    (HostVar::Length, Bound::Cells(_, len)) => builder.arg(int(len as i128)?),
                    (HostVar::IntArray, Bound::Cells(buffer, _)) => builder.arg(buffer),
                    (HostVar::Length, Bound::Local(len)) => builder.arg(int(len as i128)?),
                    (HostVar::LocalIntArray, Bound::Local(len)) => {
                        builder.arg_local::<i32>(len.max(1))
                    }
                    (var, value) => {
                        return Err(LaunchError::Run(format!(
                            "`{}` is given {value:?} where the kernel expects {var:?}",
                            arg.name
                        )))
                    }
                };
            }
            kernels.push(
                builder
                    .build()
                    .map_err(|e| LaunchError::Device(e.to_string()))?,
            );
        }
        for kernel in &kernels {
            // SAFETY: every argument is set above with the type the generated kernel declares
            // (32-bit integers and `int` buffers); OpenCL retains the buffers (the caller's,
            // and the scratch ones dropped here) until the launches complete.
            unsafe { kernel.enq() }.map_err(|e| LaunchError::Device(e.to_string()))?;
        }
        Ok(())
    }

    /// The global (and, for a block with a barrier or over work-groups, the local) work size
    /// of `launch`, from the arguments' values; `None` where it has no work-item.
    fn work_size(
        &self,
        launch: &Launch,
        value_of: &dyn Fn(&str) -> Option<i128>,
    ) -> Result<Option<WorkSize>, LaunchError> {
        let count = |(lo, hi): &(Expr, Expr), value_of: &dyn Fn(&str) -> Option<i128>| match (
            int_value(lo, value_of),
            int_value(hi, value_of),
        ) {
            (Some(lo), Some(hi)) => {
                Ok(u64::try_from(hi.saturating_sub(lo).max(0)).unwrap_or(u64::MAX))
            }
            _ => Err(LaunchError::Run(format!(
                "cannot compute the range `{} .. {}` from the arguments",
                print_expr(lo),
                print_expr(hi)
            ))),
        };
        let (global, local) = match &launch.shape {
            ThreadShape::Flat { dims, one_group } => {
                let global = dims
                    .iter()
                    .map(|d| count(d, value_of))
                    .collect::<Result<Vec<_>, _>>()?;
                let local = one_group.then(|| global.clone());
                (global, local)
            }
            ThreadShape::Groups {
                group,
                groups,
                threads,
            } => {
                let n = count(groups, value_of)?;
                let first = int_value(&groups.0, value_of).unwrap_or(0);
                group_work_size(n, &mut |g| {
                    let at = first + i128::from(g);
                    let value_of = |name: &str| {
                        if name == group {
                            Some(at)
                        } else {
                            value_of(name)
                        }
                    };
                    count(threads, &value_of).map_err(|e| e.to_string())
                })
                .map_err(LaunchError::Run)?
            }
            ThreadShape::Single { .. } => {
                return Err(LaunchError::Generate("a method without par blocks".into()))
            }
        };
        let any = within_limits(&global, local.as_deref(), self.max_work_group_size)
            .map_err(LaunchError::Run)?;
        Ok(any.then_some((global, local)))
    }
}
