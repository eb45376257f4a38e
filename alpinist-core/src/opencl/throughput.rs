//! The fast reduce-then-scan of the throughput benchmark (issue 5), next to a device-to-device
//! copy measured in the same run.
//!
//! **Not the verified path.** `scan-test` scans each block with the kernel generated from the
//! verified PVL ([`super::harness::Harness::scan_once`]); this module scans each block with
//! [`FAST_BLOCK_SCAN`], a fixed hand-written kernel that no checker has proved race-free and
//! that no verdict uses. It shares the first two phases with the verified path
//! (`alp_reduce`, `alp_scan_totals` of [`SCHEME`]) and is written over the same
//! `ELEM`/`IDENTITY`/`OP` macros, so the tests run it through the interval test, the integer
//! run and the swapped-operand self-check like a generated kernel — evidence that it computes
//! a scan, not a verdict.
//!
//! Scheme: `alp_reduce` reads n words and writes one total per block, `alp_scan_totals` scans
//! the totals, `alp_fast_block_scan` reads each block, scans it seeded with its prefix and
//! writes n words: 3n words against a copy's 2n, so 2n/3n ≈ 67% of copy bandwidth is the
//! ceiling of the figure [`Measurement::percent_of_copy`].

use ocl::enums::ProfilingInfo;
use ocl::{Buffer, Event, Kernel as OclKernel, OclPrm, Program};

use super::harness::{
    group_items, host_scan, random_words, timed, Harness, HarnessError, IntOutcome,
    IntervalOutcome, Monoid, ScanKind, CPU_BLOCK, SCHEME, SEED,
};
use super::interval::{self, Word};

/// The hand-written block scan, generic in `ELEM`/`IDENTITY`/`OP`: work-group g scans block g
/// (`items · chunk` elements) seeded with `prefix[g]`. With more than one work-item per
/// group, each work-item combines its contiguous chunk in registers and a Hillis-Steele scan
/// in local memory gives each chunk its prefix within the block; then each work-item scans its
/// chunk (re-read from cache: the block was just read) seeded with its prefix and writes its
/// outputs. With one work-item per group the first pass is skipped: the block is one
/// sequential scan. `exclusive` selects the scan kind.
pub const FAST_BLOCK_SCAN: &str = r#"
__kernel void alp_fast_block_scan(__global const ELEM* in, __global ELEM* out,
                                  __global const ELEM* prefix, uint chunk, int exclusive,
                                  __local ELEM* part) {
  size_t g = get_group_id(0);
  uint l = get_local_id(0), items = get_local_size(0);
  __global const ELEM* p = in + (g * items + l) * (size_t)chunk;
  __global ELEM* q = out + (g * items + l) * (size_t)chunk;
  ELEM own = IDENTITY;
  /* One work-item per group needs no prefix within the group: skip the first pass. (The
     barriers stay outside the branch: with them inside it, this kernel failed the interval
     test on pocl 3.1.) */
  if (items > 1) {
    for (uint i = 0; i < chunk; i++) own = OP(own, p[i]);
  }
  part[l] = own;
  alp_local_scan(part, l, items);
  ELEM acc = OP(prefix[g], l > 0 ? part[l - 1] : IDENTITY);
  /* Groups of 4 loads, the serial chain of OP, 4 stores: adjacent accesses the compiler can
     widen. 64-bit counters: no 32-bit wrap-around for the compiler to keep. */
  size_t len = chunk, i = 0;
  if (exclusive) {
    for (; i + 4 <= len; i += 4) {
      ELEM x0 = p[i], x1 = p[i + 1], x2 = p[i + 2], x3 = p[i + 3];
      ELEM y1 = OP(acc, x0), y2 = OP(y1, x1), y3 = OP(y2, x2);
      q[i] = acc; q[i + 1] = y1; q[i + 2] = y2; q[i + 3] = y3;
      acc = OP(y3, x3);
    }
    for (; i < len; i++) { ELEM x = p[i]; q[i] = acc; acc = OP(acc, x); }
  } else {
    for (; i + 4 <= len; i += 4) {
      ELEM x0 = p[i], x1 = p[i + 1], x2 = p[i + 2], x3 = p[i + 3];
      ELEM y0 = OP(acc, x0), y1 = OP(y0, x1), y2 = OP(y1, x2), y3 = OP(y2, x3);
      q[i] = y0; q[i + 1] = y1; q[i + 2] = y2; q[i + 3] = y3;
      acc = y3;
    }
    for (; i < len; i++) { acc = OP(acc, p[i]); q[i] = acc; }
  }
}
/* The copy kernel of the baseline: each work-item copies a contiguous chunk. */
__kernel void alp_copy(__global const ELEM* in, __global ELEM* out, uint chunk) {
  size_t base = get_global_id(0) * (size_t)chunk;
  for (uint i = 0; i < chunk; i++) out[base + i] = in[base + i];
}
"#;

