// expect: perm!(a[i], 1/2)
// PVL's `Perm(..)` in a Rust specification: the error shows the Rust spelling.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n)]
#[context(forall(|i: usize| i < n ==> Perm(a[i], write)))]
pub fn zero(n: usize, a: &mut [i32]) {
    #[thread(context(perm!(a[tid], write)))]
    for tid in par(0..n) {
        a[tid] = 0;
    }
}

fn main() {}
