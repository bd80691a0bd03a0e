use super::*;

fn fixture(dir: &str) -> Capture {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/freebsd");
    Capture::from_dir(&root.join(dir)).expect("fixture capture")
}

#[test]
fn sysctl_output_with_a_multi_line_value() {
    let s = fixture("vm-re0").sysctls();
    assert_eq!(s["kern.ipc.maxsockbuf"], "2097152");
    assert_eq!(s["dev.re.0.%desc"], "RealTek 8139C+ 10/100BaseTX");
    assert_eq!(s["net.inet.tcp.cc.algorithm"], "newreno");
    // `net.inet.tcp.cc.available` spans four lines; the next name starts a new entry.
    let avail = &s["net.inet.tcp.cc.available"];
    assert!(
        avail.contains("newreno") && avail.contains("cubic"),
        "{avail}"
    );
    assert_eq!(s["net.inet.tcp.delayed_ack"], "1");
    // sysctl.conf style, and junk that is no sysctl name.
    let t = parse_sysctl("kern.ipc.maxsockbuf=16777216\n# comment\nnot a line\n");
    assert_eq!(t["kern.ipc.maxsockbuf"], "16777216");
    assert_eq!(t.len(), 1);
}

#[test]
fn ifconfig_m_options_capabilities_and_media() {
    let ifs = parse_ifconfig(&fixture("vm-re0").ifconfig);
    assert_eq!(ifs.len(), 2);
    let re0 = &ifs[0];
    assert_eq!(re0.name, "re0");
    assert_eq!(re0.mtu, Some(1500));
    assert!(re0.options.contains(&"TXCSUM".to_string()));
    assert!(!re0.options.contains(&"TSO4".to_string()));
    assert!(re0.capabilities.contains(&"TSO4".to_string()));
    assert_eq!(re0.status.as_deref(), Some("active"));
    assert_eq!(media_speed_mbit(re0.media.as_deref().unwrap()), Some(100));
    assert!(ifs[1].flags.contains(&"LOOPBACK".to_string()));
    assert_eq!(
        media_speed_mbit("Ethernet autoselect (10Gbase-T <full-duplex>)"),
        Some(10_000)
    );
    assert_eq!(
        media_speed_mbit("Ethernet autoselect (2.5Gbase-T <full-duplex>)"),
        Some(2500)
    );
    assert_eq!(
        media_speed_mbit("Ethernet autoselect (1000baseT <full-duplex>)"),
        Some(1000)
    );
    assert_eq!(media_speed_mbit("Ethernet autoselect"), None);
}

#[test]
fn nics_take_driver_model_and_pci_id_from_dev_sysctls() {
    let c = fixture("vm-re0");
    let n = nics(&c, &c.sysctls());
    assert_eq!(n.len(), 1, "loopback left out");
    assert_eq!(n[0].driver.as_deref(), Some("re"));
    assert_eq!(
        n[0].description.as_deref(),
        Some("RealTek 8139C+ 10/100BaseTX")
    );
    assert_eq!(n[0].pci_id.as_deref(), Some("10ec:8139"));
    assert_eq!(n[0].speed_mbit, Some(100));
    assert_eq!(driver_and_unit("vtnet12"), Some(("vtnet", 12)));
    assert_eq!(driver_and_unit("bridge"), None);
    assert_eq!(driver_and_unit("0"), None);
}

#[test]
fn facts_have_the_linux_shape() {
    let f = facts(&fixture("vm-re0"));
    assert_eq!(f["os"], "FreeBSD");
    assert_eq!(f["kernel"], "14.1-RELEASE");
    assert_eq!(f["cpus"], 2);
    assert_eq!(f["sysctls"]["kern.ipc.maxsockbuf"], "2097152");
    assert_eq!(f["interfaces"][0]["driver"], "re");
}

#[test]
fn a_directory_without_sysctl_output_is_no_capture() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Capture::from_dir(dir.path()).is_none());
}
