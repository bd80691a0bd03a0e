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

    /// `ip ARGS` inside the namespace, which must succeed.
    pub fn ip(&self, args: &[&str]) {
        let ok = self.cmd("ip").args(args).status();
        assert!(ok.is_ok_and(|s| s.success()), "ip {args:?} in {}", self.0);
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}
