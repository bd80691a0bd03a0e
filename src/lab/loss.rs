//! Where a UDP test's lost datagrams went on a lab path: the path's own loss setting, the tail
//! of its full queue (the rate), the receiving host's kernel (its socket buffer full: the
//! receiver fell behind), or before the path (the emulator fell behind on a busy host: the
//! sending host's device dropped what the delay line did not take in time). Pure: the caller
//! gives the delay line's drops and both namespaces' counter deltas around the test.

use crate::host::counters::Delta;

/// Packets one direction of the delay line dropped: to the loss setting, and at its full queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathDrops {
    pub loss: u64,
    pub queue: u64,
}

/// Where `lost` datagrams sent from the host whose counters are `sender` to the one whose
/// counters are `receiver` went, as one sentence; `None` when nothing was lost.
/// `path` is the delay line's direction between them (`None`: no delay line).
pub fn account(
    lost: u64,
    path: Option<PathDrops>,
    sender: &Delta,
    receiver: &Delta,
    sender_device: &str,
) -> Option<String> {
    if lost == 0 {
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
    let named = p.loss + p.queue + kernel + device;
    let rest = lost.saturating_sub(named);
    if rest > 0 {
        parts.push(format!(
            "{rest} not counted by any of them (late past the test's end, or dropped elsewhere)"
        ));
    }
    Some(format!("of {lost} datagrams lost: {}", parts.join("; ")))
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

    #[test]
    fn each_place_a_datagram_was_dropped_is_named_with_its_count() {
        let s = account(
            1000,
            Some(PathDrops {
                loss: 100,
                queue: 200,
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
        assert!(s.contains("50 not counted"), "{s}");
        assert_eq!(
            account(0, None, &delta(&[], None), &delta(&[], None), "x"),
            None
        );
    }
}
