//! Everything a report shows, computed once from the database: per-configuration statistics,
//! comparisons and plain-words findings (from `stats` and `campaign`), time series, counters
//! that moved, failures, and the window/RTT ceiling when it applies. The renderers only format.

use crate::analysis::stats::{describe, ttest};
use crate::campaigns::campaign::{self, ConfigSummary, Group, Metric};
use crate::campaigns::plan::PlanFacts;
use crate::campaigns::store::{CampaignRow, ConfigRow, RunRow, Store};
use std::collections::BTreeMap;

mod fastest;
mod latency;
use fastest::fastest;
pub use latency::*;

/// One configuration's numbers.
#[derive(Debug, Clone)]
pub struct ConfigView {
    pub label: String,
    pub dims: Vec<(String, String)>,
    pub summary: ConfigSummary,
    /// Goodput of each successful run that is not an outlier, bit/s, and its round.
    pub values: Vec<f64>,
    pub rounds: Vec<u32>,
    /// 95% CI of the mean goodput.
    pub mean_ci: Option<(f64, f64)>,
    pub retransmits_mean: Option<f64>,
    pub loss_mean: Option<f64>,
    pub jitter_mean: Option<f64>,
    pub cpu_local_mean: Option<f64>,
    pub cpu_remote_mean: Option<f64>,
    /// The window ceiling of the configuration's TCP runs: the window they had over the
    /// path's idle RTT, bit/s, as `explain` judges it (`campaigns::explain::ceiling`).
    pub ceiling_bps: Option<f64>,
}

/// A counter that moved during the runs of a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterMove {
    pub configuration: String,
    pub counter: String,
    pub total: i64,
    pub runs: usize,
}

