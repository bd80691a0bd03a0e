//! `netsweep tune bdp`: the bandwidth-delay product and the buffer settings it implies, in words, against the kernel's current values.

use super::*;

/// The bandwidth-delay product and the buffer settings it implies, against current limits.
pub fn bdp_text(rate_bps: f64, rtt_s: f64, current: &dyn Fn(&str) -> Option<String>) -> String {
    use crate::units::{BitRate, Bytes};
    let advice = advice::BufferAdvice::for_path(rate_bps, rtt_s);
    let (bdp, need) = (advice.bdp, advice.need);
    let mut s = format!(
        "bandwidth-delay product: {} x {:.3} ms = {} ({bdp} bytes)\n\
         one TCP flow needs a window of at least the BDP; Linux advertises about half of its\n\
         receive buffer, so the buffers should allow 2 x BDP = {need} bytes:\n",
        BitRate(rate_bps),
        rtt_s * 1e3,
        Bytes(bdp)
    );
    let third = |v: &str| {
        v.split_whitespace()
            .nth(2)
            .and_then(|x| x.parse::<u64>().ok())
    };
    let mut short = false;
    for (key, max_of) in [
        ("net.ipv4.tcp_rmem", true),
        ("net.ipv4.tcp_wmem", true),
        ("net.core.rmem_max", false),
        ("net.core.wmem_max", false),
    ] {
        let want = advice::BufferAdvice::value(key, need).unwrap_or_default();
        let cur = current(key);
        let cur_max = cur.as_deref().and_then(|c| {
            if max_of {
                third(c)
            } else {
                c.trim().parse().ok()
            }
        });
        short |= cur_max.is_none_or(|m| m < need);
        let verdict = match cur_max {
            Some(m) if m >= need => "enough".to_string(),
            Some(m) => format!(
                "too small: a flow is capped near {}",
                BitRate(m as f64 / 2.0 * 8.0 / rtt_s)
            ),
            None => "unknown".into(),
        };
        s.push_str(&format!(
            "  {key} = \"{want}\"   (now \"{}\": {verdict})\n",
            cur.map(|c| normalize(&c)).unwrap_or_default()
        ));
    }
    if !short {
        s.push_str(
            "every buffer limit already allows 2 x BDP: nothing to raise for this path \
             (high-bdp only raises, so applying it would change no buffer)\n",
        );
        return s;
    }
    // The values as a user types them (`--rate 10G --rtt 1.6ms`), each parsing back exactly.
    s.push_str(&format!(
        "apply with: {}\n  (elsewhere: add --target lab:NAME:a|b, netns:NAME or ssh:USER@HOST)\n",
        crate::paste::netsweep(&[
            "tune".to_string(),
            "apply".into(),
            "high-bdp".into(),
            "--rate".into(),
            advice::rate_arg(rate_bps),
            "--rtt".into(),
            advice::rtt_arg(rtt_s),
        ])
    ));
    s.push_str(
        "  (on a lab host or other namespace: high-bdp-ns, the same without the host-wide keys)\n",
    );
    s
}
