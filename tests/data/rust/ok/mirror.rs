// A kernel with a barrier: each thread puts its cell in a local array and, after the barrier,
// reads the mirrored thread's: c[i] == a[n - 1 - i]. The CPU function runs it by
// barrier-interval fission (every thread up to the barrier, then every thread on).
#[alpinist::kernel]
#[context_everywhere(a.len() == n && c.len() == n && n <= 1024)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2) ** perm!(c[i], write)))]
#[ensures(forall(|i: usize| i < n ==> c[i] == a[n - 1 - i]))]
pub fn mirror(n: usize, a: &[i32], c: &mut [i32]) {
    #[local]
    let mut t = vec![0; n];
    #[thread(context(perm!(a[tid], 1/4) ** perm!(a[n - 1 - tid], 1/4) ** perm!(c[tid], write)))]
    #[thread(requires(perm!(t[tid], write)))]
    #[thread(ensures(c[tid] == a[n - 1 - tid]))]
    for tid in par(0..n) {
        let mine = a[tid];
        t[tid] = mine;
        #[barrier(context(perm!(a[tid], 1/4) ** perm!(a[n - 1 - tid], 1/4)))]
        #[barrier(requires(perm!(t[tid], write) ** t[tid] == a[tid]))]
        #[barrier(ensures(perm!(t[n - 1 - tid], 1/2) ** t[n - 1 - tid] == a[n - 1 - tid]))]
        barrier();
        c[tid] = t[n - 1 - tid];
    }
}
