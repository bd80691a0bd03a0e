//! Whether the senders the configurations compare ran the same congestion control. A plan
//! without `congestion` leaves each end's kernel default, and under `-R` the server sends: a
//! direction sweep against a QEMU guest compared the host's bbr senders with the guest's cubic
//! ones (a trial's campaign, "reverse raises goodput 1.15x"), a difference no test on the runs
//! can tell from the direction's.

use super::grants::RunsOf;
use super::trust::Flag;
use crate::campaigns::store::ConfigRow;
use crate::traffic::result::TestResult;
use crate::traffic::spec::Direction;

/// The congestion controls a run's senders used, from the sockets each end reported.
fn senders(t: &TestResult) -> Vec<&str> {
    let ends = match t.spec.direction {
        Direction::Forward => vec![&t.start.client_sockets],
        Direction::Reverse => vec![&t.start.server_sockets],
        Direction::Bidir => vec![&t.start.client_sockets, &t.start.server_sockets],
    };
    let mut out: Vec<&str> = ends
        .into_iter()
        .flatten()
        .filter_map(|s| s.congestion.as_deref())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A flag when configurations that differ in something else than `congestion` had senders of
/// different congestion controls: the first such pair named.
pub fn flag(configs: &[ConfigRow], runs_of: &RunsOf<'_>) -> Option<Flag> {
    let used: Vec<(&ConfigRow, Vec<&str>)> = configs
        .iter()
        .filter_map(|c| {
            let mut ccs: Vec<&str> = runs_of
                .of(&c.label)
                .iter()
                .flat_map(|t| senders(t))
                .collect();
            ccs.sort_unstable();
            ccs.dedup();
            (!ccs.is_empty()).then_some((c, ccs))
        })
        .collect();
    let swept = |c: &ConfigRow| {
        c.dims
            .iter()
            .find(|(k, _)| k == "congestion")
            .map(|(_, v)| v.clone())
    };
    for (i, (a, ca)) in used.iter().enumerate() {
        for (b, cb) in &used[i + 1..] {
            if ca == cb || swept(a) != swept(b) {
                continue;
            }
            return Some(Flag {
                kind: "congestion".into(),
                runs: Vec::new(),
                configurations: vec![a.label.clone(), b.label.clone()],
                serious: true,
                text: format!(
                    "CAUTION: the senders ran different congestion controls: {} with {}, {} \
                     with {} (each end's kernel default: under -R the server sends): a \
                     difference between them is also the congestion controls'; set \
                     `congestion = \"{}\"` in the plan, which both ends use",
                    a.label,
                    ca.join("+"),
                    b.label,
                    cb.join("+"),
                    ca[0]
                ),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaigns::explain::tests::{direction_sweep, two_value_sweep};
    use crate::traffic::measure::SocketInfo;

    fn result(direction: Direction, client: &str, server: &str) -> TestResult {
        let mut t = crate::traffic::result::unmeasured(&crate::traffic::spec::TestSpec::tcp(
            std::time::Duration::from_secs(1),
        ));
        t.spec.direction = direction;
        let sock = |cc: &str| SocketInfo {
            congestion: Some(cc.into()),
            ..SocketInfo::default()
        };
        t.start.client_sockets = vec![sock(client)];
        t.start.server_sockets = vec![sock(server)];
        t
    }

    /// The trial's campaign: forward from the host (bbr), reverse from the guest (cubic).
    #[test]
    fn a_direction_sweep_between_kernels_of_different_defaults_is_flagged() {
        let (configs, rows) = direction_sweep();
        let results = vec![
            (1, result(Direction::Forward, "bbr", "cubic")),
            (2, result(Direction::Reverse, "bbr", "cubic")),
        ];
        let f = flag(&configs, &RunsOf::new(&rows, &results)).expect("flagged");
        assert!(f.serious);
        assert!(
            f.text
                .contains("direction=forward with bbr, direction=reverse with cubic")
                && f.text.contains("`congestion = \"bbr\"`"),
            "{}",
            f.text
        );
        // Both ends with one congestion control: nothing to say.
        let same = vec![
            (1, result(Direction::Forward, "bbr", "bbr")),
            (2, result(Direction::Reverse, "bbr", "bbr")),
        ];
        assert_eq!(flag(&configs, &RunsOf::new(&rows, &same)), None);
    }

    /// A plan that sweeps `congestion` compares congestion controls on purpose.
    #[test]
    fn a_congestion_sweep_is_not_flagged() {
        let (configs, rows) = two_value_sweep("congestion", ["cubic", "bbr"]);
        let results = vec![
            (1, result(Direction::Forward, "cubic", "cubic")),
            (2, result(Direction::Forward, "bbr", "bbr")),
        ];
        assert_eq!(flag(&configs, &RunsOf::new(&rows, &results)), None);
    }
}