/// The default shape of the fast path on a GPU (or any device that is not a CPU): work-items
/// per work-group and elements per work-item.
pub const GPU_SHAPE: (usize, u32) = (256, 16);
/// The default shape on a CPU: one work-item per work-group scanning 65536 elements (256 KiB,
/// about an L2 cache). On pocl a kernel with barriers and more than one work-item per group
/// ran its block scan 5–8× slower than the same loop without a barrier (at 2^22: 64
/// work-items × 256 elements took 6–11 ms for the block phase, 1 × 4096 1.2–1.7 ms), so on a
/// CPU each block is one work-item's sequential scan and the local-memory steps are skipped;
/// long blocks keep the number of work-groups, each with its scheduling cost, small.
pub const CPU_SHAPE: (usize, u32) = (1, CPU_BLOCK);

/// The launch shape of the fast path: `groups` blocks of `items · chunk` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastPlan {
    pub n: u32,
    /// Work-items per work-group (a power of two).
    pub items: usize,
    /// Elements per work-item.
    pub chunk: u32,
    /// Blocks (work-groups).
    pub groups: usize,
}

impl FastPlan {
    /// The shape for n with at most `items` work-items of at most `chunk` elements per group
    /// (smaller where n is): n must be a multiple of the resulting block.
    pub fn new(
        harness: &Harness,
        n: u32,
        items: usize,
        chunk: u32,
    ) -> Result<FastPlan, HarnessError> {
        let mut items = group_items(&harness.device, items);
        while items > 1 && items as u32 > n {
            items /= 2;
        }
        let chunk = chunk.max(1).min((n / items as u32).max(1));
        let block = items as u32 * chunk;
        if n == 0 || !n.is_multiple_of(block) {
            return Err(HarnessError::Shape { n, block });
        }
        Ok(FastPlan {
            n,
            items,
            chunk,
            groups: (n / block) as usize,
        })
    }

    /// The default shape for the device ([`CPU_SHAPE`] or [`GPU_SHAPE`]), reduced where n is
    /// smaller.
    pub fn for_device(harness: &Harness, n: u32) -> Result<FastPlan, HarnessError> {
        let (items, chunk) = if harness.device.cpu {
            CPU_SHAPE
        } else {
            GPU_SHAPE
        };
        FastPlan::new(harness, n, items, chunk)
    }

    /// Elements per block.
    pub fn block(&self) -> u32 {
        self.items as u32 * self.chunk
    }
}

/// The fast path's checks at one n: what `scan-test` checks of a generated kernel.
#[derive(Clone, Debug)]
pub struct FastReport {
    pub plan: FastPlan,
    pub interval: IntervalOutcome,
    /// The swapped-operand run (`None` below the sizes where a swap can show).
    pub self_check: Option<IntervalOutcome>,
    pub integer: IntOutcome,
}

/// One size of the benchmark. Times are device times from OpenCL profiling, in ns, with
/// compiles and host transfers excluded.
#[derive(Clone, Debug)]
pub struct Measurement {
    pub plan: FastPlan,
    /// Best of the reps of `clEnqueueCopyBuffer` (n `uint`).
    pub copy_buffer_ns: u64,
    /// Best of the reps of the copy kernel `alp_copy`.
    pub copy_kernel_ns: u64,
    /// Each rep of the scan: start of `alp_reduce` to end of `alp_fast_block_scan`.
    pub scan_ns: Vec<u64>,
    /// The phases of the best rep.
    pub phases: PhaseTimes,
    /// Output cells compared with the host scan, and those that differ.
    pub checked: usize,
    pub mismatches: usize,
}

