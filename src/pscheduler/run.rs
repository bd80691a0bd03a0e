//! The `participant-data` and `run` methods: the I/O half of the plugin. Participant 0 is the
//! throughput test's source and runs the netsweep client (with `reverse` the server sends);
//! participant 1, the destination, serves exactly one test on its configured port and stops.
//! `loopback` runs both on participant 0; `single-ended` runs the client alone against a
//! server pScheduler does not run (netsweep or iperf3, detected). Every wait is bounded by the
//! run's time slot (`spec::Throughput::slot`).

use crate::pscheduler::config::ToolConfig;
use crate::pscheduler::iso8601;
use crate::pscheduler::result;
use crate::pscheduler::spec::{Throughput, WAIT_FOR_SERVER};
use crate::traffic::client::{self, Admission, Bind, ClientConfig, PeerProtocol};
use crate::traffic::server::{self, Scheduled, Served};
use crate::traffic::spec::TestSpec;
use serde_json::{Value, json};
use socket2::{Domain, Socket, Type};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How often waits look at their stop flag and deadline.
const TICK: Duration = Duration::from_millis(100);
/// Most server log lines kept for the diagnostics.
const MAX_LOG_LINES: usize = 200;
/// The iperf3 port: where a single-ended test looks for its server by default.
const SINGLE_ENDED_PORT: u16 = crate::traffic::iperf3::IPERF3_PORT;

/// `participant-data`: this host's version; for the server participant its port and the
/// run's fresh secret ticket (`_auth`; pScheduler keeps underscored keys out of its displays,
/// as for the iperf3 tool's per-run key and password), which the client must bring.
pub fn participant_data(input: &Value, config: &ToolConfig) -> Result<Value, String> {
    let mut data = json!({"schema": 2, "netsweep-version": env!("CARGO_PKG_VERSION")});
    match input.get("participant").and_then(Value::as_u64) {
        Some(0) => {}
        Some(1) => {
            data["server_port"] = json!(config.server_port);
            data["_auth"] = json!({ "ticket": server::new_ticket() });
        }
        Some(n) => return Err(format!("invalid participant number {n} for this test")),
        None => return Err("the input has no participant number".into()),
    }
    Ok(data)
}

/// Why `run` could not even start: the input is not a run of this tool.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

/// What one run needs, read once from its input.
struct RunInput {
    participant: u64,
    data: Vec<Value>,
    spec: Throughput,
    test: TestSpec,
    start: SystemTime,
}

fn read_input(input: &Value) -> Result<RunInput, InputError> {
    let bad = |s: String| InputError(s);
    let participant = input
        .get("participant")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("the run input has no participant number".into()))?;
    let data = input
        .get("participant-data")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| bad("the run input has no participant-data list".into()))?;
    let spec_json = input
        .get("test")
        .and_then(|t| t.get("spec"))
        .ok_or_else(|| bad("the run input has no test spec".into()))?;
    let spec = Throughput::from_json(spec_json).map_err(|r| bad(r.join("; ")))?;
    let test = spec.test_spec().map_err(bad)?;
    let start = match input
        .get("schedule")
        .and_then(|s| s.get("start"))
        .and_then(Value::as_str)
    {
        Some(s) => iso8601::parse_timestamp(s).map_err(|e| bad(format!("schedule.start: {e}")))?,
        None => SystemTime::now(),
    };
    let one_ended = spec.single_ended || spec.loopback;
    if !(data.len() == 2 || (data.len() == 1 && one_ended)) {
        return Err(bad(format!(
            "netsweep needs 2 participants (1 when single-ended or loopback), got {}",
            data.len()
        )));
    }
    Ok(RunInput {
        participant,
        data,
        spec,
        test,
        start,
    })
}

