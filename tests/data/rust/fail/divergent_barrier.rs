// expect: E0621
// The number of rounds depends on the thread: threads would wait at different barriers (and
// the CPU function, which runs the loop once for all threads, would be wrong): refused.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && n <= 1024)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
pub fn uneven(n: usize, a: &mut [i32]) {
    #[thread(context(perm!(a[tid], write)))]
    for tid in par(0..n) {
        let mut r = 0;
        #[loop_invariant(perm!(a[tid], write))]
        #[loop_invariant(0 <= r && r <= tid)]
        while r < tid {
            #[barrier(requires(perm!(a[tid], write)), ensures(perm!(a[tid], write)))]
            barrier();
            a[tid] = 0;
            r += 1;
        }
    }
}

fn main() {}
