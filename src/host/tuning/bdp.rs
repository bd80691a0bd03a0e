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
    if let Some(note) = advice.cap_note(rtt_s) {
        s.push_str(&format!("{note}\n"));
    }
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
        // The triples' maxima bound every autotuned flow; rmem_max/wmem_max only programs
        // that set their buffers (-w).
        let capped = BitRate(cur_max.unwrap_or(0) as f64 / 2.0 * 8.0 / rtt_s);
        let verdict = match cur_max {
            Some(m) if m >= need => "enough".to_string(),
            Some(_) if max_of => format!("too small: a flow is capped near {capped}"),
            Some(_) => format!(
                "too small for -w: a flow that sets its buffers (iperf3 -w) is capped near \
                 {capped}; autotuned flows are not"
            ),
            None => "unknown".into(),
        };
        // Each line pastes as printed: a key to raise as its command with the current value
        // after `#`; a key that is enough as a comment only (its command would lower it).
        let now = cur
            .map(|c| normalize(&c))
            .unwrap_or_else(|| "unknown".into());
        s.push_str(&match cur_max {
            Some(m) if m >= need => format!("  # {key} = {now}: {verdict}\n"),
            _ => format!(
                "  {}   # now {now}: {verdict}\n",
                crate::platform::sysctl::sysctl_line(key, &want)
            ),
        });
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
