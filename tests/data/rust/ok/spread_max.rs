// Rounds of a neighbour exchange with two barriers per round, in a loop: each round every
// thread takes the larger of its cell and its right neighbour's. Proves race freedom (which
// permissions each thread holds between the barriers: cell 0, which no left neighbour reads,
// keeps its other half with thread 0) and that the cells stay within their bounds. On the CPU: the loop is hoisted out of the thread loops (its condition is uniform),
// `v` and `r` live across barriers as one cell per thread.
#[alpinist::kernel]
#[context_everywhere(a.len() == n && n <= 1024 && 0 <= rounds)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[requires(forall(|i: usize| i < n ==> 0 <= a[i] && a[i] <= 1000))]
#[ensures(forall(|i: usize| i < n ==> 0 <= a[i] && a[i] <= 1000))]
pub fn spread_max(n: usize, rounds: i32, a: &mut [i32]) {
    #[thread(context(perm!(a[tid], write)))]
    #[thread(requires(0 <= a[tid] && a[tid] <= 1000))]
    #[thread(ensures(0 <= a[tid] && a[tid] <= 1000))]
    for tid in par(0..n) {
        let mut r = 0;
        #[loop_invariant(perm!(a[tid], write) ** 0 <= a[tid] ** a[tid] <= 1000)]
        #[loop_invariant(0 <= r && r <= rounds)]
        while r < rounds {
            #[barrier(requires(perm!(a[tid], write) ** 0 <= a[tid] ** a[tid] <= 1000))]
            #[barrier(ensures(perm!(a[tid], 1/2) ** 0 <= a[tid] ** a[tid] <= 1000))]
            #[barrier(ensures(tid + 1 < n ==> perm!(a[tid + 1], 1/2) ** 0 <= a[tid + 1] ** a[tid + 1] <= 1000))]
            #[barrier(ensures(tid == 0 ==> perm!(a[0], 1/2)))]
            barrier();
            let mut v = a[tid];
            if tid + 1 < n && a[tid + 1] > v {
                v = a[tid + 1];
            }
            #[barrier(requires(perm!(a[tid], 1/2)))]
            #[barrier(requires(tid + 1 < n ==> perm!(a[tid + 1], 1/2)))]
            #[barrier(requires(tid == 0 ==> perm!(a[0], 1/2)))]
            #[barrier(ensures(perm!(a[tid], write)))]
            barrier();
            a[tid] = v;
            r += 1;
        }
    }
}