/// Device times of one fast scan, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseTimes {
    /// Start of the first phase to end of the last (gaps included).
    pub total: u64,
    pub reduce: u64,
    pub totals: u64,
    pub block: u64,
}

impl Measurement {
    /// The faster of the two copies: the baseline.
    pub fn copy_ns(&self) -> u64 {
        self.copy_buffer_ns.min(self.copy_kernel_ns)
    }

    pub fn best_scan_ns(&self) -> u64 {
        self.scan_ns.iter().copied().min().unwrap_or(0)
    }

    pub fn median_scan_ns(&self) -> u64 {
        let mut sorted = self.scan_ns.clone();
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied().unwrap_or(0)
    }

    /// 2n · 4 bytes over `ns`, in GB/s (10⁹ bytes per second).
    pub fn gbps(&self, ns: u64) -> f64 {
        if ns == 0 {
            return 0.0;
        }
        2.0 * f64::from(self.plan.n) * 4.0 / ns as f64
    }

    /// The best scan's throughput as a percentage of the faster copy's.
    pub fn percent_of_copy(&self) -> f64 {
        let scan = self.best_scan_ns();
        if scan == 0 {
            return 0.0;
        }
        100.0 * self.copy_ns() as f64 / scan as f64
    }
}

impl Harness {
    /// Compiles [`SCHEME`] and [`FAST_BLOCK_SCAN`] behind the monoid's prelude.
    pub fn fast_program(&self, monoid: Monoid) -> Result<Program, HarnessError> {
        let source = format!("{}\n{SCHEME}\n{FAST_BLOCK_SCAN}", monoid.prelude());
        Program::builder()
            .src(source)
            .devices(self.device.device)
            .build(&self.context)
            .map_err(|e| HarnessError::Compile { log: e.to_string() })
    }

    /// Enqueues the three phases of the fast path (input and output hold `plan.n` elements,
    /// `totals` `plan.groups`), waits, and returns the device times.
    fn fast_scan<T: OclPrm>(
        &self,
        program: &Program,
        plan: &FastPlan,
        kind: ScanKind,
        buffers: (&Buffer<T>, &Buffer<T>, &Buffer<T>),
    ) -> Result<PhaseTimes, HarnessError> {
        let (input, output, totals) = buffers;
        let (reduce, scan_totals) = self.scheme_kernels(
            program,
            input,
            totals,
            (plan.groups, plan.items, plan.chunk),
        )?;
        let block_scan = OclKernel::builder()
            .program(program)
            .name("alp_fast_block_scan")
            .queue(self.queue.clone())
            .global_work_size(plan.groups * plan.items)
            .local_work_size(plan.items)
            .arg(input)
            .arg(output)
            .arg(totals)
            .arg(plan.chunk)
            .arg(i32::from(kind == ScanKind::Exclusive))
            .arg_local::<T>(plan.items)
            .build()?;
        let mut events = [Event::empty(), Event::empty(), Event::empty()];
        // SAFETY: groups · items · chunk = n: each work-item reads (and writes) its own chunk
        // of the n-element buffers, group g writes and reads total g < groups; alp_scan_totals
        // touches the `groups` totals. The queue is in order, so the phases run one after
        // another.
        unsafe {
            reduce.cmd().enew(&mut events[0]).enq()?;
            scan_totals.cmd().enew(&mut events[1]).enq()?;
            block_scan.cmd().enew(&mut events[2]).enq()?;
        }
        events[2].wait_for()?;
        let mut times = [(0, 0); 3];
        for (time, event) in times.iter_mut().zip(&events) {
            *time = (
                event.profiling_info(ProfilingInfo::Start)?.time()?,
                event.profiling_info(ProfilingInfo::End)?.time()?,
            );
        }
        Ok(PhaseTimes {
            total: times[2].1.saturating_sub(times[0].0),
            reduce: times[0].1.saturating_sub(times[0].0),
            totals: times[1].1.saturating_sub(times[1].0),
            block: times[2].1.saturating_sub(times[2].0),
        })
    }

