//! Kernels written in Rust, as a user of alpinist writes them: each `#[alpinist::kernel]` is
//! lowered to PVL and verified by alpinist's checker when this crate compiles (a kernel that
//! does not verify does not build), its `#[gpuopt(..)]` requests applied and the result
//! reverified; each gives a CPU function of its own name and a module with `PVL`,
//! `OPENCL_SOURCE` and, with the `opencl` feature, `launch(device, ..)`. The tests run the CPU
//! functions and, on every OpenCL device (pocl in CI), the launchers.

use alpinist::prelude::*;

/// `y[i] += 2 * x[i]`, one thread per cell (values bounded so that no `i32` overflows).
#[alpinist::kernel]
#[context_everywhere(x.len() == n && y.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(x[i], 1/2) ** perm!(y[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000 <= x[i] && x[i] <= 1000 && -1000 <= y[i] && y[i] <= 1000))]
#[ensures(forall(|i: usize| i < n ==> y[i] == 2 * x[i] + old(y[i])))]
pub fn saxpy(n: usize, x: &[i32], y: &mut [i32]) {
    #[thread(context(perm!(x[tid], 1/2) ** perm!(y[tid], write)))]
    #[thread(requires(-1000 <= x[tid] && x[tid] <= 1000 && -1000 <= y[tid] && y[tid] <= 1000))]
    #[thread(ensures(y[tid] == 2 * x[tid] + old(y[tid])))]
    for tid in par(0..n) {
        y[tid] += 2 * x[tid];
    }
}

/// The repeated-add loop: each thread adds `step` to its cell `rounds` times; the loop is
/// unrolled by three (`rounds >= 3` makes three iterations certain) before it is verified
/// again.
#[alpinist::kernel]
#[context_everywhere(c.len() == n && 3 <= rounds && rounds <= 64 && 0 <= step && step <= 64)]
#[context(forall(|i: usize| i < n ==> perm!(c[i], write)))]
#[requires(forall(|i: usize| i < n ==> 0 <= c[i] && c[i] <= 4096))]
#[ensures(forall(|i: usize| i < n ==> c[i] == old(c[i]) + rounds * step))]
pub fn count_up(n: usize, rounds: i32, step: i32, c: &mut [i32]) {
    #[thread(context(perm!(c[tid], write)))]
    #[thread(requires(0 <= c[tid] && c[tid] <= 4096))]
    #[thread(ensures(c[tid] == old(c[tid]) + rounds * step))]
    for tid in par(0..n) {
        ghost! {
            let start = c[tid];
        }
        #[gpuopt(loop_unroll(3))]
        #[loop_invariant(0 <= _r && _r <= rounds && 0 <= start && start <= 4096)]
        #[loop_invariant(perm!(c[tid], write) ** c[tid] == start + _r * step)]
        for _r in 0..rounds {
            c[tid] += step;
        }
    }
}

/// `a[i] = -a[i]`, tiled: eight cells per thread (`n` bounded so that the tiles' own
/// arithmetic stays within `i32`).
#[alpinist::kernel]
#[context_everywhere(a.len() == n && 8 < n && n <= 1048576)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000 <= a[i] && a[i] <= 1000))]
#[ensures(forall(|i: usize| i < n ==> a[i] == 0 - old(a[i])))]
pub fn negate(n: usize, a: &mut [i32]) {
    #[gpuopt(tile(intra, 8))]
    #[thread(context(perm!(a[tid], write)))]
    #[thread(requires(-1000 <= a[tid] && a[tid] <= 1000))]
    #[thread(ensures(a[tid] == 0 - old(a[tid])))]
    for tid in par(0..n) {
        a[tid] = 0 - a[tid];
    }
}

