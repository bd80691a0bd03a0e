//! Each configuration against its ceilings (`ceiling`): the window its runs had over the
//! path's RTT, the link, the rate asked; for UDP the rate asked, the senders' own reach, the
//! link. What `explain` says limits each configuration.

use super::ceiling::{self, AT_CEILING};
use super::{Limit, median};
use crate::campaigns::plan::PlanFacts;
use crate::campaigns::store::{ConfigRow, RunRow};
use crate::traffic::result::TestResult;
use crate::units::BitRate;

pub(super) fn limits(
    runs: &[RunRow],
    configs: &[ConfigRow],
    results: &[(i64, TestResult)],
    link_of: &dyn Fn(&ConfigRow) -> Option<f64>,
    facts: &PlanFacts,
) -> Vec<Limit> {
    configs
        .iter()
        .filter_map(|c| {
            let link = link_of(c);
            let mine: Vec<&TestResult> = runs
                .iter()
                .filter(|r| r.configuration == c.label && r.status == "ok")
                .filter_map(|r| results.iter().find(|(id, _)| *id == r.id).map(|(_, t)| t))
                .collect();
            let goodput = median(
                runs.iter()
                    .filter(|r| r.configuration == c.label && r.status == "ok")
                    .filter_map(|r| r.bits_per_second)
                    .collect(),
            )?;
            let (tcp, udp): (Vec<&TestResult>, Vec<&TestResult>) = mine
                .into_iter()
                .partition(|t| t.spec.protocol == crate::traffic::spec::Protocol::Tcp);
            if !udp.is_empty() && tcp.is_empty() {
                return Some(udp_limit(c, goodput, link, &udp));
            }
            Some(tcp_limit(c, goodput, link, &tcp, facts))
        })
        .collect()
}

/// A TCP configuration against its ceilings (`ceiling`): the window its runs had over the
/// path's idle RTT (the lab's, or the smallest the senders measured when longer: the ends add
/// their own time, a TCG guest's half a millisecond), the link, the rate asked of paced runs.
fn tcp_limit(
    c: &ConfigRow,
    goodput: f64,
    link: Option<f64>,
    tcp: &[&TestResult],
    facts: &PlanFacts,
) -> Limit {
    let measured = median(
        tcp.iter()
            .filter_map(|t| ceiling::measured_idle_rtt_s(t))
            .collect(),
    );
    let idle_rtt_s = match (facts.rtt_of(c.resolved.as_ref()), measured) {
        (Some(lab), Some(m)) => Some(lab.max(m)),
        (lab, m) => lab.or(m),
    };
    let windows: Vec<(u64, ceiling::WindowSource)> =
        tcp.iter().filter_map(|t| ceiling::run_window(t)).collect();
    let window = median(windows.iter().map(|(w, _)| *w as f64).collect());
    // The runs' own sources: granted when any run was cut, else what they share.
    let source = windows
        .iter()
        .map(|(_, s)| *s)
        .find(|s| *s == ceiling::WindowSource::Granted)
        .or(windows.first().map(|(_, s)| *s));
    let pick =
        |f: fn(&TestResult) -> Option<f64>| median(tcp.iter().filter_map(|t| f(t)).collect());
    let ceilings = ceiling::Ceilings {
        link_bps: link,
        window_bps: match (window, idle_rtt_s) {
            (Some(w), Some(r)) if r > 0.0 => Some(w * 8.0 / r),
            _ => None,
        },
        asked_bps: pick(ceiling::asked_rate),
        loaded_window_bps: match (window, pick(|t| t.summary.rtt_mean_us)) {
            (Some(w), Some(r)) if r > 0.0 => Some(w * 8.0 / (r / 1e6)),
            _ => None,
        },
        rwnd_percent: pick(|t| t.summary.rwnd_limited_percent),
        sndbuf_percent: pick(|t| t.summary.sndbuf_limited_percent),
    };
    let (limit, text) = ceiling::classify(goodput, &ceilings);
    Limit {
        configuration: c.label.clone(),
        goodput_bps: goodput,
        link_bps: link,
        window_bps: ceilings.window_bps,
        loaded_window_bps: ceilings.loaded_window_bps,
        window_bytes: window.map(|w| w as u64),
        window_source: source.map(|s| s.words().to_string()),
        rtt_ms: idle_rtt_s.map(|r| r * 1000.0),
        rwnd_limited_percent: ceilings.rwnd_percent,
        sndbuf_limited_percent: ceilings.sndbuf_percent,
        asked_bps: ceilings.asked_bps,
        sent_bps: None,
        loss_percent: None,
        limit: limit.into(),
        text,
    }
}