/// `run`, with the listener of the server participant bound by the caller (tests bind
/// `127.0.0.1:0`); `None` binds the configured port.
pub fn run_with(
    input: &Value,
    config: &ToolConfig,
    stop: &AtomicBool,
    listener: Option<TcpListener>,
) -> Result<Value, InputError> {
    let r = read_input(input)?;
    let end = r.start + r.spec.slot();
    match (r.participant, r.spec.loopback) {
        (0, false) => Ok(run_client(&r, stop, end, None, ticket(&r))),
        (0, true) => Ok(run_loopback(&r, config, stop, end)),
        (1, _) => {
            let listener = match listener {
                Some(l) => l,
                None => {
                    let port = r.data[1]
                        .get("server_port")
                        .and_then(Value::as_u64)
                        .and_then(|p| u16::try_from(p).ok())
                        .unwrap_or(config.server_port);
                    match listen_for(&r.spec, port) {
                        Ok(l) => l,
                        Err(e) => return Ok(result::served(false, Some(&e), "")),
                    }
                }
            };
            let Some(ticket) = ticket(&r) else {
                return Ok(result::served(
                    false,
                    Some(
                        "participant 1's data has no _auth ticket: its netsweep tool is older \
                         than this one's (upgrade it), and this server serves no one unasked",
                    ),
                    "",
                ));
            };
            let scheduled = Scheduled {
                ticket,
                clients: client_addresses(&r.spec),
            };
            Ok(run_server(&r, config, listener, scheduled, stop, end))
        }
        (n, _) => Err(InputError(format!("invalid participant number {n}"))),
    }
}

/// The run's ticket from the server participant's data.
fn ticket(r: &RunInput) -> Option<String> {
    r.data
        .get(1)?
        .get("_auth")?
        .get("ticket")?
        .as_str()
        .map(str::to_string)
}

/// The scheduled client's addresses, when the spec names them (`local-address`, else
/// `source`) in the destination's family; empty (the ticket alone admits) otherwise.
fn client_addresses(spec: &Throughput) -> Vec<IpAddr> {
    use std::net::ToSocketAddrs;
    let v4 = spec.ip_version == Some(4);
    let v6 = spec.ip_version == Some(6);
    let Ok(dest) = crate::traffic::address::resolve(&spec.dest, 0, v4, v6) else {
        return Vec::new();
    };
    let Some(host) = spec.local_address.as_deref().or(spec.source.as_deref()) else {
        return Vec::new();
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let found = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => (host, 0)
            .to_socket_addrs()
            .map(|a| a.map(|a| a.ip()).collect())
            .unwrap_or_default(),
    };
    found
        .into_iter()
        .filter(|ip| ip.is_ipv4() == dest.is_ipv4())
        .collect()
}

/// `run`: the JSON result of this participant.
pub fn run(input: &Value, config: &ToolConfig, stop: &AtomicBool) -> Result<Value, InputError> {
    run_with(input, config, stop, None)
}

fn any_address(ip_version: Option<u8>) -> IpAddr {
    match ip_version {
        Some(4) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        _ => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// The server participant's listener: on the test's destination when it is an address of this
/// host (`dest = "198.51.100.7"`), so the port is not open on every interface for the slot;
/// on the any address when it is not, or when `dest` is a name, which may resolve here to
/// another family than at the client or to a loopback alias (Debian's 127.0.1.1 for the host's
/// own name), where the run's ticket alone admits.
fn listen_for(spec: &Throughput, port: u16) -> Result<TcpListener, String> {
    let dest = spec.dest.trim_start_matches('[').trim_end_matches(']');
    dest.parse::<IpAddr>()
        .ok()
        .and_then(|ip| listen(ip, port).ok())
        .map_or_else(|| listen(any_address(spec.ip_version), port), Ok)
}

/// A listener on `ip:port`; on `::` it takes IPv4 too.
fn listen(ip: IpAddr, port: u16) -> Result<TcpListener, String> {
    let addr = SocketAddr::new(ip, port);
    let open = || -> std::io::Result<TcpListener> {
        let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
        sock.set_reuse_address(true)?;
        if addr.is_ipv6() {
            let _ = sock.set_only_v6(false);
        }
        sock.bind(&addr.into())?;
        sock.listen(16)?;
        Ok(sock.into())
    };
    open().map_err(|e| {
        format!("cannot listen on {addr}: {e} (server_port in the netsweep tool's configuration)")
    })
}

/// Sleeps until `when`, or until `stop`; false when stopped.
fn sleep_until(when: SystemTime, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match when.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => std::thread::sleep(left.min(TICK)),
            _ => return true,
        }
    }
}

