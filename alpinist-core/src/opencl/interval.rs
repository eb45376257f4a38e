//! The interval monoid of Chong, Donaldson and Ketema (POPL 2014), packed in 64 bits.
//!
//! An element (i, j) stands for x_i ⊕ … ⊕ x_j. The word holds `lo` in the high 32 bits and `hi`
//! in the low 32 bits. The identity is the word of (1, 0) and ⊤ (absorbing: "not an interval")
//! the word of (2, 0): both have lo > hi, so neither collides with a real interval (lo ≤ hi).
//! The operator tests the identity first (id ⊕ y = y, x ⊕ id = x), then ⊤ (⊤ absorbs on both
//! sides), then adjacency: (i, j) ⊕ (k, l) = (i, l) if j + 1 = k, else ⊤.
//!
//! The same definition exists twice: [`combine`] for the host (unit-tested case by case below)
//! and [`OPENCL_PRELUDE`] for the device (tested against [`combine`] on a device by the harness
//! tests). Input element k is (k, k); the inclusive scan's output k must be (0, k); the exclusive
//! scan's output is the identity at 0 and (0, k − 1) at k.

/// A packed interval word.
pub type Word = u64;

/// (1, 0): the identity.
pub const IDENTITY: Word = 1 << 32;
/// (2, 0): ⊤, the absorbing element.
pub const TOP: Word = 2 << 32;

/// The word of the interval (lo, hi). Callers pass lo ≤ hi for a real interval.
pub const fn pack(lo: u32, hi: u32) -> Word {
    ((lo as u64) << 32) | hi as u64
}

/// (lo, hi) of a word (also of the identity and ⊤, whose lo > hi).
pub const fn unpack(word: Word) -> (u32, u32) {
    ((word >> 32) as u32, word as u32)
}

/// The monoid operator on the host.
pub fn combine(x: Word, y: Word) -> Word {
    if x == IDENTITY {
        return y;
    }
    if y == IDENTITY {
        return x;
    }
    if x == TOP || y == TOP {
        return TOP;
    }
    let (i, j) = unpack(x);
    let (k, l) = unpack(y);
    if u64::from(j) + 1 == u64::from(k) {
        pack(i, l)
    } else {
        TOP
    }
}

/// The input element at position k: (k, k).
pub const fn input(k: u32) -> Word {
    pack(k, k)
}

/// The expected output at position k of an inclusive or exclusive scan.
pub const fn expected(k: u32, exclusive: bool) -> Word {
    if exclusive {
        if k == 0 {
            IDENTITY
        } else {
            pack(0, k - 1)
        }
    } else {
        pack(0, k)
    }
}

/// Human-readable form: `(i,j)`, `id` or `⊤`.
pub fn show(word: Word) -> String {
    match word {
        IDENTITY => "id".to_string(),
        TOP => "⊤".to_string(),
        _ => {
            let (lo, hi) = unpack(word);
            format!("({lo},{hi})")
        }
    }
}

/// OpenCL C definitions of `ELEM`, `IDENTITY` and `OP(a, b)` for the interval monoid, plus the
/// device-side check kernel `alp_interval_check`. Mirrors [`combine`] line by line.
pub const OPENCL_PRELUDE: &str = r#"
#define ELEM ulong
#define IDENTITY ((ulong)1 << 32)
#define ALP_TOP ((ulong)2 << 32)
static inline ulong alp_interval_op(ulong x, ulong y) {
  if (x == IDENTITY) return y;
  if (y == IDENTITY) return x;
  if (x == ALP_TOP || y == ALP_TOP) return ALP_TOP;
  ulong j = x & 0xFFFFFFFFUL;
  ulong k = y >> 32;
  return (j + 1 == k) ? ((x & 0xFFFFFFFF00000000UL) | (y & 0xFFFFFFFFUL)) : ALP_TOP;
}
#define OP(a, b) alp_interval_op((a), (b))

/* One work-item per output cell of one run of length n: counts the cells that differ from the
   expected interval and keeps the smallest such index (n when none). */
__kernel void alp_interval_check(__global const ulong* out, int n, int exclusive,
                                 __global uint* bad, __global uint* first_bad) {
  int k = (int)get_global_id(0);
  if (k >= n) return;
  /* (0, h) packs as the word h */
  ulong want = exclusive ? (k == 0 ? IDENTITY : (ulong)(k - 1)) : (ulong)k;
  if (out[k] != want) {
    atomic_inc(bad);
    atomic_min(first_bad, (uint)k);
  }
}

