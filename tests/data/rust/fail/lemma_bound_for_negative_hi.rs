// expect: postcondition may not hold
// A lemma that claims too much: without `0 <= hi` its bound `seg <= 1000 * hi` is false for a
// negative `hi` (the segment is empty, its sum 0). Refused at compile time; with model-based
// quantifier instantiation, libz3 4.8.12 crashed on this module and took rustc with it, so the
// macros verify without it (the message is then "could not decide: postcondition may not hold").
#[alpinist::module]
pub mod bounded {
    /// The sum of `xs[k]` for `max(lo, 0) <= k < hi`.
    #[alpinist::pure]
    #[requires(hi <= xs.len())]
    #[decreases(hi)]
    fn seg(xs: &Seq<Int>, lo: Int, hi: Int) -> Int {
        if hi <= 0 || hi <= lo {
            0
        } else {
            seg(xs, lo, hi - 1) + xs[hi - 1]
        }
    }

    #[alpinist::lemma]
    #[requires(hi <= xs.len())]
    #[requires(forall(|k: Int| 0 <= k && k < xs.len() ==> 0 <= xs[k] && xs[k] <= 1000))]
    #[ensures(0 <= seg(xs, lo, hi) && seg(xs, lo, hi) <= 1000 * hi)]
    #[decreases(hi)]
    fn seg_bound(xs: &Seq<Int>, lo: Int, hi: Int) {
        if 0 < hi && lo < hi {
            seg_bound(xs, lo, hi - 1);
        }
    }

    #[alpinist::kernel]
    #[context_everywhere(xs.len() == n && n <= 1000)]
    #[requires(forall(|k: usize| k < n ==> 0 <= xs[k] && xs[k] <= 1000))]
    pub fn bound(n: usize, #[ghost] xs: Seq<Int>) {
        ghost! {
            seg_bound(xs, 0, n);
        }
    }
}

fn main() {}
