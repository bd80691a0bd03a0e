//! A network namespace of a test's own (root), with its loopback up, deleted on drop with
//! whatever lives in it (the ends of veth pairs moved into it).

use std::process::{Command, Stdio};

pub struct Netns(pub String);

impl Netns {
    /// `nsw-TAG-PID`, made afresh (a leftover of the same name is deleted first).
    pub fn new(tag: &str) -> Netns {
        let name = format!("nsw-{tag}-{}", std::process::id());
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(Stdio::null())
            .status();
        let ok = Command::new("ip").args(["netns", "add", &name]).status();
        assert!(ok.is_ok_and(|s| s.success()), "ip netns add {name}");
        let ns = Netns(name);
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// `program` to run inside the namespace.
    pub fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0, program]);
        c
    }

    /// Waits until something listens on TCP `port` in the namespace (`ss`), at most 10 s.
    pub fn wait_listening(&self, port: u16) {
        let listening = super::wait_bounded_check(std::time::Duration::from_secs(10), || {
            self.cmd("ss")
                .args(["-ltnH", &format!("sport = :{port}")])
                .output()
                .is_ok_and(|o| !o.stdout.is_empty())
        });
        assert!(listening, "nothing listened on port {port} in {}", self.0);
    }

    /// `ip ARGS` inside the namespace, which must succeed.
    pub fn ip(&self, args: &[&str]) {
        let ok = self.cmd("ip").args(args).status();
        assert!(ok.is_ok_and(|s| s.success()), "ip {args:?} in {}", self.0);
    }
}

/// Two namespaces of their own joined by a veth pair: `a` holds 198.18.0.1/30 on `va`, `b`
/// holds 198.18.0.2/30 on `vb`, both up. Dropping the namespaces removes the pair.
pub struct Pair {
    pub a: Netns,
    pub b: Netns,
    pub va: String,
    pub vb: String,
}

impl Pair {
    pub fn new(tag: &str) -> Pair {
        let (a, b) = (
            Netns::new(&format!("{tag}a")),
            Netns::new(&format!("{tag}b")),
        );
        let id = std::process::id() % 100_000;
        let (va, vb) = (format!("{tag}a{id}"), format!("{tag}b{id}"));
        let made = Command::new("ip")
            .args([
                "link", "add", &va, "netns", &a.0, "type", "veth", "peer", "name", &vb, "netns",
                &b.0,
            ])
            .status();
        assert!(made.is_ok_and(|s| s.success()), "veth pair {va} {vb}");
        a.ip(&["addr", "add", "198.18.0.1/30", "dev", &va]);
        b.ip(&["addr", "add", "198.18.0.2/30", "dev", &vb]);
        a.ip(&["link", "set", &va, "up"]);
        b.ip(&["link", "set", &vb, "up"]);
        Pair { a, b, va, vb }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}
