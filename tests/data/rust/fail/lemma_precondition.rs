// expect: precondition of the call may not hold
// The twin of ok/two_halves.rs that calls the lemma with its arguments swapped: the lemma's
// precondition (lo <= mid <= hi) fails at the call (E0603; or E0620 where Z3 finds no values
// through the quantified facts: still refused), so nothing the lemma would give is assumed.
#[alpinist::module]
pub mod two_halves {
    /// The sum of xs[k] for lo <= k < hi.
    #[alpinist::pure]
    #[requires(0 <= lo && lo <= hi && hi <= xs.len())]
    #[decreases(hi - lo)]
    fn seg(xs: &Seq<Int>, lo: Int, hi: Int) -> Int {
        if hi <= lo { 0 } else { seg(xs, lo, hi - 1) + xs[hi - 1] }
    }

    /// Adjacent segments add up (by induction on `hi`).
    #[alpinist::lemma]
    #[requires(0 <= lo && lo <= mid && mid <= hi && hi <= xs.len())]
    #[ensures(seg(xs, lo, mid) + seg(xs, mid, hi) == seg(xs, lo, hi))]
    #[decreases(hi - mid)]
    fn split_seg(xs: &Seq<Int>, lo: Int, mid: Int, hi: Int) {
        if mid < hi {
            split_seg(xs, lo, mid, hi - 1);
        }
    }

    #[alpinist::kernel]
    #[context_everywhere(a.len() == n && xs.len() == n && n <= 1000)]
    #[context(forall(|i: usize| i < n ==> perm!(a[i], 1/2)))]
    #[requires(forall(|i: usize| i < n ==> a[i] == xs[i] && 0 <= a[i] && a[i] <= 1000))]
    #[ensures(result == seg(xs, 0, n))]
    pub fn total(n: usize, a: &[i32], #[ghost] xs: Seq<Int>) -> i32 {
        let m = n / 2;
        let mut low = 0;
        #[loop_invariant(0 <= i && i <= m)]
        #[loop_invariant(forall(|k: usize| k < n ==> perm!(a[k], 1/2) ** (a[k] == xs[k] && 0 <= a[k] && a[k] <= 1000)))]
        #[loop_invariant(low == seg(xs, 0, i) && 0 <= low && low <= 1000 * i)]
        for i in 0..m {
            low += a[i];
        }
        let mut high = 0;
        #[loop_invariant(m <= j && j <= n)]
        #[loop_invariant(forall(|k: usize| k < n ==> perm!(a[k], 1/2) ** (a[k] == xs[k] && 0 <= a[k] && a[k] <= 1000)))]
        #[loop_invariant(high == seg(xs, m, j) && 0 <= high && high <= 1000 * (j - m))]
        for j in m..n {
            high += a[j];
        }
        ghost! {
            split_seg(xs, 0, n, m);
        }
        low + high
    }
}

fn main() {}