/// Serves one test on `listener`, stopping when it has ended, at `end`, or on `stop`.
/// Returns whether a test ended well (`None`: none came) and the server's log lines.
fn serve_one(
    listener: TcpListener,
    config: &ToolConfig,
    scheduled: Scheduled,
    stop: &AtomicBool,
    end: SystemTime,
) -> (Served, Vec<String>) {
    let lines: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = lines.clone();
    let log: server::Log = Arc::new(move |line: &str| {
        if let Ok(mut l) = sink.lock()
            && l.len() < MAX_LOG_LINES
        {
            l.push(line.to_string());
        }
    });
    let served = Arc::new(Served::default());
    let shutdown = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let observer = served.clone();
        let limits = config.limits();
        let shutdown = &shutdown;
        let handle = scope.spawn(move || {
            server::run_scheduled(vec![listener], limits, scheduled, shutdown, log, observer)
        });
        while served.ended() == 0
            && !stop.load(Ordering::Relaxed)
            && SystemTime::now() < end
            && !handle.is_finished()
        {
            std::thread::sleep(TICK);
        }
        shutdown.store(true, Ordering::SeqCst);
        handle.join()
    });
    let mut log = lines.lock().map(|l| l.clone()).unwrap_or_default();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => log.push(format!("server stopped: {e}")),
        Err(_) => log.push("server thread panicked".into()),
    }
    let served = Arc::try_unwrap(served).unwrap_or_else(|s| Served {
        ok: s.ok.load(Ordering::SeqCst).into(),
        failed: s.failed.load(Ordering::SeqCst).into(),
        busy: 0.into(),
        last_document: Mutex::new(s.last_document()),
        json_output: s.json_output,
        on_document: None,
        live: None,
    });
    (served, log)
}