/// A stencil with a barrier: each thread publishes its cell in a work-group array, and after
/// the barrier adds its right neighbour's (the last thread, itself twice). Each cell of `a` is
/// read by two threads, a quarter share each.
#[alpinist::kernel]
#[context_everywhere(a.len() == n && s.len() == n && 1 <= n && n <= 1024)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2) ** perm!(s[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000 <= a[i] && a[i] <= 1000))]
#[ensures(forall(|i: usize| i + 1 < n ==> s[i] == a[i] + a[i + 1]))]
#[ensures(s[n - 1] == 2 * a[n - 1])]
pub fn pair_sums(n: usize, a: &[i32], s: &mut [i32]) {
    #[local]
    let mut t = vec![0; n];
    #[thread(context(perm!(a[tid], 1/4) ** (tid + 1 < n ==> perm!(a[tid + 1], 1/4))))]
    #[thread(context(perm!(s[tid], write)))]
    #[thread(requires(perm!(t[tid], write) ** (-1000 <= a[tid] && a[tid] <= 1000)))]
    #[thread(ensures(tid + 1 < n ==> s[tid] == a[tid] + a[tid + 1]))]
    #[thread(ensures(tid + 1 == n ==> s[tid] == 2 * a[tid]))]
    for tid in par(0..n) {
        t[tid] = a[tid];
        #[barrier(context(perm!(a[tid], 1/4) ** (tid + 1 < n ==> perm!(a[tid + 1], 1/4))))]
        #[barrier(requires(perm!(t[tid], write) ** (t[tid] == a[tid] && -1000 <= a[tid] && a[tid] <= 1000)))]
        #[barrier(ensures(perm!(t[tid], 1/2) ** t[tid] == a[tid]))]
        #[barrier(ensures(tid + 1 < n ==> perm!(t[tid + 1], 1/2) ** t[tid + 1] == a[tid + 1]))]
        #[barrier(ensures(-1000 <= t[tid] && t[tid] <= 1000))]
        #[barrier(ensures(tid + 1 < n ==> -1000 <= t[tid + 1] && t[tid + 1] <= 1000))]
        barrier();
        if tid + 1 < n {
            s[tid] = t[tid] + t[tid + 1];
        } else {
            s[tid] = 2 * t[tid];
        }
    }
}

/// Kogge-Stone inclusive prefix sum in work-group local memory, with its functional proof:
/// `x[i]` ends as `xs[0] + .. + xs[i]` for the ghost copy `xs` of the input. Each step has a
/// read phase and a write phase between barriers: the first lends half of `t[tid]` to the
/// reader `tid + offset`, the second gives every thread its own cell back.
#[alpinist::module]
#[allow(clippy::assign_op_pattern)]
pub mod scan {
    use alpinist::prelude::*;

    /// The sum of `xs[k]` for `max(lo, 0) <= k < hi`.
    #[alpinist::pure]
    #[requires(hi <= xs.len())]
    #[decreases(hi)]
    fn seg(xs: &Seq<Int>, lo: Int, hi: Int) -> Int {
        if hi <= 0 || hi <= lo {
            0
        } else {
            seg(xs, lo, hi - 1) + xs[hi - 1]
        }
    }

    /// Adjacent segments add up (by induction on `hi`).
    #[alpinist::lemma]
    #[requires(lo <= mid && mid <= hi && hi <= xs.len())]
    #[ensures(seg(xs, lo, mid) + seg(xs, mid, hi) == seg(xs, lo, hi))]
    #[decreases(hi - mid)]
    fn split_seg(xs: &Seq<Int>, lo: Int, mid: Int, hi: Int) {
        if mid < hi {
            split_seg(xs, lo, mid, hi - 1);
        }
    }

    /// A segment of cells in `0 ..= 1000` sums to at most `1000` per cell (so no `i32`
    /// overflows).
    #[alpinist::lemma]
    #[requires(0 <= hi && hi <= xs.len())]
    #[requires(forall(|k: Int| 0 <= k && k < xs.len() ==> 0 <= xs[k] && xs[k] <= 1000))]
    #[ensures(0 <= seg(xs, lo, hi) && seg(xs, lo, hi) <= 1000 * hi)]
    #[decreases(hi)]
    fn seg_bound(xs: &Seq<Int>, lo: Int, hi: Int) {
        if 0 < hi && lo < hi {
            seg_bound(xs, lo, hi - 1);
        }
    }

