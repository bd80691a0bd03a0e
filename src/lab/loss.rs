//! Where a UDP test's lost datagrams went on a lab path: the path's own loss setting, the tail
//! of its full queue (the rate), the receiving host's kernel (its socket buffer full: the
//! receiver fell behind), or before the path (the emulator fell behind on a busy host: the
//! sending host's device dropped what the delay line did not take in time). Pure: the caller
//! gives the delay line's drops and both namespaces' counter deltas around the test.

use crate::host::counters::Delta;

/// Packets one direction of the delay line dropped: to the loss setting, at its full queue,
/// and larger than the receiving host's MTU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathDrops {
    pub loss: u64,
    pub queue: u64,
    pub oversize: u64,
}

/// Where `lost` datagrams sent from the host whose counters are `sender` to the one whose
/// counters are `receiver` went, as one sentence; `None` when nothing was lost (or, with
/// `lost` unknown, nothing was dropped). `path` is the delay line's direction between them
/// (`None`: no delay line).
pub fn account(
    lost: Option<u64>,
    path: Option<PathDrops>,
    sender: &Delta,
    receiver: &Delta,
    sender_device: &str,
) -> Option<String> {
    if lost == Some(0) {
        return None;
    }
    let proto =
        |d: &Delta, k: &str| u64::try_from(d.protocol.get(k).copied().unwrap_or(0)).unwrap_or(0);
    let kernel = proto(receiver, "Udp.RcvbufErrors").max(proto(receiver, "Udp.InErrors"));
    let device = sender
        .interfaces
        .get(sender_device)
        .map_or(0, |c| c.tx_dropped);
    let p = path.unwrap_or_default();
    let mut parts = Vec::new();
    if p.loss > 0 {
        parts.push(format!("{} to the path's loss setting", p.loss));
    }
    if p.queue > 0 {
        parts.push(format!("{} at the path's full queue (its rate)", p.queue));
    }
    if p.oversize > 0 {
        parts.push(format!(
            "{} larger than the receiving host's MTU (its interface drops them, as a NIC \
             drops oversize frames)",
            p.oversize
        ));
    }
    if kernel > 0 {
        parts.push(format!(
            "{kernel} by the receiving host's kernel (its socket buffer was full: the receiver \
             fell behind; Udp RcvbufErrors)"
        ));
    }
    if device > 0 {
        parts.push(format!(
            "{device} before the path, by the sending host's device {sender_device} (the \
             emulator fell behind on this busy host, not the path)"
        ));
    }
    let named = p.loss + p.queue + p.oversize + kernel + device;
    let Some(lost) = lost else {
        return (named > 0).then(|| format!("packets dropped on the way: {}", parts.join("; ")));
    };
    let rest = lost.saturating_sub(named);
    if rest > 0 {
        parts.push(format!(
            "{rest} not counted by any of them (late past the test's end, or dropped elsewhere)"
        ));
    }
    Some(format!("of {lost} datagrams lost: {}", parts.join("; ")))
}

/// The drops of a device's qdiscs as `tc -s -j qdisc show dev DEV` gives them: netem's are
/// its loss setting (netem counts each packet its `loss` drops, and its limit is set far above
/// any queue), tbf's the tail of its full queue (the rate). `None` when the text holds neither.
pub fn qdisc_drops(tc_json: &str) -> Option<PathDrops> {
    let qdiscs: Vec<serde_json::Value> = serde_json::from_str(tc_json).ok()?;
    let mut found = None::<PathDrops>;
    for q in &qdiscs {
        let drops = q
            .get("drops")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        let d = match q.get("kind").and_then(serde_json::Value::as_str) {
            Some("netem") => PathDrops {
                loss: drops,
                ..PathDrops::default()
            },
            Some("tbf") => PathDrops {
                queue: drops,
                ..PathDrops::default()
            },
            _ => continue,
        };
        let f = found.get_or_insert_with(PathDrops::default);
        f.loss += d.loss;
        f.queue += d.queue;
    }
    found
}