/* Applies OP to every pair (a[i], b[i]); lets the tests compare the device operator with the
   host's. */
__kernel void alp_op_pairs(__global const ulong* a, __global const ulong* b,
                           __global ulong* r, int n) {
  int i = (int)get_global_id(0);
  if (i < n) r[i] = OP(a[i], b[i]);
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    const A: Word = pack(0, 3);
    const B: Word = pack(4, 7);
    const C: Word = pack(8, 8);

    #[test]
    fn identity_and_top_are_distinct_non_intervals() {
        assert_ne!(IDENTITY, TOP);
        let (lo, hi) = unpack(IDENTITY);
        assert!(lo > hi);
        let (lo, hi) = unpack(TOP);
        assert!(lo > hi);
        for k in [0, 1, 2, 1000, u32::MAX] {
            assert_ne!(input(k), IDENTITY);
            assert_ne!(input(k), TOP);
        }
    }

    #[test]
    fn pack_and_unpack_are_inverse() {
        for (lo, hi) in [(0, 0), (0, 5), (7, 9), (u32::MAX, u32::MAX), (1, 0)] {
            assert_eq!(unpack(pack(lo, hi)), (lo, hi));
        }
        assert_eq!(pack(1, 0), IDENTITY);
        assert_eq!(pack(2, 0), TOP);
    }

    #[test]
    fn identity_is_neutral_on_the_left() {
        for x in [A, B, TOP, IDENTITY, input(0)] {
            assert_eq!(combine(IDENTITY, x), x);
        }
    }

    #[test]
    fn identity_is_neutral_on_the_right() {
        for x in [A, B, TOP, IDENTITY, input(0)] {
            assert_eq!(combine(x, IDENTITY), x);
        }
    }

    #[test]
    fn identity_with_top_is_top_on_both_sides() {
        assert_eq!(combine(IDENTITY, TOP), TOP);
        assert_eq!(combine(TOP, IDENTITY), TOP);
    }

    #[test]
    fn top_absorbs_on_both_sides() {
        for x in [A, B, C, input(0), TOP] {
            assert_eq!(combine(TOP, x), TOP);
            assert_eq!(combine(x, TOP), TOP);
        }
    }

    #[test]
    fn adjacent_intervals_join() {
        assert_eq!(combine(A, B), pack(0, 7));
        assert_eq!(combine(B, C), pack(4, 8));
        assert_eq!(combine(input(0), input(1)), pack(0, 1));
    }

    #[test]
    fn swapped_adjacent_intervals_are_top() {
        assert_eq!(combine(B, A), TOP);
        assert_eq!(combine(input(1), input(0)), TOP);
    }

    #[test]
    fn non_adjacent_intervals_are_top() {
        assert_eq!(combine(A, C), TOP);
        assert_eq!(combine(input(0), input(2)), TOP);
    }

    #[test]
    fn overlapping_intervals_are_top() {
        assert_eq!(combine(pack(0, 4), pack(3, 7)), TOP);
        assert_eq!(combine(A, A), TOP);
        assert_eq!(combine(input(3), input(3)), TOP);
    }

    #[test]
    fn no_overflow_at_the_top_of_the_range() {
        assert_eq!(combine(pack(0, u32::MAX), pack(0, 1)), TOP);
        assert_eq!(
            combine(pack(0, u32::MAX - 1), input(u32::MAX)),
            pack(0, u32::MAX)
        );
    }

    #[test]
    fn associative_on_adjacent_triples() {
        assert_eq!(combine(combine(A, B), C), combine(A, combine(B, C)));
        assert_eq!(combine(combine(A, C), B), combine(A, combine(C, B)));
    }

    #[test]
    fn sequential_scan_gives_the_expected_words() {
        let mut acc = IDENTITY;
        for k in 0..10 {
            assert_eq!(acc, expected(k, true));
            acc = combine(acc, input(k));
            assert_eq!(acc, expected(k, false));
        }
    }

    #[test]
    fn show_names_the_special_words() {
        assert_eq!(show(IDENTITY), "id");
        assert_eq!(show(TOP), "⊤");
        assert_eq!(show(pack(2, 5)), "(2,5)");
    }
}
