//! The host harness: runs a generated kernel on one device.
//!
//! - [`Harness::scan_test`] — for one n: the interval test (input k ↦ (k, k), output checked on
//!   the device by `alp_interval_check`), integer addition on random input against a host scan
//!   (same source, other prelude), and the swapped-operand self-check (`OP(a, b)` defined as
//!   `b ⊕ a`), which must make the interval test fail for n ≥ 2: it shows that the test can
//!   see a wrong result on this device.
//! - [`Harness::voigtlaender`] and [`Harness::random`] — the baselines, batched (one work-group
//!   per run).
//!
//! Launch shape ([`Plan`], [`Harness::plan`]): one work-group of `hi − lo` work-items per run
//! (the par range at N := n); beyond the device's work-group limit or the harness's block
//! limit ([`Harness::max_block`]), a power-of-two n runs as reduce-then-scan over blocks of the
//! largest power of two that fits, is within the limit and is admitted by the kernel's
//! precondition (the kernel runs at N := block, so the proof must cover the block too; see
//! [`SCHEME`]); other sizes are [`HarnessError::TooLarge`]. The baselines stay
//! single-work-group.

use std::time::Instant;

use ocl::{Buffer, Context, Event, Kernel as OclKernel, OclPrm, Program, Queue};

use super::codegen::{EvalError, Kernel, KernelArg, KERNEL_NAME};
use super::interval::{self, Word};
pub use super::monoid::Monoid;
use super::platform::DeviceInfo;
use super::OpenClError;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(
        "n = {n} needs {work_items} work-items in one work-group; the device allows {max} \
         (reduce-then-scan over several work-groups needs n to be a power of two)"
    )]
    TooLarge { n: u32, work_items: i64, max: usize },
    #[error("n = {n} needs {needed} bytes of local memory; the device has {available}")]
    LocalMemory { n: u32, needed: u64, available: u64 },
    #[error("n = {n} is not a multiple of the block of {block} elements")]
    Shape { n: u32, block: u32 },
    #[error("n = {n}: the par range has {work_items} work-items")]
    EmptyLaunch { n: u32, work_items: i64 },
    #[error(transparent)]
    Eval(#[from] EvalError),
    #[error("the OpenCL compiler rejected the generated source (an alpinist bug):\n{log}")]
    Compile { log: String },
    #[error(transparent)]
    OpenCl(#[from] OpenClError),
}

impl From<ocl::Error> for HarnessError {
    fn from(e: ocl::Error) -> Self {
        HarnessError::OpenCl(e.into())
    }
}

impl From<ocl::OclCoreError> for HarnessError {
    fn from(e: ocl::OclCoreError) -> Self {
        HarnessError::OpenCl(e.into())
    }
}

/// Seconds-free timings, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// Device time of the scan kernel (OpenCL profiling, start to end).
    pub kernel_ns: u64,
    /// Host wall time from the start of the OpenCL compile to the verdict.
    pub total_ns: u64,
    /// Host wall time of the OpenCL compile alone.
    pub compile_ns: u64,
}

/// The device-side check of an interval run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalOutcome {
    /// Output cells that differ from the expected interval.
    pub bad_cells: u32,
    /// The first wrong cell and the word found there.
    pub first_bad: Option<(u32, Word)>,
}

impl IntervalOutcome {
    pub fn passed(&self) -> bool {
        self.bad_cells == 0
    }
}

/// The integer-addition run compared with a host scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntOutcome {
    pub mismatches: usize,
    /// (index, device value, host value) of the first mismatch.
    pub first: Option<(usize, u32, u32)>,
    pub seed: u64,
}

/// How a scan of n elements is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Elements per work-group (n itself for a single work-group).
    pub block: u32,
    /// Work-groups (blocks); more than one means reduce-then-scan.
    pub groups: usize,
    /// Work-items per work-group.
    pub work_items: usize,
}

/// Everything [`Harness::scan_test`] found for one n on one device.
#[derive(Clone, Debug)]
pub struct ScanReport {
    pub n: u32,
    pub plan: Plan,
    pub interval: IntervalOutcome,
    pub interval_timing: Timing,
    pub integer: IntOutcome,
    /// `None` where swapping the operands cannot change the scan: no output combines two
    /// inputs (inclusive n < 2, exclusive n < 3).
    pub self_check: Option<IntervalOutcome>,
}

impl ScanReport {
    /// The test showed on this device that it can see a wrong scan: the swapped run failed,
    /// or the kernel's own run already failed (a kernel that itself swaps operands passes the
    /// swapped run), or the self-check is not applicable.
    pub fn self_check_caught(&self) -> bool {
        !self.interval.passed() || self.self_check.is_none_or(|o| !o.passed())
    }
}

