//! The client's result assembled from both ends' reports: merged, checked, and its start information filled in.

use super::*;

/// Pairs the final reports of both ends and builds the result.
pub(super) fn assemble(
    spec: &TestSpec,
    info: StartInfo,
    local: Finished,
    remote: Option<Finished>,
    start: Instant,
    error: Option<String>,
) -> TestResult {
    let remote = remote.unwrap_or_default();
    let find = |reports: &[StreamReport], id: u16| reports.iter().position(|r| r.stream == id);
    let flows = spec.flows();
    let empty: Vec<StreamReport> = flows
        .iter()
        .enumerate()
        .map(|(i, f)| StreamReport::empty(i as u16, *f, Role::Receiver, Some("no report".into())))
        .collect();
    let pairs: Vec<StreamPair> = flows
        .iter()
        .enumerate()
        .map(|(i, flow)| {
            let id = i as u16;
            let l = find(&local.reports, id)
                .map(|p| &local.reports[p])
                .unwrap_or(&empty[i]);
            let r = find(&remote.reports, id)
                .map(|p| &remote.reports[p])
                .unwrap_or(&empty[i]);
            let (sender, receiver) = if *flow == Flow::ClientToServer {
                (l, r)
            } else {
                (r, l)
            };
            StreamPair {
                flow: *flow,
                sender,
                receiver,
            }
        })
        .collect();
    let mut local_cpu = local.cpu;
    local_cpu.wall_s = start.elapsed().as_secs_f64();
    let cpu = CpuResult {
        local_percent: local_cpu.percent(),
        remote_percent: remote.cpu.percent(),
        local: local_cpu,
        remote: remote.cpu,
    };
    result::build(spec, info, &pairs, cpu, error)
}
