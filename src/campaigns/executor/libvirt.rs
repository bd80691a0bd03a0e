//! A user's libvirt domain as the far end: tests go from this host to the server in the guest
//! (and back with `reverse`), and `[matrix] nic` redefines the domain's interface model and
//! restarts it between configurations (`host::libvirt::Session`, which puts the domain back
//! when this executor is dropped).

use super::{AddressExecutor, client, json};
use crate::campaigns::plan::{LibvirtTarget, Plan, ServerStart};
use crate::campaigns::runner::{ExecOutcome, Executor};
use crate::host::libvirt::{Session, virsh::Virsh};
use crate::traffic::client::ClientConfig;
use crate::traffic::spec::TestSpec;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How long the server of a domain found running may take to answer (it has booted; a
/// guest's init may still be starting it): the plan's `boot_timeout` is for a domain netsweep
/// starts.
const RUNNING_GRACE: Duration = Duration::from_secs(30);

pub struct LibvirtExecutor {
    session: Session,
    target: LibvirtTarget,
    far: AddressExecutor,
    /// Each model measured: the interface as the running domain had it, and the guest's driver
    /// where ssh reaches the guest.
    gathered: serde_json::Map<String, serde_json::Value>,
    pub notes: Vec<String>,
}

impl LibvirtExecutor {
    /// Opens the domain, starts it as it is when it is off, and waits for its server (the
    /// first configuration then sets its model, if it sweeps one).
    /// A `check` does nothing to a domain a killed campaign left changed: it stops, saying so.
    pub fn start(t: &LibvirtTarget, check: bool) -> anyhow::Result<LibvirtExecutor> {
        // Resolved, not yet reachable: the guest may be off.
        let addr = crate::traffic::address::resolve_host_port(&t.host, t.default_port())?;
        let (session, notes) = Session::open(
            Virsh::new(t.uri.clone()),
            &t.domain,
            t.interface.as_deref(),
            (
                t.shutdown_timeout,
                if check {
                    crate::host::libvirt::journal::Stale::Report
                } else {
                    crate::host::libvirt::journal::Stale::Restore
                },
            ),
        )
        .map_err(anyhow::Error::msg)?;
        crate::lab::test_pause("libvirt-opened");
        let mut exec = LibvirtExecutor {
            session,
            target: t.clone(),
            far: AddressExecutor {
                addr,
                peer: t.server,
            },
            gathered: Default::default(),
            notes,
        };
        let started = exec.session.ensure_running().map_err(anyhow::Error::msg)?;
        exec.ready(started).map_err(anyhow::Error::msg)?;
        Ok(exec)
    }

    /// Waits for the guest's server (starting it over ssh when the plan says so), then warms
    /// it with a short unmeasured test when the domain has just started.
    fn ready(&mut self, started: bool) -> Result<(), String> {
        let t = &self.target;
        let since = Instant::now();
        let deadline = since + t.boot_timeout;
        let accepts =
            |addr: &SocketAddr| TcpStream::connect_timeout(addr, Duration::from_secs(1)).is_ok();
        // Ctrl-C ends a wait for a booting guest at once (the session then puts it back).
        let interrupted =
            || crate::platform::signals::flag().load(std::sync::atomic::Ordering::SeqCst);
        let stopped = || format!("interrupted while libvirt domain {} started", t.domain);
        if let ServerStart::Ssh {
            dest,
            ssh_options,
            command,
        } = &t.start
            && (started || !accepts(&self.far.addr))
        {
            // Until the guest's sshd answers; the command's own failure ends the wait.
            loop {
                match run_over_ssh(dest, ssh_options, command) {
                    Ok(()) => break,
                    Err(_) if interrupted() => return Err(stopped()),
                    Err(SshError::Unreachable(_)) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    Err(SshError::Unreachable(e) | SshError::Failed(e)) => {
                        return Err(format!(
                            "starting the server in libvirt domain {} over ssh: {e}",
                            t.domain
                        ));
                    }
                }
            }
        }
        // A domain that ran already has booted: its server answers at once or soon, and an
        // address with no route never will (a trial waited out 180 s, silently, for a typo).
        let limit = if started {
            t.boot_timeout
        } else {
            t.boot_timeout.min(RUNNING_GRACE)
        };
        let mut said = false;
        loop {
            let last = match TcpStream::connect_timeout(&self.far.addr, Duration::from_secs(1)) {
                Ok(_) => break,
                Err(e) => e,
            };
            if interrupted() {
                return Err(stopped());
            }
            // No route in this host's table (a host that does not answer ARP yet is
            // EHOSTUNREACH, a booting guest's, and waited for); a domain netsweep starts may
            // bring the route's device up with it.
            let unroutable = !started && last.raw_os_error() == Some(libc::ENETUNREACH);
            if unroutable || since.elapsed() >= limit {
                return Err(format!(
                    "the {} server in libvirt domain {} did not answer at {} within {} s {} \
                     ({last}): is the guest's address right, and its server started?",
                    if self.far.peer == client::PeerProtocol::Iperf3 {
                        "iperf3"
                    } else {
                        "netsweep"
                    },
                    t.domain,
                    self.far.addr,
                    since.elapsed().as_secs(),
                    if started {
                        "of the domain's start (boot_timeout)"
                    } else {
                        "(the domain was running already)"
                    }
                ));
            }
            if !said && since.elapsed() >= Duration::from_secs(3) {
                said = true;
                crate::errln!(
                    "netsweep: waiting for the server in libvirt domain {} at {} (up to {} s): {last}",
                    t.domain,
                    self.far.addr,
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        if started {
            // A guest's first test after a boot runs code for the first time (under TCG it is
            // translated then): a short test, not measured, takes that out of the first run.
            let mut spec = TestSpec::tcp(Duration::from_millis(500));
            spec.calibration = Duration::ZERO;
            let cfg = ClientConfig {
                peer: self.far.peer,
                ..ClientConfig::new(self.far.addr)
            };
            let _ = client::run_test(&cfg, &spec, &AtomicBool::new(false), &mut |_| {});
        }
        self.gather();
        Ok(())
    }

    fn gather(&mut self) {
        let key = self
            .session
            .model()
            .unwrap_or("(libvirt default)")
            .to_string();
        if self.gathered.contains_key(&key) {
            return;
        }
        let live = self
            .session
            .virsh
            .dumpxml(&self.session.domain, false)
            .ok()
            .and_then(|x| crate::host::libvirt::xml::interfaces(&x).ok());
        let iface = self.session.interface().ok();
        let driver = match (
            &self.target.start,
            iface.as_ref().and_then(|i| i.mac.clone()),
        ) {
            (
                ServerStart::Ssh {
                    dest, ssh_options, ..
                },
                Some(mac),
            ) => crate::host::libvirt::guest_driver(dest, ssh_options, &mac).ok(),
            _ => None,
        };
        self.gathered.insert(
            key,
            json!({
                "interface": iface.map(|i| json!({
                    "mac": i.mac, "type": i.kind, "source": i.source, "model": i.model,
                })),
                "running_interfaces": live.map(|l| l.len()),
                "guest_driver": driver,
            }),
        );
    }
}

enum SshError {
    /// ssh itself could not reach the guest (exit status 255): it may still be booting.
    Unreachable(String),
    Failed(String),
}

fn run_over_ssh(dest: &str, ssh_options: &[String], command: &str) -> Result<(), SshError> {
    let mut cmd = crate::host::tuning::ssh_command(ssh_options);
    cmd.args(["-o", "ConnectTimeout=3", "--", dest, command])
        .stdin(std::process::Stdio::null());
    let out = cmd
        .output()
        .map_err(|e| SshError::Failed(format!("cannot run ssh: {e}")))?;
    let err = crate::inputs::peer_text(String::from_utf8_lossy(&out.stderr).trim());
    match out.status.code() {
        Some(0) => Ok(()),
        Some(255) => Err(SshError::Unreachable(err)),
        _ => Err(SshError::Failed(format!("`{command}` failed: {err}"))),
    }
}

impl Executor for LibvirtExecutor {
    fn describe(&self) -> String {
        format!(
            "libvirt domain {} ({}), {} server {}",
            self.session.domain,
            self.session
                .virsh
                .uri
                .as_deref()
                .unwrap_or("libvirt's default connection"),
            if self.far.peer == client::PeerProtocol::Iperf3 {
                "iperf3"
            } else {
                "netsweep"
            },
            self.far.addr
        )
    }

    fn host_facts(&mut self) -> serde_json::Value {
        let mut facts = self.far.host_facts();
        facts["libvirt"] = json!({
            "domain": self.session.domain,
            "uri": self.session.virsh.uri,
            "model_found": self.session.model(),
        });
        facts
    }

    fn run_test(&mut self, spec: &TestSpec, stop: &AtomicBool) -> ExecOutcome {
        self.far.run_test(spec, stop)
    }

    fn shell(&mut self, command: &str) -> Result<(), String> {
        self.far.shell(command)
    }

    fn nic_model(&self) -> Option<String> {
        self.session.model().map(str::to_string)
    }

    fn set_nic_model(&mut self, model: &str) -> Result<bool, String> {
        let restarted = self.session.set_model(model)?;
        crate::lab::test_pause("libvirt-switched");
        self.ready(restarted)?;
        Ok(restarted)
    }

    fn facts_gathered(&mut self) -> Option<serde_json::Value> {
        Some(serde_json::Value::Object(self.gathered.clone()))
    }

    fn far_check(&self, plan: &Plan) -> (Vec<String>, Vec<String>) {
        self.far.far_check(plan)
    }
}
