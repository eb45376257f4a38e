// Thread `tid` copies the mirrored cell: `n - 1 - tid` is a `usize` expression the checker
// proves never below zero (tid < n), as Rust's unsigned arithmetic requires.
#[alpinist::kernel]
#[context_everywhere(a.len() == n && b.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2)))]
#[context(forall(|i: usize| i < n ==> perm!(b[i], write)))]
#[ensures(forall(|i: usize| i < n ==> b[i] == a[n - 1 - i]))]
pub fn reverse_copy(n: usize, a: &[i32], b: &mut [i32]) {
    #[thread(context(perm!(a[n - 1 - tid], 1/2) ** perm!(b[tid], write)))]
    #[thread(ensures(b[tid] == a[n - 1 - tid]))]
    for tid in par(0..n) {
        b[tid] = a[n - 1 - tid];
    }
}