    /// Runs the fast path once on `input` and returns its output.
    fn fast_run<T: OclPrm>(
        &self,
        program: &Program,
        plan: &FastPlan,
        kind: ScanKind,
        input: &[T],
        poison: T,
    ) -> Result<Vec<T>, HarnessError> {
        let buffer = |fill: Option<&[T]>, len: usize| {
            let builder = Buffer::<T>::builder().queue(self.queue.clone()).len(len);
            match fill {
                Some(data) => builder.copy_host_slice(data).build(),
                None => builder.fill_val(poison).build(),
            }
        };
        let (input, output, totals) = (
            buffer(Some(input), input.len())?,
            buffer(None, input.len())?,
            buffer(None, plan.groups)?,
        );
        self.fast_scan(program, plan, kind, (&input, &output, &totals))?;
        let mut got = vec![poison; plan.n as usize];
        output.read(&mut got).enq()?;
        Ok(got)
    }

    /// The interval test, the swapped-operand self-check and the integer run of the fast path
    /// at one shape (the checks `scan-test` makes of a generated kernel).
    pub fn fast_scan_test(
        &self,
        plan: &FastPlan,
        kind: ScanKind,
    ) -> Result<FastReport, HarnessError> {
        let n = plan.n;
        let input: Vec<Word> = (0..n).map(interval::input).collect();
        let run_interval = |monoid: Monoid| -> Result<IntervalOutcome, HarnessError> {
            let program = self.fast_program(monoid)?;
            let got = self.fast_run(&program, plan, kind, &input, interval::TOP)?;
            let output = Buffer::<Word>::builder()
                .queue(self.queue.clone())
                .len(got.len())
                .copy_host_slice(&got)
                .build()?;
            self.check_interval(&program, &output, n, kind)
        };
        let interval = run_interval(Monoid::Interval)?;
        let smallest = if kind == ScanKind::Exclusive { 3 } else { 2 };
        let self_check = if n >= smallest {
            Some(run_interval(Monoid::IntervalSwapped)?)
        } else {
            None
        };
        let seed = SEED ^ u64::from(n);
        let words = random_words(n as usize, seed);
        let program = self.fast_program(Monoid::IntAdd)?;
        let got = self.fast_run(&program, plan, kind, &words, 0xDEAD_BEEF)?;
        let want = host_scan(&words, kind, u32::wrapping_add);
        let mismatches: Vec<usize> = (0..got.len()).filter(|&i| got[i] != want[i]).collect();
        Ok(FastReport {
            plan: *plan,
            interval,
            self_check,
            integer: IntOutcome {
                mismatches: mismatches.len(),
                first: mismatches.first().map(|&i| (i, got[i], want[i])),
                seed,
            },
        })
    }