    #[alpinist::kernel]
    #[context_everywhere(x.len() == n && xs.len() == n && 1 <= n && n <= 1024)]
    #[context_everywhere(forall(|i: usize| i < n ==> 0 <= xs[i] && xs[i] <= 1000))]
    #[requires(forall(|i: usize| i < n ==> perm!(x[i], write) ** x[i] == xs[i]))]
    #[ensures(forall(|i: usize| i < n ==> perm!(x[i], write) ** x[i] == seg(xs, 0, i + 1)))]
    pub fn kogge_stone(n: usize, x: &mut [i32], #[ghost] xs: Seq<Int>) {
        #[local]
        let mut t = vec![0; n];
        #[thread(requires(perm!(x[tid], write) ** x[tid] == xs[tid] ** perm!(t[tid], write)))]
        #[thread(ensures(perm!(x[tid], write) ** x[tid] == seg(xs, 0, tid + 1)))]
        for tid in par(0..n) {
            t[tid] = x[tid];
            let mut offset = 1;
            #[loop_invariant(tid < n && 1 <= offset)]
            #[loop_invariant(perm!(x[tid], write) ** perm!(t[tid], write))]
            #[loop_invariant(t[tid] == seg(xs, tid + 1 - offset, tid + 1))]
            while offset < n {
                let mut v = 0;
                #[barrier(context(tid < n && 1 <= offset && offset < n))]
                #[barrier(requires(perm!(t[tid], write) ** t[tid] == seg(xs, tid + 1 - offset, tid + 1)))]
                #[barrier(ensures(perm!(t[tid], 1/2) ** t[tid] == seg(xs, tid + 1 - offset, tid + 1)))]
                #[barrier(ensures(tid + offset >= n ==> perm!(t[tid], 1/2)))]
                #[barrier(ensures(tid >= offset ==> perm!(t[tid - offset], 1/2) ** t[tid - offset] == seg(xs, tid + 1 - 2 * offset, tid + 1 - offset)))]
                barrier();
                if tid >= offset {
                    v = t[tid - offset];
                }
                #[barrier(context(tid < n && 1 <= offset && offset < n))]
                #[barrier(requires(perm!(t[tid], 1/2) ** t[tid] == seg(xs, tid + 1 - offset, tid + 1)))]
                #[barrier(requires(tid + offset >= n ==> perm!(t[tid], 1/2)))]
                #[barrier(requires(tid >= offset ==> perm!(t[tid - offset], 1/2)))]
                #[barrier(ensures(perm!(t[tid], write) ** t[tid] == seg(xs, tid + 1 - offset, tid + 1)))]
                barrier();
                ghost! {
                    split_seg(xs, tid + 1 - 2 * offset, tid + 1 - offset, tid + 1);
                    seg_bound(xs, tid + 1 - 2 * offset, tid + 1);
                }
                if tid >= offset {
                    // `v + t[tid]`, never `t[tid] += v`: the left segment first, so that the
                    // scan is right for every associative operator, not only for commutative
                    // `+` (`scan-test`'s interval run tells the two apart).
                    t[tid] = v + t[tid];
                }
                offset *= 2;
            }
            ghost! {
                split_seg(xs, tid + 1 - offset, 0, tid + 1);
            }
            x[tid] = t[tid];
        }
    }
}

/// A kernel written in PVL, brought in with `include_pvl!`: `from_pvl::repeat` (its CPU
/// function, on alpinist's interpreter) and the module `from_pvl::repeat` (`PVL` after the
/// file's `gpuopt loop_unroll`, `OPENCL_SOURCE`, `launch`), verified when this crate compiles.
pub mod from_pvl {
    alpinist::include_pvl!("pvl/repeated_add.pvl");
}
