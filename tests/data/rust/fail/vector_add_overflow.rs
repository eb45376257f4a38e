// expect: E0623
// Without bounds on the elements, `a[tid] + b[tid]` may overflow an i32.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && b.len() == n && c.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2) ** perm!(b[i], 1/2)))]
#[context(forall(|i: usize| i < n ==> perm!(c[i], write)))]
pub fn vector_add(n: usize, a: &[i32], b: &[i32], c: &mut [i32]) {
    #[thread(context(perm!(a[tid], 1/2) ** perm!(b[tid], 1/2) ** perm!(c[tid], write)))]
    for tid in par(0..n) {
        c[tid] = a[tid] + b[tid];
    }
}

fn main() {}
