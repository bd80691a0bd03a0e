//! Rank-based comparison: the Mann-Whitney U test (exact null distribution for small samples
//! without ties; normal approximation with tie and continuity correction otherwise) and the
//! Hodges-Lehmann shift estimate with its distribution-free confidence interval
//! (Hollander and Wolfe, Nonparametric Statistical Methods, ch. 4).
//!
//! statrs 0.19's exact Mann-Whitney p-value is wrong when the first sample is not the larger
//! one, so the null distribution is computed here.

use serde::{Deserialize, Serialize};

/// Largest m*n for which the exact null distribution is computed.
const EXACT_LIMIT: usize = 10_000;
/// Largest m*n for which all pairwise differences are materialised.
const PAIRWISE_LIMIT: usize = 4_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    Exact,
    NormalApproximation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U of the `other` sample: pairs (baseline, other) with other > baseline, ties count half.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: Method,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HodgesLehmann {
    /// Median of all differences other_j - baseline_i.
    pub estimate: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// Average ranks of the combined sample; returns (rank sum of `other`, tie group sizes).
fn rank_sum(baseline: &[f64], other: &[f64]) -> (f64, Vec<usize>) {
    let mut all: Vec<(f64, bool)> = baseline
        .iter()
        .map(|&x| (x, false))
        .chain(other.iter().map(|&y| (y, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum = 0.0;
    let mut ties = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        let avg_rank = (i + 1 + j) as f64 / 2.0;
        sum += avg_rank * all[i..j].iter().filter(|x| x.1).count() as f64;
        if j - i > 1 {
            ties.push(j - i);
        }
        i = j;
    }
    (sum, ties)
}

/// The smallest two-sided p the exact test can give for sizes `m` and `n` (all of one sample
/// above all of the other): 2 / C(m+n, m). With 3 runs against 3 it is 0.1, so no result of
/// the exact test can be significant at 95% whatever the data.
pub fn smallest_exact_p(m: usize, n: usize) -> f64 {
    let k = m.min(n);
    // C(m+n, k) as a product of k ratios; k <= 100 under EXACT_LIMIT, bounded in any case.
    let c = (1..=k.min(1000)).fold(1.0f64, |c, i| c * (m + n + 1 - i) as f64 / i as f64);
    (2.0 / c).min(1.0)
}

/// Null distribution of U for sample sizes m and n: counts[u] of arrangements giving U = u.
/// Built with the recurrence f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u) (additions only).
pub fn u_distribution(m: usize, n: usize) -> Vec<f64> {
    // prev[i] is the distribution for (i, j-1); start with j = 0: only U = 0.
    let mut prev: Vec<Vec<f64>> = (0..=m).map(|_| vec![1.0]).collect();
    for j in 1..=n {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(m + 1);
        cur.push(vec![1.0]);
        for i in 1..=m {
            let mut d = vec![0.0; i * j + 1];
            for (u, c) in cur[i - 1].iter().enumerate() {
                d[u + j] += c;
            }
            for (u, c) in prev[i].iter().enumerate() {
                d[u] += c;
            }
            cur.push(d);
        }
        prev = cur;
    }
    prev.pop().unwrap_or_else(|| vec![1.0])
}

/// Cumulative probabilities P(U <= u) from counts.
fn cumulative(counts: &[f64]) -> Vec<f64> {
    let total: f64 = counts.iter().sum();
    let mut acc = 0.0;
    counts
        .iter()
        .map(|c| {
            acc += c;
            acc / total
        })
        .collect()
}

pub fn mann_whitney(baseline: &[f64], other: &[f64]) -> MannWhitney {
    let (m, n) = (other.len(), baseline.len());
    let (r, ties) = rank_sum(baseline, other);
    let u = r - (m * (m + 1)) as f64 / 2.0;
    let mn = (m * n) as f64;
    if ties.is_empty() && m * n <= EXACT_LIMIT {
        let cdf = cumulative(&u_distribution(m, n));
        let k = u.round() as usize;
        let lower = cdf[k];
        let upper = if k == 0 { 1.0 } else { 1.0 - cdf[k - 1] };
        return MannWhitney {
            u,
            p: (2.0 * lower.min(upper)).min(1.0),
            method: Method::Exact,
        };
    }
    let big_n = (m + n) as f64;
    let tie_term: f64 =
        ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / (big_n * (big_n - 1.0));
    let sigma = (mn / 12.0 * ((big_n + 1.0) - tie_term)).sqrt();
    let p = if sigma > 0.0 {
        let z = ((u - mn / 2.0).abs() - 0.5).max(0.0) / sigma;
        (2.0 * super::ttest::normal_cdf(-z.abs())).min(1.0)
    } else {
        1.0
    };
    MannWhitney {
        u,
        p,
        method: Method::NormalApproximation,
    }
}

/// Number of differences other_j - baseline_i that are <= d (both sorted ascending).
fn count_le(base: &[f64], other: &[f64], d: f64) -> usize {
    // For each y, the x with y - x <= d form a suffix of `base`; it shrinks as y grows, so one
    // pointer suffices. The test is on the rounded difference itself, as in brute force.
    let mut i = 0;
    let mut count = 0;
    for &y in other {
        while i < base.len() && y - base[i] > d {
            i += 1;
        }
        count += base.len() - i;
    }
    count
}

/// Smallest difference other_j - baseline_i that is > d.
fn next_above(base: &[f64], other: &[f64], d: f64) -> f64 {
    let mut best = f64::INFINITY;
    let mut i = base.len();
    // For each y (descending), the largest x with y - x > d.
    for &y in other.iter().rev() {
        while i > 0 && y - base[i - 1] <= d {
            i -= 1;
        }
        if i > 0 {
            best = best.min(y - base[i - 1]);
        }
    }
    best
}

/// The k-th smallest (1-based) of all differences other_j - baseline_i; inputs sorted.
pub fn kth_difference(base: &[f64], other: &[f64], k: usize) -> f64 {
    let total = base.len() * other.len();
    let k = k.clamp(1, total.max(1));
    if total <= PAIRWISE_LIMIT {
        let mut d: Vec<f64> = other
            .iter()
            .flat_map(|y| base.iter().map(move |x| y - x))
            .collect();
        let (_, v, _) = d.select_nth_unstable_by(k - 1, |a, b| a.total_cmp(b));
        return *v;
    }
    // Bisection on the value, counting in O(m + n) per step (Johnson and Mizoguchi's idea).
    let (mut lo, mut hi) = (
        other[0] - base[base.len() - 1],
        other[other.len() - 1] - base[0],
    );
    if count_le(base, other, lo) >= k {
        return lo;
    }
    for _ in 0..200 {
        let mid = lo / 2.0 + hi / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if count_le(base, other, mid) >= k {
            hi = mid
        } else {
            lo = mid
        }
    }
    next_above(base, other, lo).min(hi)
}

/// Hodges-Lehmann estimate and interval; inputs need not be sorted.
pub fn hodges_lehmann(baseline: &[f64], other: &[f64], confidence: f64) -> HodgesLehmann {
    let base = super::describe::sorted(baseline);
    let oth = super::describe::sorted(other);
    let (m, n) = (oth.len(), base.len());
    let total = m * n;
    let estimate = if total % 2 == 1 {
        kth_difference(&base, &oth, total / 2 + 1)
    } else {
        kth_difference(&base, &oth, total / 2) / 2.0
            + kth_difference(&base, &oth, total / 2 + 1) / 2.0
    };
    let alpha = 1.0 - confidence;
    // C_alpha: the number of differences cut from each end.
    let c = if total <= EXACT_LIMIT {
        let cdf = cumulative(&u_distribution(m, n));
        // Largest c with P(U <= c - 1) <= alpha / 2.
        (1..=total)
            .take_while(|&c| cdf[c - 1] <= alpha / 2.0)
            .last()
            .unwrap_or(0)
    } else {
        let z = super::ttest::normal_quantile(1.0 - alpha / 2.0);
        let mnf = total as f64;
        (mnf / 2.0 - z * (mnf * (m + n + 1) as f64 / 12.0).sqrt())
            .floor()
            .max(0.0) as usize
    };
    if c == 0 || c > total {
        return HodgesLehmann {
            estimate,
            ci_low: None,
            ci_high: None,
        };
    }
    HodgesLehmann {
        estimate,
        ci_low: Some(kth_difference(&base, &oth, c)),
        ci_high: Some(kth_difference(&base, &oth, total + 1 - c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_exact_p_is_two_over_the_arrangements() {
        assert!((smallest_exact_p(3, 3) - 0.1).abs() < 1e-12);
        assert!((smallest_exact_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        assert_eq!(smallest_exact_p(1, 1), 1.0);
        // The exact test reaches it when the samples do not overlap.
        let mw = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((mw.p - smallest_exact_p(3, 3)).abs() < 1e-12);
    }

    #[test]
    fn null_distribution_is_symmetric_and_complete() {
        let d = u_distribution(3, 4);
        assert_eq!(d.len(), 13);
        assert_eq!(d.iter().sum::<f64>(), 35.0); // C(7, 3)
        for u in 0..d.len() {
            assert_eq!(d[u], d[d.len() - 1 - u]);
        }
        assert_eq!(u_distribution(2, 2), vec![1.0, 1.0, 2.0, 1.0, 1.0]);
    }

    #[test]
    fn exact_p_does_not_depend_on_which_sample_is_larger() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        let b = [3.5, 8.0, 9.0];
        let ab = mann_whitney(&a, &b);
        let ba = mann_whitney(&b, &a);
        assert_eq!(ab.method, Method::Exact);
        assert!((ab.p - ba.p).abs() < 1e-12, "{ab:?} {ba:?}");
        assert_eq!(ab.u + ba.u, 21.0);
    }

    #[test]
    fn kth_difference_by_bisection_agrees_with_brute_force() {
        let base: Vec<f64> = (0..300).map(|i| (i as f64 * 0.37).sin() * 10.0).collect();
        let other: Vec<f64> = (0..200)
            .map(|i| (i as f64 * 0.11).cos() * 7.0 + 1.0)
            .collect();
        let (b, o) = (
            crate::analysis::stats::describe::sorted(&base),
            crate::analysis::stats::describe::sorted(&other),
        );
        let mut all: Vec<f64> = o
            .iter()
            .flat_map(|y| b.iter().map(move |x| y - x))
            .collect();
        all.sort_by(|a, b| a.total_cmp(b));
        for k in [1, 2, 500, 30_000, 59_999, 60_000] {
            let (lo, hi) = (o[0] - b[b.len() - 1], o[o.len() - 1] - b[0]);
            // Force the bisection path by calling the internal helpers directly.
            let mut l = lo;
            let mut h = hi;
            if count_le(&b, &o, l) < k {
                for _ in 0..200 {
                    let mid = l / 2.0 + h / 2.0;
                    if mid <= l || mid >= h {
                        break;
                    }
                    if count_le(&b, &o, mid) >= k {
                        h = mid
                    } else {
                        l = mid
                    }
                }
                assert_eq!(next_above(&b, &o, l).min(h), all[k - 1], "k={k}");
            } else {
                assert_eq!(lo, all[k - 1]);
            }
            assert_eq!(kth_difference(&b, &o, k), all[k - 1]);
        }
    }

    #[test]
    fn hodges_lehmann_of_a_pure_shift_is_the_shift() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b: Vec<f64> = a.iter().map(|x| x + 10.0).collect();
        let hl = hodges_lehmann(&a, &b, 0.95);
        assert_eq!(hl.estimate, 10.0);
        assert!(hl.ci_low.unwrap() <= 10.0 && hl.ci_high.unwrap() >= 10.0);
    }
}