/// A UDP configuration against its ceilings: the rate asked, the senders' own reach, the link.
fn udp_limit(c: &ConfigRow, goodput: f64, link: Option<f64>, udp: &[&TestResult]) -> Limit {
    let asked = median(
        udp.iter()
            .map(|t| {
                let directions = if t.spec.direction == crate::traffic::spec::Direction::Bidir {
                    2.0
                } else {
                    1.0
                };
                t.spec.bitrate_bps * directions
            })
            .filter(|r| *r > 0.0)
            .collect(),
    );
    let sent = median(udp.iter().map(|t| t.summary.sent_bits_per_second).collect());
    let loss = median(udp.iter().filter_map(|t| t.summary.lost_percent).collect());
    let (limit, text) = classify_udp(goodput, link, asked, sent, loss);
    Limit {
        configuration: c.label.clone(),
        goodput_bps: goodput,
        link_bps: link,
        window_bps: None,
        loaded_window_bps: None,
        window_bytes: None,
        window_source: None,
        rtt_ms: None,
        rwnd_limited_percent: None,
        sndbuf_limited_percent: None,
        asked_bps: asked,
        sent_bps: sent,
        loss_percent: loss,
        limit: limit.into(),
        text,
    }
}

/// A UDP sender below this share of the asked rate fell short of it.
const SENDER_SHORT: f64 = 0.95;

/// Which ceiling a UDP configuration hit, in words. The sender's shortfall comes first: the
/// loss then says nothing about the rate that was asked.
pub(super) fn classify_udp(
    goodput: f64,
    link: Option<f64>,
    asked: Option<f64>,
    sent: Option<f64>,
    loss: Option<f64>,
) -> (&'static str, String) {
    let loss_words = loss.map(|l| format!(", {l:.2}% lost")).unwrap_or_default();
    if let (Some(a), Some(s)) = (asked, sent)
        && s < SENDER_SHORT * a
    {
        return (
            "sender",
            format!(
                "sender-limited: the senders reached {} of the {} asked (limited on the sending \
                 host), so the loss{} is for {}",
                BitRate(s),
                BitRate(a),
                loss_words,
                BitRate(s)
            ),
        );
    }
    if let Some(l) = link.filter(|l| goodput >= AT_CEILING * l) {
        return (
            "link",
            format!(
                "link-limited at {:.0}% of {}{}{}",
                goodput / l * 100.0,
                BitRate(l),
                asked
                    .map(|a| format!(" (asked {})", BitRate(a)))
                    .unwrap_or_default(),
                loss_words
            ),
        );
    }
    match asked {
        Some(a) if goodput >= SENDER_SHORT * a => (
            "asked rate",
            format!(
                "delivered the asked rate: {:.0}% of {}{loss_words}",
                goodput / a * 100.0,
                BitRate(a)
            ),
        ),
        Some(a) => (
            "other",
            format!(
                "below the asked rate: {:.0}% of {} delivered{loss_words}: the path or the \
                 receiver dropped the rest",
                goodput / a * 100.0,
                BitRate(a)
            ),
        ),
        None => (
            "other",
            format!("unlimited UDP: {}{loss_words}", BitRate(goodput)),
        ),
    }
}
