//! What a netsweep server says no to, and how it says it.

use super::*;

pub(super) fn refuse(ctrl: &mut TcpStream, refusal: Refusal) -> anyhow::Result<()> {
    write_frame(
        ctrl,
        &ServerMsg::Refused {
            refusal: refusal.clone(),
        },
    )?;
    anyhow::bail!("{refusal}")
}

/// The refusal of a request this server cannot read: most often an option of a newer client.
pub(super) fn unreadable_request(what: &str) -> String {
    format!(
        "this server (netsweep {}) cannot read the request, malformed or with an option it does \
         not know ({what}); if the client is newer, upgrade the server or leave the option out",
        env!("CARGO_PKG_VERSION")
    )
}

/// Why a test of `spec` is not admitted here (invalid, over a cap, a congestion control this
/// kernel will not set, CPUs it cannot pin to), or `None`. Fills in the server's own `-A`.
pub(super) fn admission(spec: &mut TestSpec, shared: &Shared) -> Option<String> {
    if shared.auth.is_some() {
        return Some(iperf3::login::NETSWEEP_CLIENT_REFUSED.to_string());
    }
    if let Err(e) = spec.validate() {
        return Some(e.to_string());
    }
    if let Some(c) = spec.count {
        // netsweep's protocol fixes the grid in advance; a count ends the test anywhere.
        return Some(format!(
            "a test that ends at {} runs with iperf3's protocol, which this server also speaks \
             (netsweep's client uses it for -n/-k by itself)",
            c.words()
        ));
    }
    if let Some(reason) = shared.limits.refusal(spec) {
        return Some(reason.to_string());
    }
    if let Err(reason) =
        crate::traffic::session::server_pinning(&mut spec.affinity, shared.limits.affinity)
    {
        return Some(reason);
    }
    spec.congestion
        .as_deref()
        .and_then(|cc| crate::platform::congestion::unusable(cc, "on the server"))
}
