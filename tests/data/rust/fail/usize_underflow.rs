// expect: E0641
// `tid - 1` is below zero for thread 0: Rust's usize cannot hold it.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && b.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2)))]
#[context(forall(|i: usize| i < n ==> perm!(b[i], write)))]
pub fn shift(n: usize, a: &[i32], b: &mut [i32]) {
    #[thread(context(perm!(b[tid], write)))]
    #[thread(context(tid >= 1 ==> perm!(a[tid - 1], 1/2)))]
    for tid in par(0..n) {
        let from = tid - 1;
        if tid >= 1 {
            b[tid] = a[from];
        }
    }
}

fn main() {}
