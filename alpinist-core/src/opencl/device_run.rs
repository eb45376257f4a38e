//! Runs a method on an OpenCL device: the interpreter runs the host code and hands every par
//! block it reaches to [`DeviceLauncher`], which launches the block's generated kernel
//! ([`super::codegen::generate_method`]) with the launching scope's variables as arguments.
//!
//! Arrays are copied to the device before each launch and back after it (one buffer per
//! distinct array, so two names of one array stay one buffer). A value that does not fit the
//! kernel's integer type is an error of the launch, never a truncated value.

use std::time::{Duration, Instant};

use ocl::{Buffer, Context, Kernel as OclKernel, Program, Queue, SpatialDims};

use super::codegen::{HostVar, IntWidth, Launch, MethodKernels, ThreadShape};
use super::platform::DeviceInfo;
use super::OpenClError;
use crate::interp::{self, ArrayRef, InterpError, LaunchScope, Launcher, Limits, Memory, Value};
use crate::syntax::{ParBlock, ParIter, Program as PvlProgram, Stmt, StmtKind};

/// The most work-items one launch may have (a guard against a runaway size).
pub const MAX_WORK_ITEMS: u64 = 1 << 26;

/// A compiled method on one device.
pub struct DeviceLauncher<'k> {
    kernels: &'k MethodKernels,
    device: DeviceInfo,
    queue: Queue,
    program: Program,
    /// Launches made and the wall-clock time spent in them (copies included).
    pub launches: u32,
    pub launch_time: Duration,
    /// The device's own time in the kernels launched, from OpenCL profiling events (start to
    /// end of each kernel command, copies excluded): what `alpinist bench` compares.
    pub kernel_time: Duration,
}

impl<'k> DeviceLauncher<'k> {
    /// Compiles `kernels.source` for `device`. A compile error is an [`OpenClError`] with the
    /// build log (generated code that does not compile is a bug of the generator).
    pub fn new(kernels: &'k MethodKernels, device: &DeviceInfo) -> Result<Self, OpenClError> {
        let context = Context::builder()
            .platform(device.platform)
            .devices(device.device)
            .build()?;
        let queue = Queue::new(
            &context,
            device.device,
            Some(ocl::flags::CommandQueueProperties::PROFILING_ENABLE),
        )?;
        let program = Program::builder()
            .src(kernels.source.clone())
            .devices(device.device)
            .build(&context)
            .map_err(|e| OpenClError(format!("the generated program does not compile: {e}")))?;
        Ok(DeviceLauncher {
            kernels,
            device: device.clone(),
            queue,
            program,
            launches: 0,
            launch_time: Duration::ZERO,
            kernel_time: Duration::ZERO,
        })
    }

    /// Runs the method on `args` in `memory` (the interpreter runs the host code).
    pub fn run(
        &mut self,
        program: &PvlProgram,
        args: &[Value],
        memory: Memory,
        limits: &Limits,
    ) -> Result<interp::Outcome, InterpError> {
        if let [launch @ Launch {
            shape: ThreadShape::Single { result },
            ..
        }] = self.kernels.launches.as_slice()
        {
            // No par block: the whole method is one work-item.
            let mut memory = memory;
            let started = Instant::now();
            // The parameters in order, then the lengths of arrays among them.
            let values: Vec<Option<Value>> = launch
                .args
                .iter()
                .enumerate()
                .map(|(k, arg)| match arg.var {
                    HostVar::Length => launch
                        .args
                        .iter()
                        .position(|a| a.name == arg.name && a.var != HostVar::Length)
                        .and_then(|p| args.get(p).copied()),
                    _ => args.get(k).copied(),
                })
                .collect();
            let outcome = self.execute(launch, &[1], None, &values, &mut memory, *result);
            self.launches += 1;
            self.launch_time += started.elapsed();
            let result = outcome.map_err(|message| InterpError::Launch {
                message,
                span: launch.block,
            })?;
            return Ok(interp::Outcome {
                result,
                memory,
                asserts_evaluated: 0,
                asserts_skipped: 0,
                steps: 0,
            });
        }
        let method = self.kernels.method.clone();
        interp::run_launching(program, &method, args, memory, limits, self)
    }
}

/// A device buffer of the kernel's integer type or of `int` (booleans).
enum Buf {
    I32(Buffer<i32>),
    I64(Buffer<i64>),
}

impl Launcher for DeviceLauncher<'_> {
    fn launch<'p>(
        &mut self,
        block: &'p ParBlock,
        scope: &mut dyn LaunchScope<'p>,
    ) -> Result<(), String> {
        let started = Instant::now();
        let result = self.launch_block(block, scope);
        self.launches += 1;
        self.launch_time += started.elapsed();
        result
    }
}

