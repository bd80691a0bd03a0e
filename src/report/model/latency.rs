//! What the report's latency charts draw: loaded round trips as CDFs, over time, and against goodput, per configuration.

use super::*;

/// What the latency charts draw, per configuration (its index in `configs`) and point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyCharts {
    /// Loaded round trips as a CDF, (ms, percent of probes): each quantile averaged over runs.
    pub cdf: Vec<(usize, Vec<(f64, f64)>)>,
    /// Each interval's median round trip under load, (interval end s, ms): the median over runs.
    pub over_time: Vec<(usize, Vec<(f64, f64)>)>,
    /// Every run's (loaded median round trip in ms, goodput in bit/s).
    pub scatter: Vec<(usize, Vec<(f64, f64)>)>,
    /// UDP arrival gaps merged over runs and directions, (bin centre us, percent of gaps).
    pub gaps: Vec<(usize, Vec<(f64, f64)>)>,
}

/// The latency charts of `results` (run id, result), whose runs are in `runs`.
pub fn latency_charts(
    configs: &[ConfigView],
    runs: &[RunRow],
    results: &[(i64, crate::traffic::result::TestResult)],
) -> LatencyCharts {
    let mut out = LatencyCharts::default();
    for (ci, c) in configs.iter().enumerate() {
        let mine: Vec<&crate::traffic::result::TestResult> = results
            .iter()
            .filter(|(id, _)| {
                runs.iter()
                    .any(|r| r.id == *id && r.configuration == c.label)
            })
            .map(|(_, r)| r)
            .collect();
        let lat: Vec<_> = mine
            .iter()
            .filter_map(|r| r.latency.as_ref().map(|l| (*r, l)))
            .collect();
        if !lat.is_empty() {
            let cdfs: Vec<&Vec<[f64; 2]>> = lat
                .iter()
                .map(|(_, l)| &l.loaded_cdf)
                .filter(|c| !c.is_empty())
                .collect();
            if let Some(first) = cdfs.first() {
                let points = (0..first.len())
                    .filter(|i| {
                        cdfs.iter()
                            .all(|c| c.len() == first.len() && c[*i][0] == first[*i][0])
                    })
                    .map(|i| {
                        let ms: Vec<f64> = cdfs.iter().map(|c| c[i][1]).collect();
                        (describe::mean(&ms), first[i][0] * 100.0)
                    })
                    .collect();
                out.cdf.push((ci, points));
            }
            let mut by_end: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
            for (r, _) in &lat {
                for iv in r.intervals.iter().filter(|i| !i.omitted) {
                    if let Some(ms) = iv.latency.and_then(|l| l.rtt_p50_ms) {
                        by_end
                            .entry((iv.end_s * 1e3).round() as u64)
                            .or_default()
                            .push(ms);
                    }
                }
            }
            out.over_time.push((
                ci,
                by_end
                    .into_iter()
                    .map(|(end, mut v)| {
                        v.sort_by(f64::total_cmp);
                        (end as f64 / 1e3, describe::median_sorted(&v))
                    })
                    .collect(),
            ));
            out.scatter.push((
                ci,
                lat.iter()
                    .filter_map(|(r, l)| Some((l.loaded_p50_ms?, r.summary.bits_per_second)))
                    .collect(),
            ));
        }
        let mut gaps = crate::traffic::histogram::LogHistogram::default();
        for t in mine
            .iter()
            .flat_map(|r| r.directions.iter())
            .filter_map(|d| d.udp_timing.as_ref())
        {
            gaps.merge(&t.inter_arrival);
        }
        let total = gaps.total();
        if total > 0 {
            out.gaps.push((
                ci,
                gaps.bins()
                    .map(|(lo, hi, n)| ((lo * hi).sqrt(), 100.0 * n as f64 / total as f64))
                    .collect(),
            ));
        }
    }
    out
}