/// The result of a baseline over one n.
#[derive(Clone, Debug)]
pub struct BaselineReport {
    pub runs: usize,
    pub failed_runs: usize,
    /// The first failing run (its index in the test set).
    pub first_failure: Option<usize>,
    pub timing: Timing,
}

/// Which scan the kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    Inclusive,
    Exclusive,
}

/// A context and a profiling queue on one device.
pub struct Harness {
    pub device: DeviceInfo,
    pub(super) context: Context,
    pub(super) queue: Queue,
    /// The largest block reduce-then-scan uses, in elements: n above it is split where it can
    /// be ([`Harness::plan`]). A preference, not a limit on n.
    max_block: u32,
}

/// The default block limit on a CPU device: 65536 elements (256 KiB of `uint`, about an L2
/// cache; the fast path's CPU block). Without a limit a kernel that fits one work-group at
/// any n (`examples/prefix-sum/sequential.pvl`, one work-item) would run a whole scan on one
/// core. Measured with that kernel at 2^28 (`scan_throughput` bench, `--max-block`): blocks
/// of 4096 … 2^20 elements took 71–81 ms, within the noise of each other. On other devices
/// blocks are as large as the kernel allows.
pub const CPU_BLOCK: u32 = 65536;

/// [`CPU_BLOCK`] on a CPU device, no limit elsewhere.
fn default_max_block(device: &DeviceInfo) -> u32 {
    if device.cpu {
        CPU_BLOCK
    } else {
        u32::MAX
    }
}

