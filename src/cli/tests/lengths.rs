//! `-k`, `-l` and `-Z` as iperf3 reads them: block counts, write sizes and their send paths.

use super::client;

/// Regression: `-k 1K` counted netsweep's 1 MiB writes (1,073,741,824 bytes) where iperf3
/// counts its 128 KiB blocks (134,217,728).
#[test]
fn k_counts_iperf3s_128k_blocks_unless_l_says() {
    let (_, spec) = client(&["127.0.0.1", "-k", "1K"]).unwrap();
    assert_eq!(spec.count.unwrap().bytes(spec.length_bytes), 134_217_728);
    let (_, spec) = client(&["127.0.0.1", "-k", "10", "-l", "1M"]).unwrap();
    assert_eq!(spec.count.unwrap().bytes(spec.length_bytes), 10 << 20);
    // A test by time keeps netsweep's own (calibrated) write size.
    let (_, spec) = client(&["127.0.0.1", "-t", "1"]).unwrap();
    assert_eq!(spec.length_bytes, crate::traffic::spec::TCP_DEFAULT_LENGTH);
}

#[test]
fn l_writes_its_size_as_iperf3_does_and_l_with_z_sends_it_with_sendfile() {
    // (calibration, zerocopy): a fixed path is sendfile when `zerocopy`, else write.
    let path = |args: &[&str]| {
        let mut all = vec!["127.0.0.1"];
        all.extend_from_slice(args);
        let (_, spec) = client(&all).unwrap();
        (spec.calibration.is_zero(), spec.zerocopy)
    };
    assert_eq!(path(&["-l", "128K"]), (true, false), "iperf3 -l: write(2)");
    assert_eq!(
        path(&["-l", "128K", "-Z"]),
        (true, true),
        "iperf3 -l -Z: sendfile"
    );
    assert_eq!(path(&["-l", "128K", "-Z", "--no-zerocopy"]), (true, false));
    assert_eq!(path(&["--no-zerocopy"]), (true, false));
    // Without -l the path is calibrated, -Z or not.
    assert!(!path(&[]).0 && !path(&["-Z"]).0);
    // The note says what -Z did.
    let note = |args: &[&str]| {
        let mut all = vec!["127.0.0.1", "-Z"];
        all.extend_from_slice(args);
        client(&all).unwrap().0.notes.join("\n")
    };
    assert!(note(&["-l", "64K"]).contains("sendfile(2) in calls of -l"));
    assert!(note(&[]).contains("calibrates its send path"));
    assert!(note(&["-u", "-l", "1400"]).contains("ignored"));
}

#[test]
fn l_0_is_the_default_as_in_iperf3() {
    let spec = |args: &[&str]| {
        let mut all = vec!["127.0.0.1"];
        all.extend_from_slice(args);
        client(&all).unwrap().1
    };
    for (zero, none) in [
        (&["-l", "0"][..], &[][..]),
        (&["-u", "-l", "0"], &["-u"]),
        (&["-k", "10", "-l", "0"], &["-k", "10"]),
        (&["-l", "0", "-Z"], &["-Z"]),
    ] {
        let (z, n) = (spec(zero), spec(none));
        assert_eq!(z.length_bytes, n.length_bytes, "{zero:?}");
        assert_eq!(
            z.calibration, n.calibration,
            "{zero:?}: calibrated as without -l"
        );
        assert_eq!(z.zerocopy, n.zerocopy, "{zero:?}");
    }
    assert!(!spec(&["-l", "0"]).calibration.is_zero());
    assert!(spec(&["-l", "64K"]).calibration.is_zero());
}
