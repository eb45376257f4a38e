// expect: E0905
// `#[gpuopt(loop_unroll(3))]` on a loop that may run fewer than three times (`reps` may be 0):
// refused by the applicability check, at the loop, with Z3's counterexample.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(x.len() == n && y.len() == n && 0 <= reps && reps <= 100)]
#[context(forall(|k: usize| k < n ==> perm!(x[k], 1/2) ** perm!(y[k], write)))]
#[requires(forall(|k: usize| k < n ==> 0 <= x[k] && x[k] <= 1000 && 0 <= y[k] && y[k] <= 1000))]
#[ensures(forall(|k: usize| k < n ==> y[k] == old(y[k]) + reps * x[k]))]
pub fn unroll_refused(n: usize, reps: i32, x: &[i32], y: &mut [i32]) {
    #[thread(context(perm!(x[tid], 1/2) ** perm!(y[tid], write)))]
    #[thread(requires(0 <= x[tid] && x[tid] <= 1000 && 0 <= y[tid] && y[tid] <= 1000))]
    #[thread(ensures(y[tid] == old(y[tid]) + reps * x[tid]))]
    for tid in par(0..n) {
        ghost! {
            let y0 = y[tid];
        }
        let mut i = 0;
        #[gpuopt(loop_unroll(3))]
        #[loop_invariant(0 <= i && i <= reps)]
        #[loop_invariant(perm!(x[tid], 1/2) ** perm!(y[tid], write))]
        #[loop_invariant(0 <= x[tid] && x[tid] <= 1000 && 0 <= y0 && y0 <= 1000)]
        #[loop_invariant(y[tid] == y0 + i * x[tid])]
        while i < reps {
            y[tid] += x[tid];
            i += 1;
        }
    }
}

fn main() {}
