// expect: E0608
// The thread claims a difference where it computes a sum: the par block's postcondition fails.
use alpinist::prelude::*;

#[alpinist::kernel]
#[context_everywhere(a.len() == n && b.len() == n && c.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2) ** perm!(b[i], 1/2)))]
#[context(forall(|i: usize| i < n ==> perm!(c[i], write)))]
#[requires(forall(|i: usize| i < n ==> -1000000 <= a[i] && a[i] <= 1000000))]
#[requires(forall(|i: usize| i < n ==> -1000000 <= b[i] && b[i] <= 1000000))]
#[ensures(forall(|i: usize| i < n ==> c[i] == a[i] - b[i]))]
pub fn vector_add(n: usize, a: &[i32], b: &[i32], c: &mut [i32]) {
    #[thread(context(perm!(a[tid], 1/2) ** perm!(b[tid], 1/2) ** perm!(c[tid], write)))]
    #[thread(requires(-1000000 <= a[tid] && a[tid] <= 1000000))]
    #[thread(requires(-1000000 <= b[tid] && b[tid] <= 1000000))]
    #[thread(ensures(c[tid] == a[tid] - b[tid]))]
    for tid in par(0..n) {
        c[tid] = a[tid] + b[tid];
    }
}

fn main() {}
