// Branches, a value-`if`, an `assert!`, a zeroed local array and ghost code in one kernel.
#[alpinist::kernel]
#[context_everywhere(a.len() == n)]
#[context(forall(|i: usize| i < n ==> perm!(a[i], write)))]
#[requires(n >= 1)]
#[ensures(forall(|i: usize| i < n ==> 0 <= a[i] && a[i] <= 100))]
#[ensures(forall(|i: usize| i < n ==> a[i] == if old(a[i]) < 0 { 0 } else { if old(a[i]) > 100 { 100 } else { old(a[i]) } }))]
pub fn clamp(n: usize, a: &mut [i32]) {
    let flags = vec![false; n];
    assert!(flags.len() == n);
    #[thread(context(perm!(a[tid], write)))]
    #[thread(ensures(0 <= a[tid] && a[tid] <= 100))]
    #[thread(ensures(a[tid] == if old(a[tid]) < 0 { 0 } else { if old(a[tid]) > 100 { 100 } else { old(a[tid]) } }))]
    for tid in par(0..n) {
        let v = a[tid];
        ghost! {
            let before = v;
        }
        if v < 0 {
            a[tid] = 0;
        } else if v > 100 {
            a[tid] = 100;
        }
    }
}