/// The drops of the delay line between two snapshots of its counters.
pub fn between(
    before: Option<[PathDrops; 2]>,
    after: Option<[PathDrops; 2]>,
) -> [Option<PathDrops>; 2] {
    [0, 1].map(|i| {
        let (b, a) = (before?[i], after?[i]);
        Some(PathDrops {
            loss: a.loss.saturating_sub(b.loss),
            queue: a.queue.saturating_sub(b.queue),
            oversize: a.oversize.saturating_sub(b.oversize),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::counters::DevCounters;

    fn delta(proto: &[(&str, i64)], dev: Option<(&str, u64)>) -> Delta {
        Delta {
            protocol: proto.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            interfaces: dev
                .map(|(n, d)| {
                    (
                        n.to_string(),
                        DevCounters {
                            tx_dropped: d,
                            ..DevCounters::default()
                        },
                    )
                })
                .into_iter()
                .collect(),
        }
    }

    /// Regression (outside audit of issue 42): a lab shaped by netem or tbf said nothing of
    /// where its datagrams went (only the userspace delay line was read). `tc -s -j` of netem
    /// with a tbf child (iproute2 6.x), and of a tbf alone as this machine's tc printed it (drops
    /// set to 7).
    #[test]
    fn netem_drops_are_the_loss_setting_and_tbf_drops_the_full_queue() {
        let netem = r#"[{"kind":"netem","handle":"1:","root":true,"refcnt":2,"options":{"limit":1000000,"delay":{"delay":0.01,"jitter":0,"correlation":0},"loss-random":{"loss":0.03,"correlation":0},"ecn":false,"gap":0},"bytes":4404000,"packets":3000,"drops":91,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"tbf","handle":"10:","parent":"1:1","options":{"rate":125000000,"burst":15000,"lat":5000000},"bytes":4270000,"packets":2909,"drops":40,"overlimits":120,"requeues":0,"backlog":0,"qlen":0}]"#;
        assert_eq!(
            qdisc_drops(netem),
            Some(PathDrops {
                loss: 91,
                queue: 40,
                oversize: 0
            })
        );
        let tbf = r#"[{"kind":"tbf","handle":"10:","root":true,"refcnt":3,"options":{"rate":31250000,"burst":31250,"lat":1000},"bytes":10,"packets":1,"drops":7,"overlimits":0,"requeues":0,"backlog":0,"qlen":0}]"#;
        assert_eq!(
            qdisc_drops(tbf),
            Some(PathDrops {
                queue: 7,
                ..PathDrops::default()
            })
        );
        let plain = r#"[{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}]"#;
        assert_eq!(qdisc_drops(plain), None);
        assert_eq!(qdisc_drops("not json"), None);
    }

    #[test]
    fn each_place_a_datagram_was_dropped_is_named_with_its_count() {
        let s = account(
            Some(1000),
            Some(PathDrops {
                loss: 100,
                queue: 200,
                oversize: 50,
            }),
            &delta(&[], Some(("nsw-x-a", 300))),
            &delta(&[("Udp.RcvbufErrors", 350), ("Udp.InErrors", 350)], None),
            "nsw-x-a",
        )
        .unwrap();
        assert!(
            s.starts_with("of 1000 datagrams lost: 100 to the path's loss setting"),
            "{s}"
        );
        assert!(s.contains("200 at the path's full queue"), "{s}");
        assert!(s.contains("350 by the receiving host's kernel"), "{s}");
        assert!(s.contains("300 before the path"), "{s}");
        assert!(
            s.contains("50 larger than the receiving host's MTU") && !s.contains("not counted"),
            "{s}"
        );
        assert_eq!(
            account(Some(0), None, &delta(&[], None), &delta(&[], None), "x"),
            None
        );
        // Without the test's own count: the drops alone, or nothing when there were none.
        let d = account(
            None,
            Some(PathDrops {
                loss: 3,
                ..PathDrops::default()
            }),
            &delta(&[], None),
            &delta(&[], None),
            "x",
        );
        assert_eq!(
            d.as_deref(),
            Some("packets dropped on the way: 3 to the path's loss setting")
        );
        assert_eq!(
            account(None, None, &delta(&[], None), &delta(&[], None), "x"),
            None
        );
    }
}