impl DeviceLauncher<'_> {
    fn launch_block<'p>(
        &mut self,
        block: &'p ParBlock,
        scope: &mut dyn LaunchScope<'p>,
    ) -> Result<(), String> {
        let launch = self.kernels.launch_of(block.span).ok_or_else(|| {
            "no kernel was generated for this par block (only the par blocks of the method \
             that is run are launched on a device)"
                .to_string()
        })?;
        let (global, local): (Vec<u64>, Option<Vec<u64>>) = match &launch.shape {
            ThreadShape::Flat { one_group, .. } => {
                let mut dims = Vec::new();
                for iter in &block.iters {
                    dims.push(range(scope, iter, None)?);
                }
                let local = one_group.then(|| dims.clone());
                (dims, local)
            }
            ThreadShape::Groups { .. } => {
                let inner = nested_block(block).ok_or("the nested par block is missing")?;
                let outer = &block.iters[0];
                let groups = range(scope, outer, None)?;
                // The range may move with the group (`tid = g * m .. (g + 1) * m`).
                let first = scope.eval_int(&outer.lo, None).map_err(|e| e.to_string())?;
                group_work_size(groups, &mut |g| {
                    let at = Some((outer.name.name.as_str(), first + i128::from(g)));
                    range(scope, &inner.iters[0], at)
                })?
            }
            ThreadShape::Single { .. } => {
                return Err("a whole-method kernel launched as a par block".into())
            }
        };
        if !within_limits(
            &global,
            local.as_deref(),
            self.device.max_work_group_size as u64,
        )? {
            return Ok(());
        }

        let values: Vec<Option<Value>> = launch.args.iter().map(|a| scope.value(&a.name)).collect();
        self.execute(
            launch,
            &global,
            local.as_deref(),
            &values,
            scope.memory(),
            None,
        )
        .map(|_| ())
    }

    /// Launches `launch` on `global` (and `local`) work-items with `values` for its
    /// arguments (arrays read from and written back to `memory`); with `result`, the kernel's
    /// last argument is a one-cell buffer whose value is returned.
    fn execute(
        &mut self,
        launch: &Launch,
        global: &[u64],
        local: Option<&[u64]>,
        values: &[Option<Value>],
        memory: &mut Memory,
        result: Option<HostVar>,
    ) -> Result<Option<Value>, String> {
        // Arguments: one buffer per distinct array.
        let width = self.kernels.width;
        let mut buffers: Vec<(ArrayRef, bool, Buf)> = Vec::new();
        let mut builder = OclKernel::builder();
        builder
            .program(&self.program)
            .name(&launch.kernel)
            .queue(self.queue.clone())
            .global_work_size(dims(global)?);
        if let Some(local) = local {
            builder.local_work_size(dims(local)?);
        }
        let mut args: Vec<ArgValue> = Vec::new();
        let mut locals = Vec::new();
        for (arg, value) in launch.args.iter().zip(values) {
            let value =
                value.ok_or_else(|| format!("`{}` has no value at the launch", arg.name))?;
            match (arg.var, value) {
                (HostVar::Int, Value::Int(v)) => args.push(match width {
                    IntWidth::Bits32 => ArgValue::I32(fit::<i32>(v, &arg.name)?),
                    IntWidth::Bits64 => ArgValue::I64(fit::<i64>(v, &arg.name)?),
                }),
                (HostVar::Bool, Value::Bool(b)) => args.push(ArgValue::I32(i32::from(b))),
                (HostVar::Length, Value::Array(r)) => {
                    let len = memory.get(r).map_or(0, <[Value]>::len) as i128;
                    args.push(match width {
                        IntWidth::Bits32 => ArgValue::I32(fit::<i32>(len, &arg.name)?),
                        IntWidth::Bits64 => ArgValue::I64(fit::<i64>(len, &arg.name)?),
                    });
                }
                (HostVar::LocalIntArray | HostVar::LocalBoolArray, Value::Array(r)) => {
                    // Nothing outside this launch sees the array (`codegen::program`): its
                    // size goes to the device, its cells stay (zeros) on the host.
                    let cells = memory.get(r).map_or(0, <[Value]>::len);
                    let wide = arg.var == HostVar::LocalIntArray && width == IntWidth::Bits64;
                    args.push(ArgValue::Local { cells, wide });
                    locals.push((arg.name.as_str(), cells, if wide { 8 } else { 4 }));
                }
                (HostVar::IntArray | HostVar::BoolArray, Value::Array(r)) => {
                    if let Some(k) = buffers.iter().position(|(a, _, _)| *a == r) {
                        args.push(ArgValue::Buffer(k));
                        continue;
                    }
                    let cells = memory
                        .get(r)
                        .ok_or_else(|| format!("`{}` is not an array", arg.name))?
                        .to_vec();
                    let bools = arg.var == HostVar::BoolArray;
                    let buf = self
                        .upload(&cells, bools, width, &arg.name)
                        .map_err(|e| e.to_string())?;
                    buffers.push((r, bools, buf));
                    args.push(ArgValue::Buffer(buffers.len() - 1));
                }
                (_, Value::Null) => return Err(format!("`{}` is null", arg.name)),
                (_, other) => {
                    return Err(format!(
                        "`{}` holds a {} where the kernel expects another type",
                        arg.name,
                        other.kind()
                    ))
                }
            }
        }
        local_memory_fits(&locals, self.device.local_mem_bytes)?;
        // The result's one-cell buffer (a boolean as an `int`), the last argument.
        let result_buffer = match result {
            Some(var) => {
                let bools = var == HostVar::Bool;
                let zero = if bools {
                    Value::Bool(false)
                } else {
                    Value::Int(0)
                };
                Some((bools, self.upload(&[zero], bools, width, "\\result")?))
            }
            None => None,
        };
        for arg in &args {
            match arg {
                ArgValue::I32(v) => builder.arg(*v),
                ArgValue::I64(v) => builder.arg(*v),
                ArgValue::Buffer(k) => match &buffers[*k].2 {
                    Buf::I32(b) => builder.arg(b),
                    Buf::I64(b) => builder.arg(b),
                },
                ArgValue::Local { cells, wide: true } => builder.arg_local::<i64>((*cells).max(1)),
                ArgValue::Local { cells, wide: false } => builder.arg_local::<i32>((*cells).max(1)),
            };
        }
        if let Some((_, buffer)) = &result_buffer {
            match buffer {
                Buf::I32(b) => builder.arg(b),
                Buf::I64(b) => builder.arg(b),
            };
        }
        let kernel = builder.build().map_err(|e| e.to_string())?;
        // SAFETY: every argument is set above, with the types the generated kernel declares;
        // the buffers outlive the launch, which completes before `timed` returns.
        let ns = unsafe { super::harness::timed(&kernel) }.map_err(|e| e.to_string())?;
        self.kernel_time += Duration::from_nanos(ns);
        self.queue.finish().map_err(|e| e.to_string())?;
        for (r, bools, buf) in &buffers {
            let cells = self.download(buf, *bools).map_err(|e| e.to_string())?;
            for (k, v) in cells.into_iter().enumerate() {
                memory.set_cell(*r, k, v);
            }
        }
        match &result_buffer {
            Some((bools, buffer)) => {
                let cells = self.download(buffer, *bools).map_err(|e| e.to_string())?;
                Ok(cells.into_iter().next())
            }
            None => Ok(None),
        }
    }

    fn upload(
        &self,
        cells: &[Value],
        bools: bool,
        width: IntWidth,
        name: &str,
    ) -> Result<Buf, String> {
        let ints: Vec<i128> = cells
            .iter()
            .map(|c| match c {
                Value::Int(v) => Ok(*v),
                Value::Bool(b) => Ok(i128::from(*b)),
                other => Err(format!("`{name}` holds a {}", other.kind())),
            })
            .collect::<Result<_, _>>()?;
        Ok(if bools || width == IntWidth::Bits32 {
            Buf::I32(self.buffer(&ints, name)?)
        } else {
            Buf::I64(self.buffer(&ints, name)?)
        })
    }

    /// A device buffer holding `ints` (at least one cell: OpenCL has no empty buffers).
    fn buffer<T>(&self, ints: &[i128], name: &str) -> Result<Buffer<T>, String>
    where
        T: ocl::OclPrm + TryFrom<i128>,
    {
        let mut host = ints
            .iter()
            .map(|&v| fit::<T>(v, name))
            .collect::<Result<Vec<_>, _>>()?;
        host.resize(ints.len().max(1), T::default());
        Buffer::<T>::builder()
            .queue(self.queue.clone())
            .len(host.len())
            .copy_host_slice(&host)
            .build()
            .map_err(|e| e.to_string())
    }

    fn download(&self, buf: &Buf, bools: bool) -> Result<Vec<Value>, ocl::Error> {
        let ints: Vec<i128> = match buf {
            Buf::I32(b) => {
                let mut host = vec![0i32; b.len()];
                b.read(&mut host).enq()?;
                host.into_iter().map(i128::from).collect()
            }
            Buf::I64(b) => {
                let mut host = vec![0i64; b.len()];
                b.read(&mut host).enq()?;
                host.into_iter().map(i128::from).collect()
            }
        };
        Ok(ints
            .into_iter()
            .map(|v| {
                if bools {
                    Value::Bool(v != 0)
                } else {
                    Value::Int(v)
                }
            })
            .collect())
    }
}

