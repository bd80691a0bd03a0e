//! Flags of the commands that judge and diagnose: confidence levels and doctor's exclusive
//! checks.

use crate::cli::{Cli, Command};
use clap::Parser;

/// Regression (a trial's finding): `-c 99.5%` worked in `stats` and was "invalid float
/// literal" in `compare` and `explain`.
#[test]
fn every_statistics_command_takes_a_level_with_or_without_percent() {
    for args in [
        ["netsweep", "compare", "-c", "99.5%"],
        ["netsweep", "explain", "-c", "99.5%"],
        ["netsweep", "stats", "-c", "99.5%"],
        ["netsweep", "compare", "-c", "99.5"],
    ] {
        let level = match Cli::try_parse_from(args).unwrap().command {
            Command::Compare(a) => a.confidence,
            Command::Explain(a) => a.confidence,
            Command::Stats(a) => a.confidence,
            _ => unreachable!("{args:?}"),
        };
        assert_eq!(level, 99.5, "{args:?}");
    }
}

/// Regression (a trial's finding): `doctor --libvirt` ran without the `--peer` and `--rate`
/// it was given, and `--libvirt-xml` without `--watch`: refused by name now.
#[test]
fn doctor_refuses_host_flags_beside_a_libvirt_check() {
    for args in [
        vec![
            "netsweep",
            "doctor",
            "--libvirt",
            "vm1",
            "--peer",
            "198.18.0.2",
        ],
        vec!["netsweep", "doctor", "--libvirt", "vm1", "--rate", "1G"],
        vec![
            "netsweep",
            "doctor",
            "--libvirt-xml",
            "d.xml",
            "--watch",
            "2",
        ],
    ] {
        let e = Cli::try_parse_from(&args).unwrap_err().to_string();
        assert!(e.contains("cannot be used with"), "{args:?}: {e}");
    }
    assert!(
        Cli::try_parse_from([
            "netsweep",
            "doctor",
            "--libvirt",
            "vm1",
            "--connect",
            "qemu:///system"
        ])
        .is_ok()
    );
}