/// One run's goodput over time.
#[derive(Debug, Clone)]
pub struct Series {
    pub configuration: usize,
    pub round: u32,
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct ReportModel {
    pub campaign: CampaignRow,
    /// Dimensions and their values, in plan order.
    pub dims: Vec<(String, Vec<String>)>,
    pub configs: Vec<ConfigView>,
    pub groups: Vec<Group>,
    /// The dimension the comparisons are by.
    pub compared_by: Option<String>,
    pub findings: Vec<String>,
    pub failed: Vec<(String, u32, String)>,
    pub counters: Vec<CounterMove>,
    pub series: Vec<Series>,
    pub udp: bool,
    pub total_runs: usize,
    /// The doctor's warnings and problems recorded with the campaign.
    pub doctor: Vec<crate::host::doctor::Finding>,
    /// The answer (`netsweep explain`), one sentence a line: the report's first section.
    pub answer: Vec<String>,
    /// The path's rate, when the plan's target says it (a lab).
    pub link_bps: Option<f64>,
    /// Latency probe and UDP timing figures, for the runs that have them.
    pub latency: LatencyCharts,
    /// Runs set aside as far outside their siblings (kept when the plan says so).
    pub outliers: Vec<campaign::OutlierRun>,
    pub outliers_kept: bool,
    /// How comparisons are judged (the plan's `[answer]`).
    pub judging: campaign::Judging,
    /// TCP retransmissions the runs counted in their omitted intervals (in no figure).
    pub omitted_retransmits: i64,
}

fn mean_ci(v: &[f64]) -> Option<(f64, f64)> {
    if v.len() < 2 {
        return None;
    }
    let m = describe::mean(v);
    let half = ttest::t_critical(0.95, (v.len() - 1) as f64) * describe::stddev(v)
        / (v.len() as f64).sqrt();
    Some((m - half, m + half))
}

impl ReportModel {
    pub fn build(store: &Store, campaign: i64) -> anyhow::Result<ReportModel> {
        let c = store.campaign(campaign)?;
        let facts = c.facts.clone();
        let all_runs = store.runs(campaign)?;
        let configs_rows = reported_configurations(store.configurations(campaign)?, &all_runs);
        let ask = crate::campaigns::explain::Ask::new(Metric::BitsPerSecond);
        let judging = ask.judging(&facts);
        let outliers_kept = ask.keeps_outliers(&facts);
        let (screened, outliers) = campaign::screen(&all_runs, Metric::BitsPerSecond);
        let runs = if outliers_kept {
            all_runs.clone()
        } else {
            screened
        };
        let dims = dimensions(&configs_rows);
        let labels: Vec<String> = configs_rows.iter().map(|r| r.label.clone()).collect();
        let summaries = campaign::summary(&runs, &labels, Metric::BitsPerSecond);
        let configs: Vec<ConfigView> = configs_rows
            .iter()
            .zip(summaries)
            .map(|(row, summary)| config_view(row, summary, &runs))
            .collect();
        let compared_by = dims
            .iter()
            .rev()
            .find(|(_, v)| v.len() > 1)
            .map(|(d, _)| d.clone());
        let groups = match dims.iter().find(|(d, _)| Some(d) == compared_by.as_ref()) {
            Some((by, values)) => {
                campaign::compare(&runs, by, values, &[], Metric::BitsPerSecond, &judging)
            }
            None => Vec::new(),
        };
        let failed = all_runs
            .iter()
            .filter(|r| r.status != "ok")
            .map(|r| {
                (
                    r.configuration.clone(),
                    r.round,
                    r.error.clone().unwrap_or_default(),
                )
            })
            .collect();
        let counters = counter_moves(store, campaign, &runs)?;
        let series = interval_series(store, campaign, &runs, &configs)?;
        let udp = runs.iter().any(|r| r.lost_percent.is_some());
        let doctor = doctor_warnings(store, campaign, c.host_facts_json.as_deref())?;
        let mut model = ReportModel {
            campaign: c,
            dims,
            configs,
            groups,
            compared_by,
            findings: Vec::new(),
            failed,
            counters,
            series,
            udp,
            total_runs: all_runs.len(),
            doctor,
            answer: Vec::new(),
            link_bps: None,
            latency: LatencyCharts::default(),
            outliers,
            outliers_kept,
            judging,
            omitted_retransmits: store.omitted_retransmits(campaign)?,
        };
        let configs_for_answer = configs_rows;
        let results: Vec<(i64, crate::traffic::result::TestResult)> = store
            .run_results(campaign)?
            .into_iter()
            .filter_map(|(id, json)| Some((id, serde_json::from_str(json.as_deref()?).ok()?)))
            .collect();
        model.latency = latency_charts(&model.configs, &runs, &results);
        let counters: Vec<(i64, serde_json::Value)> = store
            .run_counters(campaign)?
            .into_iter()
            .filter_map(|(id, json)| Some((id, serde_json::from_str(json.as_deref()?).ok()?)))
            .collect();
        model.link_bps = common_link(&configs_for_answer, &facts);
        let explanation = crate::campaigns::explain::explain(
            &all_runs,
            &configs_for_answer,
            &results,
            &counters,
            &facts,
            &ask,
        );
        model.answer = explanation.answer.lines().map(str::to_string).collect();
        // A comparison that cannot matter by construction reads as `run` and `compare` print it.
        for g in &mut model.groups {
            if let Some(a) = g.analysis.as_mut() {
                for c in &mut a.comparisons {
                    c.verdict = explanation.settled.verdict(c, &g.context);
                }
            }
        }
        for c in &mut model.configs {
            c.ceiling_bps = explanation
                .limits
                .iter()
                .find(|l| l.configuration == c.label)
                .and_then(|l| l.window_bps);
        }
        model.findings = findings(&model);
        Ok(model)
    }
}

/// One path rate for the charts' line: the rate every configuration's stored path has (the
/// target's when they have none); none when they differ (a swept `rate`: each configuration's
/// own ceiling is then in the explanation's limits).
fn common_link(configs: &[ConfigRow], facts: &PlanFacts) -> Option<f64> {
    let mut rates = configs.iter().map(|c| facts.link_of(c.resolved.as_ref()));
    let first = rates.next()??;
    rates.all(|r| r == Some(first)).then_some(first)
}

/// Plans up to this many configurations are reported whole, runs or not.
pub const REPORTED_WHOLE: usize = 1000;

/// The configurations the report shows: all of a plan of up to `REPORTED_WHOLE`, else those
/// with stored runs, so that the report's cost follows the runs (a plan of 100,000
/// configurations with 18 runs once took 325 s).
fn reported_configurations(all: Vec<ConfigRow>, runs: &[RunRow]) -> Vec<ConfigRow> {
    if all.len() <= REPORTED_WHOLE {
        return all;
    }
    let ran: std::collections::HashSet<&str> =
        runs.iter().map(|r| r.configuration.as_str()).collect();
    all.into_iter()
        .filter(|c| ran.contains(c.label.as_str()))
        .collect()
}

/// The dimensions of a campaign with their values, in the order the configurations use them.
fn dimensions(configs: &[ConfigRow]) -> Vec<(String, Vec<String>)> {
    let mut dims: Vec<(String, Vec<String>)> = Vec::new();
    for cfg in configs {
        for (k, v) in &cfg.dims {
            match dims.iter_mut().find(|(d, _)| d == k) {
                Some((_, vals)) if !vals.contains(v) => vals.push(v.clone()),
                Some(_) => {}
                None => dims.push((k.clone(), vec![v.clone()])),
            }
        }
    }
    dims
}

/// One configuration's figures over its successful runs.
fn config_view(row: &ConfigRow, summary: ConfigSummary, runs: &[RunRow]) -> ConfigView {
    let ok: Vec<&RunRow> = runs
        .iter()
        .filter(|r| r.configuration == row.label && r.status == "ok")
        .collect();
    let pick = |f: &dyn Fn(&RunRow) -> Option<f64>| {
        let v: Vec<f64> = ok.iter().filter_map(|r| f(r)).collect();
        (!v.is_empty()).then(|| describe::mean(&v))
    };
    let (values, rounds): (Vec<f64>, Vec<u32>) = ok
        .iter()
        .filter_map(|r| Some((r.bits_per_second?, r.round)))
        .unzip();
    ConfigView {
        label: row.label.clone(),
        dims: row.dims.clone(),
        mean_ci: mean_ci(&values),
        values,
        rounds,
        summary,
        retransmits_mean: pick(&|r| r.retransmits.map(|v| v as f64)),
        loss_mean: pick(&|r| r.lost_percent),
        jitter_mean: pick(&|r| r.jitter_ms),
        cpu_local_mean: pick(&|r| r.cpu_local_percent),
        cpu_remote_mean: pick(&|r| r.cpu_remote_percent),
        // The answer's (`ReportModel::build`), so chart and answer give one figure.
        ceiling_bps: None,
    }
}

/// The measured (not omitted) interval goodput of every run, as time series.
fn interval_series(
    store: &Store,
    campaign: i64,
    runs: &[RunRow],
    configs: &[ConfigView],
) -> anyhow::Result<Vec<Series>> {
    let label_pos: BTreeMap<&str, usize> = configs
        .iter()
        .enumerate()
        .map(|(i, c)| (c.label.as_str(), i))
        .collect();
    let mut by_run: BTreeMap<i64, Vec<(f64, f64)>> = BTreeMap::new();
    for (run, end, bps, omitted) in store.interval_totals(campaign)? {
        if !omitted {
            by_run.entry(run).or_default().push((end, bps));
        }
    }
    Ok(runs
        .iter()
        .filter_map(|r| {
            Some(Series {
                configuration: *label_pos.get(r.configuration.as_str())?,
                round: r.round,
                points: by_run.remove(&r.id)?,
            })
        })
        .collect())
}

/// The doctor's warnings and problems stored with the campaign: this host's, then those a
/// lab's guest found inside itself (its NIC model, with the fix), stored with host b's facts.
fn doctor_warnings(
    store: &Store,
    campaign: i64,
    host_facts: Option<&str>,
) -> anyhow::Result<Vec<crate::host::doctor::Finding>> {
    use crate::host::doctor::{Diagnosis, Finding, Severity};
    let serious = |d: Diagnosis| -> Vec<Finding> {
        d.findings
            .into_iter()
            .filter(|f| f.severity >= Severity::Warning)
            .collect()
    };
    let mut out: Vec<Finding> = store
        .doctor(campaign)?
        .and_then(|j| serde_json::from_str::<Diagnosis>(&j).ok())
        .map(serious)
        .unwrap_or_default();
    // Every guest the campaign booted (one per NIC model), else the one at its start.
    let facts = host_facts
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .unwrap_or_default();
    // The fix of a model's advice: the exact commands come from the domain's own definition
    // (its interface's type, source and MAC), which `doctor --libvirt` reads; a template's
    // (domain "guest" on network "default") failed when pasted (a trial's finding).
    let fix = match facts["libvirt"]["domain"].as_str() {
        Some(domain) => {
            let connect = facts["libvirt"]["uri"]
                .as_str()
                .map(|u| format!(" --connect {}", crate::paste::quote(u)))
                .unwrap_or_default();
            format!(
                "netsweep doctor --libvirt {}{connect}   (prints this domain's exact commands: \
                 virsh update-device of its interface with the virtio model, then a restart)",
                crate::paste::quote(domain)
            )
        }
        None => "for a libvirt domain: netsweep doctor --libvirt NAME (NAME as `virsh list \
                 --all` shows it) prints its exact commands"
            .to_string(),
    };
    let guests: Vec<serde_json::Value> = match facts["guests"].as_object() {
        Some(g) => {
            // What `doctor --libvirt` would tell a libvirt user with each model measured.
            for nic in g.keys() {
                out.extend(
                    crate::host::doctor::libvirt::advice_for_model(nic)
                        .into_iter()
                        .filter(|f| f.severity >= Severity::Warning)
                        .map(|mut f| {
                            f.title = format!("nic={nic}, as a libvirt guest: {}", f.title);
                            f.fix = Some(fix.clone());
                            f
                        }),
                );
            }
            g.values().cloned().collect()
        }
        None => vec![facts["b"].clone()],
    };
    for g in guests {
        let Ok(d) = serde_json::from_value::<Diagnosis>(g["doctor"].clone()) else {
            continue;
        };
        out.extend(serious(d).into_iter().map(|mut f| {
            f.title = format!("host b (the lab's guest): {}", f.title);
            f
        }));
    }
    Ok(out)
}

fn counter_moves(
    store: &Store,
    campaign: i64,
    runs: &[RunRow],
) -> anyhow::Result<Vec<CounterMove>> {
    let label_of: BTreeMap<i64, &str> = runs
        .iter()
        .map(|r| (r.id, r.configuration.as_str()))
        .collect();
    let mut totals: BTreeMap<(String, String), (i64, usize)> = BTreeMap::new();
    for (run, json) in store.run_counters(campaign)? {
        let Some(v) = json.and_then(|j| serde_json::from_str::<serde_json::Value>(&j).ok()) else {
            continue;
        };
        let Some(obj) = v.as_object() else { continue };
        for (side, delta) in obj {
            let Ok(d) = serde_json::from_value::<crate::host::counters::Delta>(delta.clone())
            else {
                continue;
            };
            for (name, value) in crate::host::counters::trouble(&d) {
                let key = (
                    label_of.get(&run).copied().unwrap_or("?").to_string(),
                    format!("{side}: {name}"),
                );
                let e = totals.entry(key).or_insert((0, 0));
                e.0 += value;
                e.1 += 1;
            }
        }
    }
    Ok(totals
        .into_iter()
        .map(|((configuration, counter), (total, runs))| CounterMove {
            configuration,
            counter,
            total,
            runs,
        })
        .collect())
}

fn mbit(v: f64) -> String {
    crate::units::BitRate(v).to_string()
}

/// The headline findings, in words.
fn findings(m: &ReportModel) -> Vec<String> {
    let mut out = Vec::new();
    let ok_configs: Vec<&ConfigView> = m
        .configs
        .iter()
        .filter(|c| c.summary.description.is_some())
        .collect();
    if ok_configs.is_empty() {
        out.push(format!(
            "No run succeeded ({} runs stored): see the failures below.",
            m.total_runs
        ));
        return out;
    }
    let stated = fastest::stated_comparisons(m);
    out.extend(fastest(&ok_configs, m.link_bps, &m.judging, &stated));
    for o in &m.outliers {
        out.push(if m.outliers_kept {
            format!(
                "{} (kept: the plan says keep_outliers).",
                o.text.replace(", excluded from the effects", "")
            )
        } else {
            format!("{}, and from every number below.", o.text)
        });
    }
    if ok_configs.len() == 1 {
        out.push("A single configuration: nothing to compare. Add a [matrix] dimension to compare settings.".into());
    }
    for g in &m.groups {
        let ctx = if g.context.is_empty() {
            String::new()
        } else {
            format!("At {}: ", g.context)
        };
        match &g.analysis {
            Some(a) => out.extend(a.comparisons.iter().map(|c| format!("{ctx}{}.", c.verdict))),
            None => out.push(format!("{ctx}{}.", g.note.clone().unwrap_or_default())),
        }
    }
    for c in &ok_configs {
        if let Some(d) = &c.summary.description {
            if c.values.len() == 1 {
                out.push(format!(
                    "{}: a single run; repeat it to see its spread.",
                    c.label
                ));
            }
            if d.cv.is_some_and(|cv| cv > describe::HIGH_CV) {
                out.push(format!(
                    "{} is noisy: CV {:.1}% over {} runs.",
                    c.label,
                    d.cv.unwrap_or(0.0) * 100.0,
                    d.n
                ));
            }
            if !d.outliers.is_empty() && m.outliers_kept {
                out.push(format!(
                    "{} has {} run(s) outside Tukey's fences, kept in every number: {}.",
                    c.label,
                    d.outliers.len(),
                    d.outliers
                        .iter()
                        .map(|v| mbit(*v))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    if !m.failed.is_empty() {
        out.push(format!(
            "{} of {} runs failed; they are listed at the end and left out of the statistics.",
            m.failed.len(),
            m.total_runs
        ));
    }
    out.extend(retransmission_finding(
        &m.counters,
        &m.configs,
        m.omitted_retransmits,
    ));
    out
}

/// The kernel's TCP retransmission counters beside the tests' own: where they differ, why
/// (the omitted warm-up's retransmissions, which no run's figures hold, are counted apart).
fn retransmission_finding(
    counters: &[CounterMove],
    configs: &[ConfigView],
    omitted: i64,
) -> Option<String> {
    let retrans = || counters.iter().filter(|c| c.counter.contains("Retrans"));
    let moved: i64 = retrans().map(|c| c.total).sum();
    if moved <= 0 {
        return None;
    }
    let sockets = configs
        .iter()
        .filter_map(|c| c.retransmits_mean.map(|r| r * c.values.len() as f64))
        .sum::<f64>()
        .round() as i64;
    let mut sides: Vec<&str> = retrans()
        .filter_map(|c| c.counter.split_once(':').map(|(side, _)| side))
        .collect();
    sides.sort_unstable();
    sides.dedup();
    let sides = sides.join(" and ");
    let warm_up = omitted.clamp(0, (moved - sockets).max(0));
    let others = moved - sockets - warm_up;
    let why = match moved.cmp(&sockets) {
        std::cmp::Ordering::Greater if warm_up > 0 && others > 0 => format!(
            "more: {warm_up} of them fell in the runs' omitted first seconds (-O, slow start \
             among them), which the tests' figures leave out, and the other {others} are other \
             TCP connections of the hosts'"
        ),
        std::cmp::Ordering::Greater if warm_up > 0 => format!(
            "more: the {warm_up} more fell in the runs' omitted first seconds (-O, slow start \
             among them), which the tests' figures leave out"
        ),
        std::cmp::Ordering::Greater => {
            "more: those counters include every other TCP connection of the hosts".to_string()
        }
        std::cmp::Ordering::Less => format!(
            "fewer: the kernel's counters were read on the {sides} side only, so they miss the \
             streams sent from elsewhere"
        ),
        std::cmp::Ordering::Equal => "the same".to_string(),
    };
    Some(format!(
        "The kernel counted {moved} TCP retransmissions during the runs (host-wide counters of \
         /proc/net/snmp on the {sides} side: every TCP connection there, control connections \
         included); the tests' own data sockets counted {sockets} (TCP_INFO of each sending \
         stream, omitted intervals left out): {why}."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(label: &str, values: &[f64]) -> ConfigView {
        let row = ConfigRow {
            id: 1,
            position: 0,
            label: label.into(),
            dims: Vec::new(),
            resolved: None,
        };
        let summary = ConfigSummary {
            label: label.into(),
            ok: values.len(),
            failed: 0,
            description: Some(crate::analysis::stats::describe(values)),
        };
        let runs: Vec<RunRow> = values
            .iter()
            .enumerate()
            .map(|(i, v)| RunRow {
                id: i as i64,
                configuration: label.into(),
                config_position: 0,
                dims: Vec::new(),
                round: i as u32 + 1,
                started_unix: None,
                sequence: i as u64,
                status: "ok".into(),
                error: None,
                bits_per_second: Some(*v),
                retransmits: None,
                lost_percent: None,
                jitter_ms: None,
                cpu_local_percent: None,
                cpu_remote_percent: None,
                loaded_p50_ms: None,
                loaded_p99_ms: None,
                added_latency_ms: None,
                transfer_time_ratio: None,
                tcp_efficiency_percent: None,
                buffer_delay_percent: None,
                transactions_per_second: None,
                latency_p99_us: None,
            })
            .collect();
        config_view(&row, summary, &runs)
    }

    /// Regression (a trial's vt report): 580 kernel retransmissions against the sockets' 6 were
    /// put on "every other TCP connection of the hosts", where 513 of one run's 518 fell in its
    /// omitted first interval (slow start overshooting the path's queue).
    #[test]
    fn retransmissions_of_the_omitted_warm_up_are_told_apart_from_other_connections() {
        let moved = |total| CounterMove {
            configuration: "window=64K".into(),
            counter: "client: RetransSegs".into(),
            total,
            runs: 3,
        };
        let mut config = view("window=64K", &[6e6, 6.1e6, 6.2e6]);
        config.retransmits_mean = Some(2.0);
        let line = |total, omitted| {
            retransmission_finding(&[moved(total)], std::slice::from_ref(&config), omitted)
                .expect("a finding")
        };
        let all_warm_up = line(519, 513);
        assert!(
            all_warm_up.contains("counted 519 TCP")
                && all_warm_up.contains("data sockets counted 6 ")
                && all_warm_up.contains("the 513 more fell in the runs' omitted first seconds")
                && !all_warm_up.contains("other TCP connections"),
            "{all_warm_up}"
        );
        let both = line(580, 513);
        assert!(
            both.contains("513 of them fell in the runs' omitted")
                && both.contains("the other 61 are other TCP connections"),
            "{both}"
        );
        let none_omitted = line(580, 0);
        assert!(
            none_omitted.contains("every other TCP connection of the hosts"),
            "{none_omitted}"
        );
        assert!(line(5, 513).contains("fewer: the kernel's counters were read on the client side"));
        assert!(retransmission_finding(&[moved(0)], &[config.clone()], 9).is_none());
    }

    /// Regression: "Fastest configuration: window=4M congestion=bbr at 813 Mbits/sec (95% CI
    /// 283 Mbits/sec to 1.34 Gbits/sec)" on a 1 Gbit/s path, with bbr and cubic
    /// indistinguishable (p = 0.71).
    #[test]
    fn fastest_only_when_distinguishable_and_cis_beyond_the_path_are_called_noisy() {
        let bbr = view("window=4M congestion=bbr", &[500e6, 980e6, 960e6]);
        let cubic = view("window=4M congestion=cubic", &[700e6, 890e6, 760e6]);
        let slow = view("window=64K congestion=cubic", &[25e6, 26e6, 25.5e6]);
        let lines = fastest(
            &[&slow, &cubic, &bbr],
            Some(1e9),
            &campaign::Judging::default(),
            &[],
        );
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert!(
            l.starts_with("The fastest group: window=4M congestion=bbr"),
            "{l}"
        );
        assert!(
            l.contains("window=4M congestion=cubic") && l.contains("none shown slower"),
            "{l}"
        );
        assert!(!l.contains("64K"), "{l}");
        assert!(
            l.contains("beyond the path's 1.00 Gbits/sec") && l.contains("too noisy"),
            "{l}"
        );
        // A clear winner is called the fastest, and said to be faster than the next.
        let fast = view("window=4M", &[950e6, 951e6, 949e6]);
        let lines = fastest(
            &[&slow, &fast],
            Some(1e9),
            &campaign::Judging::default(),
            &[],
        );
        assert!(
            lines[0].starts_with("Fastest configuration: window=4M at"),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("faster than the next (window=64K congestion=cubic)"));
        assert!(!lines[0].contains("noisy"));
    }

    /// Regression (issue 39): the report put nic=e1000 direction=reverse (298 Mbit/s, every
    /// run below every run of virtio) in "the fastest group" with virtio (1.39 Gbit/s): each
    /// pair judged by a paired t over its own 3 rounds. On the whole design's pooled error
    /// (6 configurations, 3 rounds) the fastest is alone.
    #[test]
    fn a_configuration_whose_every_run_is_slower_is_not_in_the_fastest_group() {
        let v = |label: &str, values: &[f64]| view(label, values);
        let all = [
            v("nic=virtio direction=forward", &[1.30e9, 1.52e9, 1.35e9]),
            v("nic=virtio direction=reverse", &[1.15e9, 1.32e9, 1.24e9]),
            v("nic=e1000 direction=forward", &[0.52e9, 0.61e9, 0.47e9]),
            v("nic=e1000 direction=reverse", &[0.20e9, 0.47e9, 0.224e9]),
            v("nic=rtl8139 direction=forward", &[0.094e9, 0.12e9, 0.101e9]),
            v("nic=rtl8139 direction=reverse", &[0.052e9, 0.071e9, 0.06e9]),
        ];
        let refs: Vec<&ConfigView> = all.iter().collect();
        let lines = fastest(&refs, None, &campaign::Judging::default(), &[]);
        let text = lines.join("\n");
        assert!(!text.contains("nic=e1000 direction=reverse ("), "{text}");
        assert!(!text.contains("nic=e1000 direction=forward ("), "{text}");
        // A pair the report's comparisons show different is never together in the group.
        let close = [
            v("a", &[1.00e9, 1.20e9, 0.90e9]),
            v("b", &[1.10e9, 0.95e9, 0.92e9]),
        ];
        let refs: Vec<&ConfigView> = close.iter().collect();
        let text = fastest(&refs, None, &campaign::Judging::default(), &[]).join("\n");
        assert!(text.starts_with("The fastest group: a"), "{text}");
        let stated = [fastest::Stated {
            slower: "b".into(),
            faster: "a".into(),
            shown: true,
        }];
        let text = fastest(&refs, None, &campaign::Judging::default(), &stated).join("\n");
        assert!(text.starts_with("Fastest configuration: a"), "{text}");
        assert!(text.contains("faster than the next (b)"), "{text}");
        // A pair it states without a difference is judged by that verdict, not by the
        // headline's own family; only every run below every run of a member keeps one out,
        // and says so.
        let far = [
            v("a", &[1.00e9, 1.01e9, 0.99e9]),
            v("b", &[0.50e9, 0.51e9, 0.49e9]),
        ];
        let refs: Vec<&ConfigView> = far.iter().collect();
        let undecided = [fastest::Stated {
            slower: "b".into(),
            faster: "a".into(),
            shown: false,
        }];
        let text = fastest(&refs, None, &campaign::Judging::default(), &undecided).join("\n");
        assert!(text.starts_with("Fastest configuration: a"), "{text}");
        assert!(
            text.contains("b is not among the fastest: each of its runs is below"),
            "{text}"
        );
    }

    #[test]
    fn latency_charts_average_each_quantile_and_keep_every_run() {
        use crate::traffic::latency::summary::LatencyResult;
        let spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(1));
        let result = |p50: f64, bps: f64| {
            let mut r = crate::traffic::result::build(
                &spec,
                Default::default(),
                &[],
                Default::default(),
                None,
            );
            r.summary.bits_per_second = bps;
            r.latency = Some(LatencyResult {
                loaded_p50_ms: Some(p50),
                loaded_cdf: vec![[0.0, p50 - 1.0], [0.5, p50], [1.0, p50 + 1.0]],
                ..LatencyResult::default()
            });
            r
        };
        let configs = vec![view("queue=32K", &[1e8, 2e8]), view("queue=1M", &[1e8])];
        let runs: Vec<RunRow> = [(0, "queue=32K"), (1, "queue=32K"), (2, "queue=1M")]
            .iter()
            .map(|(id, label)| RunRow {
                id: *id,
                configuration: label.to_string(),
                config_position: 0,
                dims: Vec::new(),
                round: 0,
                started_unix: None,
                sequence: *id as u64,
                status: "ok".into(),
                error: None,
                bits_per_second: None,
                retransmits: None,
                lost_percent: None,
                jitter_ms: None,
                cpu_local_percent: None,
                cpu_remote_percent: None,
                loaded_p50_ms: None,
                loaded_p99_ms: None,
                added_latency_ms: None,
                transfer_time_ratio: None,
                tcp_efficiency_percent: None,
                buffer_delay_percent: None,
                transactions_per_second: None,
                latency_p99_us: None,
            })
            .collect();
        let results = vec![
            (0, result(10.0, 1e8)),
            (1, result(20.0, 2e8)),
            (2, result(80.0, 9e7)),
        ];
        let l = latency_charts(&configs, &runs, &results);
        assert_eq!(
            l.cdf,
            vec![
                (0, vec![(14.0, 0.0), (15.0, 50.0), (16.0, 100.0)]),
                (1, vec![(79.0, 0.0), (80.0, 50.0), (81.0, 100.0)])
            ]
        );
        assert_eq!(l.scatter[0], (0, vec![(10.0, 1e8), (20.0, 2e8)]));
        assert!(l.gaps.is_empty(), "no UDP run");
    }
}