fn run_server(
    r: &RunInput,
    config: &ToolConfig,
    listener: TcpListener,
    scheduled: Scheduled,
    stop: &AtomicBool,
    end: SystemTime,
) -> Value {
    let addr = listener.local_addr().map_or("?".into(), |a| a.to_string());
    let mut diags = vec![format!(
        "netsweep {} server participant on {addr}, one test, until {:.0} s after the start",
        env!("CARGO_PKG_VERSION"),
        r.spec.slot().as_secs_f64()
    )];
    diags.push(match scheduled.clients.as_slice() {
        [] => "admitting the client with this run's ticket, from any address".into(),
        c => format!(
            "admitting the client with this run's ticket from {}",
            c.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    let (served, log) = serve_one(listener, config, scheduled, stop, end);
    diags.extend(log);
    let error = served
        .last_document()
        .and_then(|d| d.get("error").and_then(Value::as_str).map(str::to_string));
    let refused = served
        .last_document()
        .is_some_and(|d| d.get("refused") == Some(&json!(true)));
    match (served.ended(), refused) {
        (0, _) => {}
        (_, true) => diags.push("the scheduled test was refused".into()),
        _ if served.failed.load(Ordering::SeqCst) == 0 => {
            diags.push("the scheduled test was served".into())
        }
        _ => diags.push("the scheduled test was served and ended with an error".into()),
    }
    let text = diags.join("\n");
    match (served.ended(), refused) {
        (0, _) => result::served(
            false,
            Some(&format!(
                "no test arrived from the client on {addr} within the run's {:.0} s",
                r.spec.slot().as_secs_f64()
            )),
            &text,
        ),
        (_, true) => result::served(
            false,
            Some(&format!(
                "the server refused the scheduled test: {}",
                error
                    .as_deref()
                    .unwrap_or("")
                    .trim_start_matches("refused: ")
            )),
            &text,
        ),
        _ if served.failed.load(Ordering::SeqCst) == 0 => result::served(true, None, &text),
        _ => result::served(
            false,
            Some(&format!(
                "the scheduled test ended with an error on the server: {}",
                error.as_deref().unwrap_or("(see diags)")
            )),
            &text,
        ),
    }
}

/// Participant 0 with `loopback`: a server on the destination address in a thread, the
/// client against it.
fn run_loopback(r: &RunInput, config: &ToolConfig, stop: &AtomicBool, end: SystemTime) -> Value {
    let v4 = r.spec.ip_version == Some(4);
    let v6 = r.spec.ip_version == Some(6);
    let ip = match crate::traffic::address::resolve(&r.spec.dest, 0, v4, v6) {
        Ok(a) => a.ip(),
        Err(e) => return result::failure(&format!("dest: {e:#}"), "", None),
    };
    let listener = match listen(ip, 0) {
        Ok(l) => l,
        Err(e) => return result::failure(&e, "", None),
    };
    let port = listener.local_addr().map_or(0, |a| a.port());
    let scheduled = Scheduled {
        ticket: server::new_ticket(),
        clients: Vec::new(),
    };
    let ticket = Some(scheduled.ticket.clone());
    let (client, (_, log)) = std::thread::scope(|scope| {
        let server = scope.spawn(|| serve_one(listener, config, scheduled, stop, end));
        let client = run_client(r, stop, end, Some(port), ticket);
        (
            client,
            server.join().unwrap_or((Served::default(), Vec::new())),
        )
    });
    let mut client = client;
    let diags = client
        .get("diags")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    client["diags"] = json!(format!("{diags}\nServer:\n{}", log.join("\n")));
    client
}

/// Resolves `host` to an address of the same family as `like`.
fn address_like(host: &str, like: SocketAddr) -> Result<IpAddr, String> {
    crate::traffic::address::resolve(host, 0, like.is_ipv4(), like.is_ipv6())
        .map(|a| a.ip())
        .map_err(|e| format!("{e:#}"))
}

/// The client's configuration: where the server is, which protocol, where to bind.
fn client_config(r: &RunInput, port: Option<u16>) -> Result<ClientConfig, String> {
    let (port, peer) = if let Some(p) = port {
        (p, PeerProtocol::Netsweep)
    } else if r.spec.single_ended {
        (
            r.spec.single_ended_port.unwrap_or(SINGLE_ENDED_PORT),
            PeerProtocol::Detect,
        )
    } else {
        let p = r.data[1]
            .get("server_port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .ok_or("participant 1's data has no server_port: is it running netsweep's tool?")?;
        (p, PeerProtocol::Netsweep)
    };
    let v4 = r.spec.ip_version == Some(4);
    let v6 = r.spec.ip_version == Some(6);
    let server = crate::traffic::address::resolve(&r.spec.dest, port, v4, v6)
        .map_err(|e| format!("dest: {e:#}"))?;
    let mut cfg = ClientConfig::new(server);
    cfg.peer = peer;
    if let Some(label) = r.spec.flow_label {
        if !server.is_ipv6() {
            return Err(format!(
                "flow-label: the destination {} is IPv4, and flow labels are IPv6's (set \
                 ip-version 6, or give an IPv6 dest)",
                server.ip()
            ));
        }
        cfg.flowlabel = Some(label);
    }
    // local-address must be usable; the source is used when it has an address of the same
    // family as the destination (as the iperf3 tool does).
    if let Some(local) = &r.spec.local_address {
        let ip = address_like(local, server).map_err(|e| format!("local-address: {e}"))?;
        cfg.bind = Some(Bind::Address(ip));
    } else if let Some(source) = &r.spec.source
        && !r.spec.loopback
        && let Ok(ip) = address_like(source, server)
    {
        cfg.bind = Some(Bind::Address(ip));
    }
    Ok(cfg)
}

/// Asks the server whether it admits the test until it answers, for as long as the server
/// participant may take to come up.
fn wait_for_server(
    cfg: &ClientConfig,
    test: &TestSpec,
    until: SystemTime,
    stop: &AtomicBool,
) -> Result<(), String> {
    loop {
        match client::check(cfg, test) {
            Admission::Admissible => return Ok(()),
            Admission::Refused(why) => return Err(format!("the server refused the test: {why}")),
            Admission::Unknown(why) => {
                if stop.load(Ordering::Relaxed) || SystemTime::now() >= until {
                    return Err(format!("the server participant did not answer: {why}"));
                }
                std::thread::sleep(TICK * 2);
            }
        }
    }
}

fn run_client(
    r: &RunInput,
    stop: &AtomicBool,
    end: SystemTime,
    port: Option<u16>,
    ticket: Option<String>,
) -> Value {
    let mut cfg = match client_config(r, port) {
        Ok(c) => c,
        Err(e) => return result::failure(&e, "", None),
    };
    cfg.ticket = ticket;
    let mut diags = vec![
        format!(
            "netsweep {} client participant to {}{}",
            env!("CARGO_PKG_VERSION"),
            cfg.server,
            match &cfg.bind {
                Some(Bind::Address(ip)) => format!(" from {ip}"),
                _ => String::new(),
            }
        ),
        crate::traffic::output::spec_line(&r.test),
    ];
    if r.spec.udp && r.spec.bandwidth.is_none() {
        diags.push("UDP at 1 Mbit/s, iperf3's default: set bandwidth for another rate".into());
    }
    if !sleep_until(r.start, stop) {
        return result::failure("stopped before the start", &diags.join("\n"), None);
    }
    if cfg.peer == PeerProtocol::Netsweep {
        let until = r.start + r.spec.setup_time() + WAIT_FOR_SERVER;
        if let Err(e) = wait_for_server(&cfg, &r.test, until, stop) {
            return result::failure(&e, &diags.join("\n"), None);
        }
    }
    // A watchdog ends the test at the end of the run's slot, whatever the network does.
    let cut = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) || SystemTime::now() >= end {
                    cut.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(TICK);
            }
        });
        let outcome = client::run_test(&cfg, &r.test, &cut, &mut |_| {});
        done.store(true, Ordering::SeqCst);
        outcome
    });
    if cut.load(Ordering::SeqCst) {
        diags.push("the test was cut at the end of its time slot (or stopped)".into());
    }
    let text = diags.join("\n");
    match outcome {
        Ok(res) if cut.load(Ordering::SeqCst) => result::failure(
            "the test did not end within its time slot",
            &text,
            Some(&res),
        ),
        Ok(res) => result::from_test(&res, &text),
        Err(e) => result::failure(&e.message, &text, e.partial.as_deref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(dest: &str) -> Throughput {
        let spec = serde_json::json!({ "dest": dest, "ip-version": 4 });
        crate::pscheduler::spec::Throughput::from_json(&spec).expect("a valid spec")
    }

    /// Binding sends nothing: the non-local address is never spoken to.
    #[test]
    fn the_server_participant_listens_on_the_destination_when_it_is_this_hosts() {
        let l = listen_for(&to("127.0.0.1"), 0).unwrap();
        assert_eq!(l.local_addr().unwrap().ip(), Ipv4Addr::LOCALHOST);
        for elsewhere in ["192.0.2.1", "localhost"] {
            let l = listen_for(&to(elsewhere), 0).unwrap();
            assert!(l.local_addr().unwrap().ip().is_unspecified(), "{elsewhere}");
        }
    }
}
