// expect: cannot live in work-group local memory
// `t` is written by one launch and read by the next, so it outlives the first: it cannot be a
// work-group's local memory, which lives as long as one launch (and the first block, with no
// barrier, is no single work-group either). The kernel verifies; `#[local]` asks for what the
// code generation cannot give, and says so.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && c.len() == n && n <= 1024)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2) ** perm!(c[i], write)))]
#[ensures(forall(|i: usize| i < n ==> c[i] == a[i]))]
pub fn copy_through(n: usize, a: &[i32], c: &mut [i32]) {
    #[local]
    let mut t = vec![0; n];
    #[thread(context(perm!(a[tid], 1/4)))]
    #[thread(requires(perm!(t[tid], write)))]
    #[thread(ensures(perm!(t[tid], write) ** t[tid] == a[tid]))]
    for tid in par(0..n) {
        t[tid] = a[tid];
    }
    #[thread(context(perm!(a[tid], 1/4) ** perm!(c[tid], write)))]
    #[thread(requires(perm!(t[tid], write) ** t[tid] == a[tid]))]
    #[thread(ensures(c[tid] == a[tid]))]
    for tid in par(0..n) {
        c[tid] = t[tid];
    }
}

fn main() {}
