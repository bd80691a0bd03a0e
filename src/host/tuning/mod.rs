//! `netsweep tune`: applies sysctl profiles to a target (this host, a network namespace or lab
//! host, or a remote host through ssh) and always puts the original values back.
//!
//! Safety order: every key and value is checked first (allowlist, existence, syntax, scope), so
//! a rejected profile writes nothing; then the original values go to a journal (fsynced) before
//! the first write; each write is read back and verified. A journal whose owner process died
//! (kill -9, crash) is restored by the next tuning command, which says so. Restore is
//! idempotent. The network-facing server never calls this module. `state` tells how far a
//! journal's profile is applied now (all, some keys after an interrupted apply, none).
//!
//! A kernel this layer cannot reach by itself (a lab's QEMU guest, through the lab's command
//! channel) is a `SysctlPlace` that the layer knowing it implements (`lab::vm::agent`) and hands
//! down as `Target::Place`: tuning knows no lab.

pub mod advice;
pub mod profile;
pub mod state;
pub mod trial;

pub use crate::platform::sysctl::normalize;
use crate::platform::{Os, THIS_OS, netns, sysctl};
use anyhow::{Context, bail};
use profile::{Profile, Scope};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

mod bdp;
pub use bdp::*;
mod ssh;
pub use ssh::{SshHost, ssh_command};
mod target;
pub use target::*;
mod journal;
pub use journal::*;
mod apply;
pub use apply::*;
mod remote;
pub use remote::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!(Target::parse("local"), Ok(Target::Local));
        assert_eq!(Target::parse("netns:x1"), Ok(Target::Netns("x1".into())));
        assert_eq!(
            Target::parse("ssh:me@host"),
            Ok(Target::Ssh("me@host".into()))
        );
        assert!(Target::parse("ssh:-oProxyCommand=x").is_err());
        assert!(Target::parse("netns:../x").is_err());
        assert!(Target::parse("lab:wan:b").is_err());
    }

    #[test]
    fn bdp_of_10g_at_1_6_ms() {
        let text = bdp_text(10e9, 0.0016, &|k| {
            (k == "net.ipv4.tcp_rmem").then(|| "4096\t131072\t6291456".to_string())
        });
        assert!(text.contains("2000000 bytes"), "{text}");
        // Each line pastes into a shell: the command, the current value after `#`.
        assert!(
            text.contains("  # net.ipv4.tcp_rmem = 4096 131072 6291456: enough"),
            "{text}"
        );
        assert!(
            text.contains(
                "  sysctl -w net.ipv4.tcp_wmem='4096 16384 4000000'   # now unknown: unknown"
            ),
            "{text}"
        );
        // Regression: the hint ended with `--rate RATE --rtt RTT` placeholders.
        assert!(
            text.contains("tune apply high-bdp --rate 10G --rtt 1.6ms"),
            "{text}"
        );
    }

    /// Regression: with every limit above 2 x BDP it still said "apply with: ... high-bdp",
    /// whose printed values (4 MiB) read as lowering a 32 MiB maximum.
    #[test]
    fn bdp_with_every_limit_enough_suggests_nothing() {
        let text = bdp_text(10e9, 0.0016, &|k| {
            Some(if k.ends_with("mem") {
                "4096 131072 33554432".to_string()
            } else {
                "33554432".to_string()
            })
        });
        assert!(text.contains("nothing to raise"), "{text}");
        assert!(!text.contains("apply with"), "{text}");
        // No command that would lower a limit: 4000000 against 33554432.
        assert!(!text.contains("sysctl -w"), "{text}");
        // One limit short: the suggestion is back.
        let text = bdp_text(10e9, 0.0016, &|k| {
            Some(
                if k == "net.core.rmem_max" {
                    "212992"
                } else {
                    "4096 131072 33554432"
                }
                .into(),
            )
        });
        assert!(
            text.contains("too small for -w") && text.contains("autotuned flows are not"),
            "{text}"
        );
        assert!(text.contains("apply with"), "{text}");
    }

    /// A trial's finding: for 100G over 200 ms `tune bdp` advised 5000000000, which Linux
    /// refuses; it advises Linux's limit and says what one flow then carries.
    #[test]
    fn bdp_past_what_linux_holds_advises_the_limit_and_says_so() {
        let text = bdp_text(100e9, 0.2, &|_| None);
        assert!(
            text.contains("more than Linux holds in one socket buffer (2147483647 bytes")
                && text.contains("net.ipv4.tcp_rmem='4096 131072 2147483647'")
                && text.contains("net.core.rmem_max=2147483647")
                && !text.contains("5000000000"),
            "{text}"
        );
    }

    #[test]
    fn a_profile_without_the_targets_table_is_refused_before_any_command() {
        let t = Target::SshSysctl(SshHost {
            dest: "root@198.18.0.9".into(),
            ssh_options: Vec::new(),
            os: Os::FreeBsd,
            login: None,
        });
        assert_eq!(t.os(), Os::FreeBsd);
        assert_eq!(t.id(), "ssh-root_198.18.0.9");
        let p = profile::builtin("large-buffers", None).unwrap();
        let mut linux_only = p.clone();
        linux_only.freebsd.clear();
        // No ssh runs: the missing table is found first.
        let e = validate(&t, &linux_only, &ApplyOptions::default()).unwrap_err();
        assert!(
            e[0].contains("no [profiles.large-buffers.freebsd] table"),
            "{e:?}"
        );
    }
}