    /// The benchmark at one shape: `reps` rounds of a copy of n `uint` by
    /// `clEnqueueCopyBuffer`, one by the copy kernel and an inclusive fast scan of n random
    /// `uint`; the last scan's output
    /// compared with a host scan in full. Compiles once, uploads once; the figures are device
    /// times (profiling), host transfers and compiles excluded.
    pub fn measure_throughput(
        &self,
        plan: &FastPlan,
        reps: usize,
    ) -> Result<Measurement, HarnessError> {
        let reps = reps.max(1);
        let n = plan.n as usize;
        let program = self.fast_program(Monoid::IntAdd)?;
        let words = random_words(n, SEED ^ n as u64);
        let buffer = |len: usize| {
            Buffer::<u32>::builder()
                .queue(self.queue.clone())
                .len(len)
                .fill_val(0xDEAD_BEEF)
                .build()
        };
        let input = Buffer::<u32>::builder()
            .queue(self.queue.clone())
            .len(n)
            .copy_host_slice(&words)
            .build()?;
        let (output, totals) = (buffer(n)?, buffer(plan.groups)?);

        let copy_chunk = copy_chunk(n);
        let copy = OclKernel::builder()
            .program(&program)
            .name("alp_copy")
            .queue(self.queue.clone())
            .global_work_size(n / copy_chunk as usize)
            .arg(&input)
            .arg(&output)
            .arg(copy_chunk)
            .build()?;
        // The reps interleave the copies and the scan, so that a burst of load from other
        // processes on the machine hits both alike.
        let (mut copy_buffer_ns, mut copy_kernel_ns) = (u64::MAX, u64::MAX);
        let mut scan_ns = Vec::with_capacity(reps);
        let mut phases = PhaseTimes::default();
        for _ in 0..reps {
            let mut event = Event::empty();
            input.copy(&output, None, None).enew(&mut event).enq()?;
            copy_buffer_ns = copy_buffer_ns.min(event_ns(&event)?);
            // SAFETY: n / chunk work-items copy chunk cells each: n cells of both buffers.
            copy_kernel_ns = copy_kernel_ns.min(unsafe { timed(&copy)? });
            let times = self.fast_scan(
                &program,
                plan,
                ScanKind::Inclusive,
                (&input, &output, &totals),
            )?;
            if scan_ns.iter().all(|&best| times.total < best) {
                phases = times;
            }
            scan_ns.push(times.total);
        }
        let mut got = vec![0u32; n];
        output.read(&mut got).enq()?;
        let mut acc = 0u32;
        let mut mismatches = 0;
        for (x, y) in words.iter().zip(&got) {
            acc = acc.wrapping_add(*x);
            mismatches += usize::from(acc != *y);
        }
        Ok(Measurement {
            plan: *plan,
            copy_buffer_ns,
            copy_kernel_ns,
            scan_ns,
            phases,
            checked: n,
            mismatches,
        })
    }
}

/// Elements per work-item of the copy kernel: 1024, or n where n is smaller (a power of two
/// n divides evenly; otherwise one work-item copies everything).
fn copy_chunk(n: usize) -> u32 {
    if n.is_multiple_of(1024) {
        1024
    } else {
        n.max(1) as u32
    }
}

/// Start to end of a finished command, from profiling.
fn event_ns(event: &Event) -> Result<u64, HarnessError> {
    event.wait_for()?;
    let start = event.profiling_info(ProfilingInfo::Start)?.time()?;
    let end = event.profiling_info(ProfilingInfo::End)?.time()?;
    Ok(end.saturating_sub(start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(n: u32, copy: (u64, u64), scans: &[u64]) -> Measurement {
        Measurement {
            plan: FastPlan {
                n,
                items: 1,
                chunk: n,
                groups: 1,
            },
            copy_buffer_ns: copy.0,
            copy_kernel_ns: copy.1,
            scan_ns: scans.to_vec(),
            phases: PhaseTimes::default(),
            checked: n as usize,
            mismatches: 0,
        }
    }

    #[test]
    fn throughput_is_two_n_words_over_the_time_against_the_faster_copy() {
        // 2^20 uint: 8 MiB moved in 1 ms is 8.39 GB/s.
        let m = measurement(
            1 << 20,
            (2_000_000, 1_000_000),
            &[3_000_000, 1_500_000, 2_000_000],
        );
        assert_eq!(m.copy_ns(), 1_000_000);
        assert_eq!(m.best_scan_ns(), 1_500_000);
        assert_eq!(m.median_scan_ns(), 2_000_000);
        assert!((m.gbps(1_000_000) - 8.388_608).abs() < 1e-9);
        assert!((m.percent_of_copy() - 100.0 * 2.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn empty_measurements_do_not_divide_by_zero() {
        let m = measurement(16, (0, 0), &[]);
        assert_eq!(m.best_scan_ns(), 0);
        assert_eq!(m.median_scan_ns(), 0);
        assert_eq!(m.gbps(0), 0.0);
        assert_eq!(m.percent_of_copy(), 0.0);
    }

    #[test]
    fn copy_chunks_divide_n() {
        assert_eq!(copy_chunk(1 << 20), 1024);
        assert_eq!(copy_chunk(100), 100);
    }
}