/// The work size of a block over `groups` work-groups, group `g` of `threads(g)` threads:
/// every group has the same number (OpenCL's local size), or it is an error.
pub(super) fn group_work_size(
    groups: u64,
    threads: &mut dyn FnMut(u64) -> Result<u64, String>,
) -> Result<(Vec<u64>, Option<Vec<u64>>), String> {
    let mut size = None;
    for g in 0..groups.min(MAX_WORK_ITEMS) {
        let count = threads(g)?;
        match size {
            Some(t) if t != count => {
                return Err(format!(
                    "the groups of this block have different numbers of threads ({t} and \
                     {count}); OpenCL's work-groups are all one size"
                ))
            }
            _ => size = Some(count),
        }
    }
    let size = size.unwrap_or(0);
    Ok((vec![groups.saturating_mul(size)], Some(vec![size])))
}

/// Whether a launch of `global` (and `local`) work-items has any, within [`MAX_WORK_ITEMS`]
/// and a work-group the device takes (`max_group` work-items); beyond them, an error.
pub(super) fn within_limits(
    global: &[u64],
    local: Option<&[u64]>,
    max_group: u64,
) -> Result<bool, String> {
    match global.iter().try_fold(1u64, |a, &d| a.checked_mul(d)) {
        Some(0) => return Ok(false),
        Some(n) if n <= MAX_WORK_ITEMS => {}
        _ => {
            return Err(format!(
                "{global:?} work-items exceed the limit of {MAX_WORK_ITEMS} per launch"
            ))
        }
    }
    if let Some(local) = local {
        let group: u64 = local.iter().product();
        if group > max_group {
            return Err(format!(
                "a work-group of {group} work-items exceeds the device's limit of {max_group} \
                 (a par block with a barrier runs as one work-group)"
            ));
        }
    }
    Ok(true)
}