/// The fixed kernels of reduce-then-scan, generic in `ELEM`/`IDENTITY`/`OP` like the generated
/// kernel (so the interval test covers the whole composition). Each phase is work-group
/// parallel and the seeding is fused into the input of the block scan, so the scheme moves
/// its 3n words (reduce reads n, the block scan reads n and writes n) plus O(groups):
///
/// - `alp_reduce` — work-group g reduces elements [g·L·chunk, (g+1)·L·chunk) (L the local
///   size, a power of two) to `totals[g]`: each work-item combines a contiguous chunk in
///   registers, then a tree in local memory combines neighbours, left operand first.
/// - `alp_scan_totals` — one work-group turns `totals[0..count)` into its exclusive scan in
///   place: each work-item reduces a contiguous run of totals, a Hillis-Steele scan in local
///   memory gives each run its prefix, each work-item rewrites its run.
/// - `alp_seed_first` — one work-item per block: the block's first input becomes
///   `OP(prefix, first)`. A correct scan of the seeded block then yields prefix ⊕ x₀ ⊕ … ⊕ xₖ
///   at k (inclusive) and at k + 1 (exclusive), with no extra pass over the block.
/// - `alp_seed_exclusive` — exclusive scans only, after the block scan: a block's first
///   output (the identity when the block scan is right) becomes `OP(prefix, output)`.
///   Combined, not overwritten: a wrong first output still shows in the interval test.
///
/// The block scan itself is the generated kernel (one work-group per block, batched); only it
/// is verified by the checker. The hand-written block scan of the throughput benchmark
/// ([`super::throughput`]) is a separate source and no verdict uses it.
pub const SCHEME: &str = r#"
__kernel void alp_reduce(__global const ELEM* in, __global ELEM* totals, uint chunk,
                         __local ELEM* part) {
  size_t g = get_group_id(0);
  uint l = get_local_id(0), items = get_local_size(0);
  __global const ELEM* p = in + (g * items + l) * (size_t)chunk;
  ELEM acc = IDENTITY;
  for (uint i = 0; i < chunk; i++) acc = OP(acc, p[i]);
  part[l] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 1; s < items; s <<= 1) {
    if ((l & (2 * s - 1)) == 0) part[l] = OP(part[l], part[l + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) totals[g] = part[0];
}
/* part[l] := part[0] ⊕ … ⊕ part[l] for the `items` work-items of the group (Hillis-Steele),
   after a barrier that publishes part; every work-item of the group must call it. */
void alp_local_scan(__local ELEM* part, uint l, uint items) {
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 1; s < items; s <<= 1) {
    ELEM left = l >= s ? part[l - s] : IDENTITY;
    barrier(CLK_LOCAL_MEM_FENCE);
    part[l] = OP(left, part[l]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
__kernel void alp_scan_totals(__global ELEM* totals, uint count, __local ELEM* part) {
  uint l = get_local_id(0), items = get_local_size(0);
  uint run = (count + items - 1) / items;
  uint lo = min(l * run, count), hi = min(lo + run, count);
  ELEM acc = IDENTITY;
  for (uint i = lo; i < hi; i++) acc = OP(acc, totals[i]);
  part[l] = acc;
  alp_local_scan(part, l, items);
  acc = l > 0 ? part[l - 1] : IDENTITY;
  for (uint i = lo; i < hi; i++) { ELEM t = totals[i]; totals[i] = acc; acc = OP(acc, t); }
}
__kernel void alp_seed_first(__global ELEM* in, __global const ELEM* prefix, uint block) {
  size_t g = get_global_id(0);
  in[g * block] = OP(prefix[g], in[g * block]);
}
__kernel void alp_seed_exclusive(__global ELEM* out, __global const ELEM* prefix, uint block) {
  size_t g = get_global_id(0);
  out[g * block] = OP(prefix[g], out[g * block]);
}
"#;

/// Work-items per work-group of `alp_reduce` and `alp_scan_totals` (fewer where the device or
/// the block is smaller): a power of two.
pub const SCHEME_ITEMS: usize = 256;

/// The largest power of two ≤ `min(cap, device limit)`, at least 1.
pub fn group_items(device: &DeviceInfo, cap: usize) -> usize {
    let limit = cap.min(device.max_work_group_size).max(1);
    1 << (usize::BITS - 1 - limit.leading_zeros())
}

/// The fixed seed of the random inputs (reports carry it; runs are reproducible).
pub const SEED: u64 = 0x5eed_a1b1_2026;

/// Runs per batch are capped so one launch allocates at most this many elements.
const MAX_BATCH_ELEMS: usize = 1 << 24;

/// The random baseline's number of runs per n.
pub const RANDOM_RUNS: usize = 64;

impl Harness {
    pub fn new(device: &DeviceInfo) -> Result<Self, HarnessError> {
        let context = Context::builder()
            .platform(device.platform)
            .devices(device.device)
            .build()?;
        let queue = Queue::new(
            &context,
            device.device,
            Some(ocl::flags::CommandQueueProperties::PROFILING_ENABLE),
        )?;
        Ok(Harness {
            device: device.clone(),
            context,
            queue,
            max_block: default_max_block(device),
        })
    }

    /// The largest block reduce-then-scan uses ([`CPU_BLOCK`] on a CPU, unbounded elsewhere).
    pub fn max_block(&self) -> u32 {
        self.max_block
    }

    /// Sets [`Harness::max_block`]; `None` restores the device's default.
    pub fn set_max_block(&mut self, max_block: Option<u32>) {
        self.max_block = max_block.unwrap_or(default_max_block(&self.device));
    }

    /// Compiles the kernel's source behind the monoid's prelude.
    pub fn compile(&self, kernel: &Kernel, monoid: Monoid) -> Result<Program, HarnessError> {
        let source = format!("{}\n{SCHEME}\n{}", monoid.prelude(), kernel.source);
        Program::builder()
            .src(source)
            .devices(self.device.device)
            .build(&self.context)
            .map_err(|e| HarnessError::Compile { log: e.to_string() })
    }

    /// Applies the device's interval operator (`OP` of [`Monoid::Interval`]) to each pair:
    /// lets tests compare it with [`interval::combine`].
    pub fn device_interval_op(&self, pairs: &[(Word, Word)]) -> Result<Vec<Word>, HarnessError> {
        let program = Program::builder()
            .src(Monoid::Interval.prelude())
            .devices(self.device.device)
            .build(&self.context)
            .map_err(|e| HarnessError::Compile { log: e.to_string() })?;
        let buffer = |words: Vec<Word>| {
            Buffer::<Word>::builder()
                .queue(self.queue.clone())
                .len(pairs.len().max(1))
                .copy_host_slice(&words)
                .build()
        };
        let mut left: Vec<Word> = pairs.iter().map(|p| p.0).collect();
        let mut right: Vec<Word> = pairs.iter().map(|p| p.1).collect();
        left.resize(pairs.len().max(1), 0);
        right.resize(pairs.len().max(1), 0);
        let (a, b, r) = (buffer(left)?, buffer(right.clone())?, buffer(right)?);
        let kernel = OclKernel::builder()
            .program(&program)
            .name("alp_op_pairs")
            .queue(self.queue.clone())
            .global_work_size(pairs.len().max(1))
            .arg(&a)
            .arg(&b)
            .arg(&r)
            .arg(pairs.len() as i32)
            .build()?;
        // SAFETY: the three buffers hold max(1, pairs) words; the kernel guards i < n.
        unsafe {
            kernel.enq()?;
        }
        let mut out = vec![0; pairs.len().max(1)];
        r.read(&mut out).enq()?;
        out.truncate(pairs.len());
        Ok(out)
    }

    /// Work-items per run at n, checked against the device.
    fn shape(&self, kernel: &Kernel, n: u32, elem_bytes: u64) -> Result<usize, HarnessError> {
        let work_items = kernel.work_items(i64::from(n))?;
        if work_items <= 0 {
            return Err(HarnessError::EmptyLaunch { n, work_items });
        }
        if work_items as u64 > self.device.max_work_group_size as u64 {
            return Err(HarnessError::TooLarge {
                n,
                work_items,
                max: self.device.max_work_group_size,
            });
        }
        let mut local = 0u64;
        for arg in &kernel.args {
            if let KernelArg::Local { size, .. } = arg {
                local += kernel.local_len(size, i64::from(n))?.max(0) as u64 * elem_bytes;
            }
        }
        if local > self.device.local_mem_bytes {
            return Err(HarnessError::LocalMemory {
                n,
                needed: local,
                available: self.device.local_mem_bytes,
            });
        }
        Ok(work_items as usize)
    }

    /// Launches `runs` independent scans of length n (one work-group each) on `input`
    /// (`runs · n` elements); returns the output buffer and the kernel's device time.
    fn launch<T: OclPrm>(
        &self,
        program: &Program,
        kernel: &Kernel,
        n: u32,
        runs: usize,
        input: &[T],
        poison: T,
    ) -> Result<(Buffer<T>, u64), HarnessError> {
        let input_buffer = self.upload(input)?;
        self.launch_on(program, kernel, n, runs, input_buffer, poison)
    }

    /// A device buffer holding `input`.
    fn upload<T: OclPrm>(&self, input: &[T]) -> Result<Buffer<T>, HarnessError> {
        Ok(Buffer::<T>::builder()
            .queue(self.queue.clone())
            .len(input.len())
            .copy_host_slice(input)
            .build()?)
    }

    /// [`Harness::launch`] on an input already on the device (`runs · n` elements).
    fn launch_on<T: OclPrm>(
        &self,
        program: &Program,
        kernel: &Kernel,
        n: u32,
        runs: usize,
        input_buffer: Buffer<T>,
        poison: T,
    ) -> Result<(Buffer<T>, u64), HarnessError> {
        let work_items = self.shape(kernel, n, std::mem::size_of::<T>() as u64)?;
        let len = input_buffer.len();
        let globals: Vec<&str> = kernel.globals().collect();
        let output_buffer = if globals.len() == 2 {
            Some(
                Buffer::<T>::builder()
                    .queue(self.queue.clone())
                    .len(len)
                    .fill_val(poison)
                    .build()?,
            )
        } else {
            None
        };
        let mut builder = OclKernel::builder();
        builder
            .program(program)
            .name(KERNEL_NAME)
            .queue(self.queue.clone())
            .global_work_size(work_items * runs)
            .local_work_size(work_items);
        let mut global_index = 0;
        for arg in &kernel.args {
            match arg {
                KernelArg::Global { .. } => {
                    let buffer = if global_index == 0 {
                        &input_buffer
                    } else {
                        output_buffer.as_ref().unwrap_or(&input_buffer)
                    };
                    builder.arg(buffer);
                    global_index += 1;
                }
                KernelArg::Size { .. } => {
                    builder.arg(n as i32);
                }
                KernelArg::Local { size, .. } => {
                    let elems = kernel.local_len(size, i64::from(n))?.max(1) as usize;
                    builder.arg_local::<T>(elems);
                }
            }
        }
        let ocl_kernel = builder.build()?;
        // SAFETY: every buffer argument holds runs · n elements and the generated kernel indexes
        // each run's slice of n; sizes were checked against the device above.
        let kernel_ns = unsafe { timed(&ocl_kernel)? };
        Ok((output_buffer.unwrap_or(input_buffer), kernel_ns))
    }

    /// How one scan of n elements runs: one work-group, or reduce-then-scan over `groups`
    /// blocks of `block` elements when n is a power of two and either exceeds what one
    /// work-group can do or exceeds [`Harness::max_block`]. Every block is a size the
    /// kernel's precondition admits. The shape is computed for 8-byte elements (interval
    /// words, the widest of any run), so every run of one n — interval, swapped, integer —
    /// has the same plan and the interval test covers the shape the integer run uses.
    pub fn plan(&self, kernel: &Kernel, n: u32) -> Result<Plan, HarnessError> {
        let elem_bytes = std::mem::size_of::<Word>() as u64;
        let single = match self.shape(kernel, n, elem_bytes) {
            Ok(work_items) => Ok(Plan {
                block: n,
                groups: 1,
                work_items,
            }),
            Err(e @ (HarnessError::TooLarge { .. } | HarnessError::LocalMemory { .. })) => Err(e),
            Err(e) => return Err(e),
        };
        if (single.is_ok() && n <= self.max_block) || !n.is_power_of_two() {
            return single;
        }
        // Powers of two only, the largest block that fits, within the limit and admitted.
        let limit = (n / 2).min(self.max_block).max(1);
        let mut block = 1 << (u32::BITS - 1 - limit.leading_zeros());
        while block >= 2 {
            if kernel.check_size(i64::from(block)).is_ok() {
                if let Ok(work_items) = self.shape(kernel, block, elem_bytes) {
                    return Ok(Plan {
                        block,
                        groups: (n / block) as usize,
                        work_items,
                    });
                }
            }
            block /= 2;
        }
        single
    }

    /// One scan of `input` (n elements) by the plan: the generated kernel alone, or
    /// reduce-then-scan with the kernels of [`SCHEME`]: `alp_reduce` (each block to its total),
    /// `alp_scan_totals` (exclusive scan of the totals), `alp_seed_first` (each block's first
    /// input combined with its prefix, prefix on the left), the generated kernel on every block
    /// (one work-group each) and, for an exclusive scan, `alp_seed_exclusive`. Returns the
    /// output and the summed device time of the launches (host transfers excluded).
    pub fn scan_once<T: OclPrm>(
        &self,
        program: &Program,
        kernel: &Kernel,
        plan: &Plan,
        kind: ScanKind,
        input: &[T],
        poison: T,
    ) -> Result<(Buffer<T>, u64), HarnessError> {
        if plan.groups == 1 {
            return self.launch(program, kernel, plan.block, 1, input, poison);
        }
        let in_buffer = self.upload(input)?;
        let totals = Buffer::<T>::builder()
            .queue(self.queue.clone())
            .len(plan.groups)
            .build()?;
        let mut kernel_ns = self.reduce_and_scan_totals(program, &in_buffer, &totals, plan)?;
        let seed = |name: &str, buffer: &Buffer<T>| {
            OclKernel::builder()
                .program(program)
                .name(name)
                .queue(self.queue.clone())
                .global_work_size(plan.groups)
                .arg(buffer)
                .arg(&totals)
                .arg(plan.block)
                .build()
        };
        // SAFETY: one work-item per block; block g touches cell g · block < n of the buffer
        // and total g < groups.
        kernel_ns += unsafe { timed(&seed("alp_seed_first", &in_buffer)?)? };
        let (output, scan_ns) =
            self.launch_on(program, kernel, plan.block, plan.groups, in_buffer, poison)?;
        kernel_ns += scan_ns;
        if kind == ScanKind::Exclusive {
            // SAFETY: as for alp_seed_first, on the output buffer of n cells.
            kernel_ns += unsafe { timed(&seed("alp_seed_exclusive", &output)?)? };
        }
        Ok((output, kernel_ns))
    }

    /// `alp_reduce` over `shape.0` groups of `shape.1` work-items × `shape.2` elements, writing
    /// one total per group, and `alp_scan_totals` over those totals (one work-group).
    pub(super) fn scheme_kernels<T: OclPrm>(
        &self,
        program: &Program,
        input: &Buffer<T>,
        totals: &Buffer<T>,
        shape: (usize, usize, u32),
    ) -> Result<(OclKernel, OclKernel), HarnessError> {
        let (groups, items, chunk) = shape;
        let reduce = OclKernel::builder()
            .program(program)
            .name("alp_reduce")
            .queue(self.queue.clone())
            .global_work_size(groups * items)
            .local_work_size(items)
            .arg(input)
            .arg(totals)
            .arg(chunk)
            .arg_local::<T>(items)
            .build()?;
        let scan_items = group_items(&self.device, SCHEME_ITEMS);
        let scan_totals = OclKernel::builder()
            .program(program)
            .name("alp_scan_totals")
            .queue(self.queue.clone())
            .global_work_size(scan_items)
            .local_work_size(scan_items)
            .arg(totals)
            .arg(groups as u32)
            .arg_local::<T>(scan_items)
            .build()?;
        Ok((reduce, scan_totals))
    }

    /// The first two phases of reduce-then-scan over `input` (`plan.groups` blocks of
    /// `plan.block` elements): `totals` ends up holding the exclusive scan of the block totals.
    /// Returns the device time. `program` must contain [`SCHEME`].
    pub(super) fn reduce_and_scan_totals<T: OclPrm>(
        &self,
        program: &Program,
        input: &Buffer<T>,
        totals: &Buffer<T>,
        plan: &Plan,
    ) -> Result<u64, HarnessError> {
        let items = self.reduce_items(plan.block);
        let chunk = plan.block / items as u32;
        let (reduce, scan_totals) =
            self.scheme_kernels(program, input, totals, (plan.groups, items, chunk))?;
        // SAFETY: block and items are powers of two with items ≤ block, so each of the
        // `groups` work-groups reads its own block of items · chunk = block cells of `input`
        // (groups · block = n) and writes one total; alp_scan_totals touches `groups` totals.
        Ok(unsafe { timed(&reduce)? + timed(&scan_totals)? })
    }

    /// Work-items per group of `alp_reduce` over blocks of `block` elements: on a CPU one,
    /// whose sequential loop over the block is what pocl runs fastest (as the fast path's
    /// reduce does), else [`SCHEME_ITEMS`]. With groups of 256, `sequential.pvl` on blocks of
    /// 4096 took 163 ms at 2^28 where one work-item took 69 ms (scan_throughput bench).
    fn reduce_items(&self, block: u32) -> usize {
        if self.device.cpu {
            1
        } else {
            group_items(&self.device, SCHEME_ITEMS).min(block as usize)
        }
    }

    /// The interval test of one n with a compiled interval program (normal or swapped).
    fn interval_run(
        &self,
        program: &Program,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
    ) -> Result<(IntervalOutcome, u64), HarnessError> {
        let input: Vec<Word> = (0..n).map(interval::input).collect();
        let plan = self.plan(kernel, n)?;
        let (output, kernel_ns) =
            self.scan_once(program, kernel, &plan, kind, &input, interval::TOP)?;
        Ok((self.check_interval(program, &output, n, kind)?, kernel_ns))
    }

    /// Checks the output of an interval run of length n on the device (`alp_interval_check`
    /// of `program`, which must include [`Monoid::Interval`]'s prelude or its swapped twin).
    pub(super) fn check_interval(
        &self,
        program: &Program,
        output: &Buffer<Word>,
        n: u32,
        kind: ScanKind,
    ) -> Result<IntervalOutcome, HarnessError> {
        let bad = Buffer::<u32>::builder()
            .queue(self.queue.clone())
            .len(1)
            .fill_val(0)
            .build()?;
        let first_bad = Buffer::<u32>::builder()
            .queue(self.queue.clone())
            .len(1)
            .fill_val(n)
            .build()?;
        let check = OclKernel::builder()
            .program(program)
            .name("alp_interval_check")
            .queue(self.queue.clone())
            .global_work_size(n as usize)
            .arg(output)
            .arg(n as i32)
            .arg(i32::from(kind == ScanKind::Exclusive))
            .arg(&bad)
            .arg(&first_bad)
            .build()?;
        // SAFETY: the check kernel reads n cells of `output` and one cell of each counter.
        unsafe {
            check.enq()?;
        }
        let mut count = [0u32];
        bad.read(&mut count[..]).enq()?;
        let mut first = [0u32];
        first_bad.read(&mut first[..]).enq()?;
        let first_bad = if count[0] > 0 {
            let mut word = [0u64];
            output
                .read(&mut word[..])
                .offset(first[0] as usize)
                .len(1)
                .enq()?;
            Some((first[0], word[0]))
        } else {
            None
        };
        Ok(IntervalOutcome {
            bad_cells: count[0],
            first_bad,
        })
    }

    /// The three runs of one n: interval test, integer addition, swapped self-check.
    pub fn scan_test(
        &self,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
    ) -> Result<ScanReport, HarnessError> {
        let plan = self.plan(kernel, n)?;

        let started = Instant::now();
        let program = self.compile(kernel, Monoid::Interval)?;
        let compile_ns = started.elapsed().as_nanos() as u64;
        let (interval, kernel_ns) = self.interval_run(&program, kernel, n, kind)?;
        let interval_timing = Timing {
            kernel_ns,
            total_ns: started.elapsed().as_nanos() as u64,
            compile_ns,
        };

        // The swapped operator changes a scan only where an output combines two inputs:
        // inclusive n >= 2, exclusive n >= 3.
        let smallest = if kind == ScanKind::Exclusive { 3 } else { 2 };
        let self_check = if n >= smallest {
            let swapped = self.compile(kernel, Monoid::IntervalSwapped)?;
            Some(self.interval_run(&swapped, kernel, n, kind)?.0)
        } else {
            None
        };

        let seed = SEED ^ u64::from(n);
        let input = random_words(n as usize, seed);
        let program = self.compile(kernel, Monoid::IntAdd)?;
        let (output, _) = self.scan_once(&program, kernel, &plan, kind, &input, 0xDEAD_BEEF)?;
        let mut got = vec![0u32; n as usize];
        output.read(&mut got).enq()?;
        let want = host_scan(&input, kind, Monoid::IntAdd.host_op());
        let mismatches: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
        let integer = IntOutcome {
            mismatches: mismatches.len(),
            first: mismatches.first().map(|&i| (i, got[i], want[i])),
            seed,
        };

        Ok(ScanReport {
            n,
            plan,
            interval,
            interval_timing,
            integer,
            self_check,
        })
    }

    /// Voigtländer-style 0-1-2 baseline: n(n+1)/2 + n − 1 runs over {0, 1, 2}, see
    /// [`voigtlaender_set`]; every run is compared with a host scan.
    pub fn voigtlaender(
        &self,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
    ) -> Result<BaselineReport, HarnessError> {
        let (saturating, last_non_zero) = voigtlaender_set(n as usize);
        self.baseline(
            kernel,
            n,
            kind,
            &[
                (Monoid::Saturating012, saturating),
                (Monoid::LastNonZero012, last_non_zero),
            ],
        )
    }

    /// The outputs of `runs` scans with integer addition on random inputs of n elements
    /// (reproducible from `seed`), one work-group each: for differential tests of two kernels
    /// (an original and its optimised version) on the same inputs. Returns (inputs, outputs).
    #[allow(clippy::type_complexity)]
    pub fn random_outputs(
        &self,
        kernel: &Kernel,
        n: u32,
        runs: usize,
        seed: u64,
    ) -> Result<(Vec<Vec<u32>>, Vec<Vec<u32>>), HarnessError> {
        let inputs: Vec<Vec<u32>> = (0..runs)
            .map(|r| random_words(n as usize, seed ^ ((r as u64) << 32) ^ u64::from(n)))
            .collect();
        let program = self.compile(kernel, Monoid::IntAdd)?;
        let flat: Vec<u32> = inputs.iter().flatten().copied().collect();
        let (output, _) = self.launch(&program, kernel, n, runs, &flat, 0xDEAD_BEEF)?;
        let mut got = vec![0u32; flat.len()];
        output.read(&mut got).enq()?;
        let outputs = got.chunks(n as usize).map(<[u32]>::to_vec).collect();
        Ok((inputs, outputs))
    }

    /// Random baseline: [`RANDOM_RUNS`] runs of integer addition on random input.
    pub fn random(
        &self,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
    ) -> Result<BaselineReport, HarnessError> {
        let runs: Vec<Vec<u32>> = (0..RANDOM_RUNS)
            .map(|r| random_words(n as usize, SEED ^ ((r as u64) << 32) ^ u64::from(n)))
            .collect();
        self.baseline(kernel, n, kind, &[(Monoid::IntAdd, runs)])
    }

    /// Compiles the kernel for each monoid and runs its input set; the times cover the
    /// compiles, the launches, the transfers and the host comparison.
    fn baseline(
        &self,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
        sets: &[(Monoid, Vec<Vec<u32>>)],
    ) -> Result<BaselineReport, HarnessError> {
        let started = Instant::now();
        let programs = sets
            .iter()
            .map(|(monoid, _)| self.compile(kernel, *monoid))
            .collect::<Result<Vec<_>, _>>()?;
        let mut report = BaselineReport {
            runs: 0,
            failed_runs: 0,
            first_failure: None,
            timing: Timing {
                compile_ns: started.elapsed().as_nanos() as u64,
                ..Timing::default()
            },
        };
        for (program, (monoid, set)) in programs.iter().zip(sets) {
            self.batched(program, kernel, n, kind, *monoid, set, &mut report)?;
        }
        report.timing.total_ns = started.elapsed().as_nanos() as u64;
        Ok(report)
    }

    /// Runs every input of `set` (each of length n) in batches and compares with host scans.
    #[allow(clippy::too_many_arguments)]
    fn batched(
        &self,
        program: &Program,
        kernel: &Kernel,
        n: u32,
        kind: ScanKind,
        monoid: Monoid,
        set: &[Vec<u32>],
        report: &mut BaselineReport,
    ) -> Result<(), HarnessError> {
        let per_batch = (MAX_BATCH_ELEMS / (n as usize).max(1)).max(1);
        for chunk in set.chunks(per_batch) {
            let input: Vec<u32> = chunk.iter().flatten().copied().collect();
            let (output, kernel_ns) =
                self.launch(program, kernel, n, chunk.len(), &input, 0xDEAD_BEEF)?;
            report.timing.kernel_ns += kernel_ns;
            let mut got = vec![0u32; input.len()];
            output.read(&mut got).enq()?;
            for (run, (input, got)) in chunk.iter().zip(got.chunks(n as usize)).enumerate() {
                if host_scan(input, kind, monoid.host_op()) != got {
                    report.failed_runs += 1;
                    report.first_failure.get_or_insert(report.runs + run);
                }
            }
            report.runs += chunk.len();
        }
        Ok(())
    }
}

/// Enqueues `kernel` with its default work sizes, waits, returns its device time (profiling).
///
/// # Safety
/// The kernel's arguments must be valid for its work sizes (OpenCL does not check bounds).
pub(super) unsafe fn timed(kernel: &OclKernel) -> Result<u64, HarnessError> {
    let mut event = Event::empty();
    kernel.cmd().enew(&mut event).enq()?;
    event.wait_for()?;
    let start = event
        .profiling_info(ocl::enums::ProfilingInfo::Start)?
        .time()?;
    let end = event
        .profiling_info(ocl::enums::ProfilingInfo::End)?
        .time()?;
    Ok(end.saturating_sub(start))
}

/// The host's sequential scan.
pub fn host_scan(input: &[u32], kind: ScanKind, op: fn(u32, u32) -> u32) -> Vec<u32> {
    let mut acc = 0u32; // the identity of every `uint` monoid here
    input
        .iter()
        .map(|&x| {
            let before = acc;
            acc = op(acc, x);
            match kind {
                ScanKind::Inclusive => acc,
                ScanKind::Exclusive => before,
            }
        })
        .collect()
}

/// `len` random words from `seed` ([`crate::inputs::SplitMix64`]).
pub fn random_words(len: usize, seed: u64) -> Vec<u32> {
    let mut random = crate::inputs::SplitMix64::new(seed);
    (0..len).map(|_| random.next_u64() as u32).collect()
}

/// The 0-1-2 test set with n(n+1)/2 + n − 1 runs, in the shape of Voigtländer's (POPL 2008):
/// two operators on {0, 1, 2}, both with identity 0.
///
/// - Saturating addition, n(n+1)/2 runs: for every 0 ≤ i ≤ j < n, a 1 at i and a 1 at j (a
///   single 1 when i = j). The single-1 runs alone show that every output k combines each
///   input i ≤ k exactly once and no input i > k.
/// - "The last non-zero wins", n − 1 runs: for every i < n − 1, a 1 at i and a 2 at i + 1;
///   they show that i is combined before i + 1, so output k combines 0, …, k in order.
///
/// For a generic (data-oblivious) scan these two facts are correctness for every monoid. The
/// run count and the two-operator shape follow Voigtländer; the operator tables and inputs are
/// this module's construction (argued above), not copied from the paper.
pub fn voigtlaender_set(n: usize) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut saturating = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            let mut run = vec![0u32; n];
            run[i] = 1;
            run[j] = 1;
            saturating.push(run);
        }
    }
    let last_non_zero = (0..n.saturating_sub(1))
        .map(|i| {
            let mut run = vec![0u32; n];
            run[i] = 1;
            run[i + 1] = 2;
            run
        })
        .collect();
    (saturating, last_non_zero)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voigtlaender_set_has_the_papers_run_count() {
        for n in [1usize, 2, 5, 32] {
            let (a, b) = voigtlaender_set(n);
            assert_eq!(a.len() + b.len(), n * (n + 1) / 2 + n - 1);
            assert!(a.iter().chain(&b).all(|run| run.len() == n));
        }
    }

    #[test]
    fn host_scan_inclusive_and_exclusive() {
        let add = Monoid::IntAdd.host_op();
        assert_eq!(host_scan(&[1, 2, 3], ScanKind::Inclusive, add), [1, 3, 6]);
        assert_eq!(host_scan(&[1, 2, 3], ScanKind::Exclusive, add), [0, 1, 3]);
        let last = Monoid::LastNonZero012.host_op();
        assert_eq!(
            host_scan(&[0, 1, 2, 0], ScanKind::Inclusive, last),
            [0, 1, 2, 2]
        );
        let sat = Monoid::Saturating012.host_op();
        assert_eq!(
            host_scan(&[1, 0, 1, 1], ScanKind::Inclusive, sat),
            [1, 1, 2, 2]
        );
    }

    #[test]
    fn the_012_operators_see_a_swap_that_addition_does_not() {
        // A scan that combines 1 and 0 in the wrong order still sums right, but "last
        // non-zero" sees it.
        let last = Monoid::LastNonZero012.host_op();
        assert_ne!(last(1, 2), last(2, 1));
        let sat = Monoid::Saturating012.host_op();
        assert_ne!(sat(1, 1), 1);
    }

    #[test]
    fn random_words_are_reproducible() {
        assert_eq!(random_words(8, 1), random_words(8, 1));
        assert_ne!(random_words(8, 1), random_words(8, 2));
    }
}