/// The number of values of a par iterator, `bound` in scope: `hi − lo`, or 0.
fn range<'p>(
    scope: &mut dyn LaunchScope<'p>,
    iter: &'p ParIter,
    bound: Option<(&'p str, i128)>,
) -> Result<u64, String> {
    let lo = scope.eval_int(&iter.lo, bound).map_err(|e| e.to_string())?;
    let hi = scope.eval_int(&iter.hi, bound).map_err(|e| e.to_string())?;
    Ok(u64::try_from(hi.saturating_sub(lo).max(0)).unwrap_or(u64::MAX))
}

enum ArgValue {
    I32(i32),
    I64(i64),
    Buffer(usize),
    /// A `__local` array of this many cells of `i32` or (`long` kernels' `int` arrays) `i64`.
    Local {
        cells: usize,
        wide: bool,
    },
}

/// Checks that `cells` cells of `cell_bytes` bytes each (a launch's local arrays) fit the
/// device's `local_mem_bytes` (0: unknown, not checked): past it OpenCL fails the launch
/// without saying why.
pub(super) fn local_memory_fits(
    cells: &[(&str, usize, u64)],
    local_mem_bytes: u64,
) -> Result<(), String> {
    let bytes: u64 = cells
        .iter()
        .map(|(_, n, size)| (*n as u64).max(1).saturating_mul(*size))
        .fold(0, u64::saturating_add);
    if local_mem_bytes > 0 && bytes > local_mem_bytes {
        let names: Vec<String> = cells.iter().map(|(n, ..)| format!("`{n}`")).collect();
        return Err(format!(
            "the launch's local arrays ({}) need {bytes} bytes of local memory; the device has \
             {local_mem_bytes}",
            names.join(", ")
        ));
    }
    Ok(())
}

pub(super) fn fit<T: TryFrom<i128>>(v: i128, name: &str) -> Result<T, String> {
    T::try_from(v).map_err(|_| {
        format!(
            "`{name}` holds {v}, beyond the kernel's {}-bit integers",
            std::mem::size_of::<T>() * 8
        )
    })
}

pub(super) fn dims(sizes: &[u64]) -> Result<SpatialDims, String> {
    let s = |k: usize| usize::try_from(sizes[k]).map_err(|e| e.to_string());
    Ok(match sizes.len() {
        1 => SpatialDims::One(s(0)?),
        2 => SpatialDims::Two(s(0)?, s(1)?),
        3 => SpatialDims::Three(s(0)?, s(1)?, s(2)?),
        n => return Err(format!("{n} dimensions")),
    })
}

/// The inner block of a [`ThreadShape::Groups`] launch: the one par statement its body keeps.
fn nested_block(block: &ParBlock) -> Option<&ParBlock> {
    block.body.stmts.iter().find_map(|s: &Stmt| match &s.kind {
        StmtKind::Par(group) => group.blocks.first(),
        _ => None,
    })
}
