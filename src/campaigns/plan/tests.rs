use super::*;

/// The plan from the issue, which must be accepted as written.
pub const ISSUE_PLAN: &str = include_str!("../../../tests/fixtures/issue-plan.toml");

#[test]
fn the_issue_plan_is_accepted() {
    let p = Plan::parse("plan.toml", ISSUE_PLAN).unwrap();
    assert_eq!(p.target, Target::Loopback);
    assert_eq!(p.base.duration, Duration::from_secs(2));
    assert_eq!(
        p.repeat,
        Repeat {
            count: 3,
            pause: Duration::ZERO,
            order: Order::Interleaved,
            seed: Some(7),
            group_profiles: false,
            until: None,
            min: 3,
        }
    );
    let cfgs = p.configurations();
    assert_eq!(cfgs.len(), 4);
    assert_eq!(label(&cfgs[0]), "window=64K parallel=1");
    let spec = p.spec_for(&cfgs[3]).unwrap();
    assert_eq!((spec.window_bytes, spec.streams), (Some(256 * 1024), 2));
}

#[test]
fn the_lab_variant_is_accepted() {
    let text = ISSUE_PLAN.replace(
        "kind = \"loopback\"",
        "kind = \"lab\"\nrate = \"1G\"\nrtt = \"20ms\"",
    );
    let p = Plan::parse("plan.toml", &text).unwrap();
    let Target::Lab { path, .. } = p.target else {
        panic!("{:?}", p.target)
    };
    assert_eq!(path.rate_bps, Some(1e9));
    assert_eq!(path.delay, Duration::from_millis(10));
}

#[test]
fn every_mistake_is_reported_with_its_line() {
    let text = r#"
[target]
kind = "loopback"
colour = "red"

[test]
duration = "2 fortnights"
protocol = "tcp"

[matrix]
window = ["64K", "huge"]
speed = [1, 2]

[repeat]
count = 0
order = "random"
"#;
    let err = Plan::parse("bad.toml", text).unwrap_err();
    let lines = issue_lines(&err);
    let has = |line: usize, word: &str| lines.iter().any(|(l, m)| *l == line && m.contains(word));
    assert!(has(4, "colour"), "{lines:?}");
    assert!(has(7, "duration"), "{lines:?}");
    assert!(has(11, "huge"), "{lines:?}");
    assert!(has(12, "speed"), "{lines:?}");
    assert!(has(15, "count"), "{lines:?}");
    assert!(has(16, "random"), "{lines:?}");
    let text = err.to_string();
    assert!(
        text.contains("bad.toml:4:") && text.contains("6 problem(s)"),
        "{text}"
    );
}

/// A refused plan's problems: (line, message).
fn issue_lines(err: &PlanError) -> Vec<(usize, &str)> {
    err.issues
        .iter()
        .map(|i| (i.line, i.message.as_str()))
        .collect()
}

/// Every problem of the profiles at once, each at its own line (a VM trial's plan with two
/// misspelt keys and a bad value took three `--check`s, one problem each).
#[test]
fn every_profile_problem_is_reported_at_once_at_its_line() {
    let text = r#"[target]
kind = "loopback"
[matrix]
profile = ["default", "bad", "range"]
[profiles.bad.linux]
"net.ipv4.tcp_rmem_max" = "4194304"
"net.ipv4.tcp_wmen" = "4096 65536 4194304"
[profiles.range.linux]
"net.ipv4.tcp_rmem" = "4096 131072 -5"
"net.ipv4.tcp_congestion_control" = "cubicc"
"net.ipv4.tcp_window_scaling" = "1"
"#;
    let err = Plan::parse("typo.toml", text).unwrap_err();
    let lines = issue_lines(&err);
    let has = |line: usize, word: &str| lines.iter().any(|(l, m)| *l == line && m.contains(word));
    assert!(
        has(6, "did you mean net.core.rmem_max or net.ipv4.tcp_rmem?"),
        "{lines:?}"
    );
    assert!(has(7, "did you mean net.ipv4.tcp_wmem?"), "{lines:?}");
    assert!(has(9, "does not parse"), "{lines:?}");
    assert!(has(10, "did you mean cubic?"), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
}

#[test]
fn toml_syntax_errors_have_a_line_too() {
    let err = Plan::parse("x.toml", "[target]\nkind = \n").unwrap_err();
    assert_eq!(err.issues[0].line, 2, "{err}");
}

#[test]
fn profiles_from_the_plan_and_built_ins_make_a_dimension() {
    let text = format!(
        "{ISSUE_PLAN}\n[profiles.bigbuf.linux]\n\"net.ipv4.tcp_rmem\" = \"4096 131072 16777216\"\n"
    );
    let text = text.replace(
        "parallel = [1, 2]",
        "parallel = [1, 2]\nprofile = [\"default\", \"bigbuf\"]",
    );
    let p = Plan::parse("p.toml", &text).unwrap();
    assert_eq!(p.configurations().len(), 8);
    assert_eq!(p.profiles.len(), 2);
    assert_eq!(
        p.profiles[1].linux["net.ipv4.tcp_rmem"].0,
        "4096 131072 16777216"
    );
    // Profiles do not change the test itself.
    let cfg = p
        .configurations()
        .into_iter()
        .find(|c| c.iter().any(|(k, v)| k == "profile" && v == "bigbuf"))
        .unwrap();
    assert_eq!(p.spec_for(&cfg).unwrap().window_bytes, Some(65536));
    let bad = text.replace("\"default\", \"bigbuf\"", "\"default\", \"hugebuf\"");
    let err = Plan::parse("p.toml", &bad).unwrap_err();
    assert!(err.to_string().contains("hugebuf"), "{err}");
    let bad = text.replace("4096 131072 16777216", "lots");
    assert!(
        Plan::parse("p.toml", &bad)
            .unwrap_err()
            .to_string()
            .contains("does not parse")
    );
}

#[test]
fn user_dimensions_carry_commands() {
    let text = format!(
        "{ISSUE_PLAN}\n[dimensions.nic]\nvirtio = {{ setup = \"echo up virtio\", teardown = \"echo down\" }}\ne1000 = {{ setup = \"echo up e1000\" }}\n"
    );
    let p = Plan::parse("p.toml", &text).unwrap();
    assert_eq!(p.configurations().len(), 8);
    assert_eq!(
        p.user_value("nic", "e1000").unwrap().setup.as_deref(),
        Some("echo up e1000")
    );
    let spec = p.spec_for(&p.configurations()[0]).unwrap();
    assert_eq!(spec.window_bytes, Some(65536));
}

#[test]
fn invalid_configurations_are_caught_before_traffic() {
    let text = ISSUE_PLAN.replace("parallel = [1, 2]", "parallel = [0, 2]");
    let err = Plan::parse("p.toml", &text).unwrap_err();
    assert!(err.to_string().contains("streams must be"), "{err}");
}

#[test]
fn allow_host_wide_is_off_unless_the_target_asks() {
    assert!(!Plan::parse("p.toml", ISSUE_PLAN).unwrap().allow_host_wide);
    let on = ISSUE_PLAN.replace(
        "kind = \"loopback\"",
        "kind = \"loopback\"\nallow_host_wide = true",
    );
    assert!(Plan::parse("p.toml", &on).unwrap().allow_host_wide);
    let bad = ISSUE_PLAN.replace(
        "kind = \"loopback\"",
        "kind = \"loopback\"\nallow_host_wide = \"maybe\"",
    );
    let err = Plan::parse("p.toml", &bad).unwrap_err();
    assert!(
        err.issues
            .iter()
            .any(|i| i.line == 4 && i.message.contains("allow_host_wide")),
        "{err}"
    );
}

/// Regression: `run --check` on a matrix of 2 x 10^10 configurations aborted on allocation.
#[test]
fn a_matrix_too_large_to_run_is_refused_by_counting() {
    let values = |n: usize, unit: &str| {
        (1..=n)
            .map(|i| format!("\"{i}{unit}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = format!(
        "[target]\nkind = \"loopback\"\n[matrix]\nwindow = [{}]\nstreams = [{}]\nlength = [{}]\nomit = [{}]\n",
        values(2000, "K"),
        values(1000, ""),
        values(1000, "K"),
        values(10, "s")
    );
    let t0 = std::time::Instant::now();
    let e = Plan::parse("big.toml", &text).unwrap_err().to_string();
    assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    assert!(e.contains("20000000000 configurations"), "{e}");
    assert!(
        e.contains("2000 window x 1000 streams x 1000 length x 10 omit"),
        "{e}"
    );
}

/// A forgotten rate must not flood a real path: UDP to an address target needs one.
#[test]
fn udp_to_an_address_target_needs_an_explicit_rate() {
    let plan = "[target]\nkind = \"address\"\nhost = \"192.0.2.1\"\n[test]\nprotocol = \"udp\"\n";
    let e = Plan::parse("p.toml", plan).unwrap_err().to_string();
    assert!(e.contains("needs a rate"), "{e}");
    let ok = format!("{plan}bitrate = \"50M\"\n");
    assert!(Plan::parse("p.toml", &ok).is_ok());
    let lab = "[target]\nkind = \"lab\"\n[test]\nprotocol = \"udp\"\n";
    assert!(Plan::parse("p.toml", lab).is_ok());
}

#[test]
fn lab_path_settings_are_dimensions_that_leave_the_test_alone() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/bufferbloat.toml"
    ))
    .unwrap();
    let p = Plan::parse("bufferbloat.toml", &text).unwrap();
    let cfgs = p.configurations();
    assert_eq!(cfgs.len(), 3);
    let spec = p.spec_for(&cfgs[1]).unwrap();
    assert_eq!(spec, p.base, "a path setting is not a test option");
    assert!(spec.latency.is_some());
    let path = p.path_for(&cfgs[1]).unwrap().unwrap();
    assert_eq!(path.queue_bytes, Some(256 * 1024));
    assert_eq!(path.rate_bps, Some(100e6));
    assert_eq!(
        path.queue_delay(),
        Some(Duration::from_secs_f64(256.0 * 1024.0 * 8.0 / 100e6))
    );
    // On a target without a lab, and with a value that is no queue, the plan is refused.
    let loopback = text.replace("kind = \"lab\"", "kind = \"loopback\"");
    let err = Plan::parse("p.toml", &loopback).unwrap_err().to_string();
    assert!(
        err.contains("matrix queue changes the path of a lab"),
        "{err}"
    );
    let bad = text.replace("\"32K\"", "\"12\"");
    let err = Plan::parse("p.toml", &bad).unwrap_err().to_string();
    assert!(err.contains("smaller than one packet"), "{err}");
    let clash = format!("{text}\n[dimensions.queue]\na = {{ setup = \"true\" }}\n");
    assert!(Plan::parse("p.toml", &clash).is_err());
}

#[test]
fn a_lab_target_with_a_guest_sweeps_nic_models_and_refuses_guest_keys_elsewhere() {
    let p = Plan::parse(
        "p.toml",
        "[target]\nkind = \"lab\"\nvm = \"b\"\nmemory = 320\n[matrix]\nnic = [\"virtio\", \"e1000\", \"rtl8139\"]\ndirection = [\"forward\", \"reverse\"]\n[repeat]\ncount = 3\n",
    )
    .unwrap();
    let cfgs = p.configurations();
    assert_eq!(cfgs.len(), 6);
    let nics: Vec<_> = cfgs
        .iter()
        .map(|c| {
            let g = p.path_for(c).unwrap().unwrap().guest.unwrap();
            assert_eq!(g.memory_mib, 320);
            g.nic.name()
        })
        .collect();
    for m in ["virtio", "e1000", "rtl8139"] {
        assert_eq!(nics.iter().filter(|n| **n == m).count(), 2, "{nics:?}");
    }
    // vm = "both": host a is a guest too, with the swept model.
    let both = Plan::parse(
        "p.toml",
        "[target]\nkind = \"lab\"\nvm = \"both\"\n[matrix]\nnic = [\"virtio\", \"e1000\"]\n[repeat]\ncount = 3\n",
    )
    .unwrap();
    for c in both.configurations() {
        let path = both.path_for(&c).unwrap().unwrap();
        assert_eq!(path.vm_hosts(), Some("both"));
        assert_eq!(path.guest_on(crate::lab::Host::A), path.guest);
    }
    // A guest setting without a guest, a NIC QEMU does not have, vm on a loopback target.
    for (text, words) in [
        (
            "[target]\nkind = \"lab\"\n[matrix]\nnic = [\"e1000\"]\n",
            "add vm = \"b\"",
        ),
        (
            "[target]\nkind = \"lab\"\nvm = \"b\"\n[matrix]\nnic = [\"ne2k\"]\n",
            "virtio, e1000 or rtl8139",
        ),
        (
            "[target]\nkind = \"loopback\"\nvm = \"b\"\n",
            "or \"both\" (guest to guest) on kind = \"lab\"",
        ),
        (
            "[target]\nkind = \"lab\"\nvm = \"a\"\n",
            "vm \"a\": vm = \"b\"",
        ),
        (
            "[target]\nkind = \"lab\"\nvm = \"b\"\nnic = \"e1000\"\n[matrix]\nqueues = [\"1\", \"2\"]\n",
            "needs virtio",
        ),
    ] {
        let e = Plan::parse("p.toml", text).unwrap_err().to_string();
        assert!(e.contains(words), "{words}: {e}");
    }
}

#[test]
fn a_window_of_auto_or_default_is_autotuning_and_window_mode_is_a_key_and_a_dimension() {
    let p = Plan::parse(
        "plan.toml",
        "[target]\nkind = \"loopback\"\n[test]\nwindow_mode = \"ask\"\n[matrix]\nwindow = [\"auto\", \"1M\", \"default\"]\n",
    )
    .unwrap();
    let specs: Vec<TestSpec> = p
        .configurations()
        .iter()
        .map(|c| p.spec_for(c).unwrap())
        .collect();
    let windows: Vec<Option<u64>> = specs.iter().map(|s| s.window_bytes).collect();
    assert_eq!(windows, [None, Some(1 << 20), None]);
    assert!(
        specs
            .iter()
            .all(|s| s.window_mode == crate::traffic::spec::WindowMode::Ask)
    );
    let p = Plan::parse(
        "plan.toml",
        "[target]\nkind = \"loopback\"\n[test]\nwindow = \"1M\"\n[matrix]\nwindow_mode = [\"ask\", \"force\"]\n",
    )
    .unwrap();
    let modes: Vec<_> = p
        .configurations()
        .iter()
        .map(|c| p.spec_for(c).unwrap().window_mode)
        .collect();
    use crate::traffic::spec::WindowMode;
    assert_eq!(modes, [WindowMode::Ask, WindowMode::Force]);
    let e = Plan::parse(
        "plan.toml",
        "[target]\nkind = \"loopback\"\n[matrix]\nwindow_mode = [\"ask\", \"maybe\"]\n",
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("plan.toml:4: matrix window_mode: window mode \"maybe\""),
        "{e}"
    );
}

/// Regression: `window = ["64K", "64K"]` made two configurations with the same label.
#[test]
fn duplicate_values_in_a_dimension_are_refused_at_parse() {
    let e = Plan::parse(
        "plan.toml",
        "[target]\nkind = \"loopback\"\n[matrix]\nparallel = [1, 2]\nwindow = [\"64K\", \"1M\", \"64K\"]\n",
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("plan.toml:5: matrix window: \"64K\" is listed twice"),
        "{text}"
    );
    assert_eq!(e.issues.len(), 1, "{text}");
    let e = Plan::parse(
        "plan.toml",
        "[target]\nkind = \"loopback\"\n[matrix]\nprofile = [\"default\", \"default\"]\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("\"default\" is listed twice"), "{e}");
}

/// `ssh_options` serves both `server_start` and `server_tuning` of a libvirt target: one
/// reader, and one report of a mistake in it.
/// A guest's setting out of range is one mistake, said at its own line: the lab path's check
/// and each swept NIC model applied to the path met it again and said it at the `[target]`
/// line and at the matrix's (a newcomer's trial read three problems for one), and a wrong
/// model beside it is still reported.
#[test]
fn a_guest_setting_out_of_range_is_reported_once_at_its_line_beside_a_wrong_model() {
    let e = Plan::parse(
        "p.toml",
        "[target]\nkind = \"lab\"\nvm = \"b\"\nmemory = 16\n[matrix]\nnic = [\"virtio\", \"rtl8193\"]\n",
    )
    .unwrap_err();
    let lines: Vec<(usize, &str)> = e
        .issues
        .iter()
        .map(|i| (i.line, i.message.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (4, "target memory: memory 16 MiB is out of range 128..16384"),
            (
                6,
                "matrix nic: unknown NIC model \"rtl8193\": use virtio, e1000 or rtl8139"
            ),
        ],
        "{e}"
    );
}

#[test]
fn ssh_options_that_are_not_a_list_of_options_are_reported_once() {
    let plan = |options: &str| {
        format!(
            "[target]\nkind = \"libvirt\"\ndomain = \"vm1\"\nhost = \"198.18.0.2\"\n\
             server_start = \"ssh:root@198.18.0.2\"\nserver_command = \"netsweep server --daemon\"\n\
             server_tuning = \"ssh:root@198.18.0.2\"\nssh_options = {options}\n"
        )
    };
    let p = Plan::parse("p.toml", &plan("[\"Port=2222\", \"IdentityFile=/k\"]")).unwrap();
    let crate::campaigns::plan::Target::Libvirt(t) = &p.target else {
        panic!("{:?}", p.target)
    };
    let crate::campaigns::plan::ServerStart::Ssh { ssh_options, .. } = &t.start else {
        panic!("{:?}", t.start)
    };
    assert_eq!(ssh_options, &["Port=2222", "IdentityFile=/k"]);
    for (options, words) in [
        ("\"Port=2222\"", "ssh_options must be a list"),
        (
            "[[\"Port=2222\"]]",
            "each of ssh_options is one ssh -o option",
        ),
        ("[2222]", "each of ssh_options is one ssh -o option"),
    ] {
        let e = Plan::parse("p.toml", &plan(options))
            .unwrap_err()
            .to_string();
        assert_eq!(e.matches(words).count(), 1, "{e}");
    }
}

/// A loopback plan of 2 s tests with `test` in `[test]` and `matrix` in `[matrix]`: each
/// configuration's label and `field` of its resolved test.
fn resolved<T>(test: &str, matrix: &str, field: impl Fn(&TestSpec) -> T) -> Vec<(String, T)> {
    let text = format!(
        "[target]\nkind = \"loopback\"\n[test]\nduration = \"2s\"\n{test}\n[matrix]\n{matrix}\n"
    );
    let p = Plan::parse("p.toml", &text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
    p.resolve_all()
        .unwrap()
        .into_iter()
        .map(|c| (c.label, field(&c.spec)))
        .collect()
}

/// A plan's receivers copy the data, as iperf3's do, unless `skip_rx_copy` (iperf3's name) says
/// otherwise, in `[test]` or as a dimension that compares both.
#[test]
fn a_plans_receivers_copy_unless_skip_rx_copy_is_named() {
    let skips = |test: &str, matrix: &str| resolved(test, matrix, |s| s.skip_rx_copy);
    let windows = "window = [\"64K\", \"1M\"]";
    assert!(skips("", windows).iter().all(|(_, s)| !s));
    assert!(
        skips("skip_rx_copy = true", windows)
            .iter()
            .all(|(_, s)| *s)
    );
    let both = skips("", "skip_rx_copy = [false, true]");
    assert_eq!(both.iter().filter(|(_, s)| *s).count(), 1, "{both:?}");
    assert!(
        Plan::parse(
            "p.toml",
            "[target]\nkind = \"loopback\"\n[test]\nskip_rx_copy = \"maybe\"\n"
        )
        .is_err()
    );
}

/// A plan's `length` means what `client -l` means: written with write(2) unless `zerocopy`
/// (in `[test]` or the matrix) says otherwise; without `length` sendfile stays a candidate.
#[test]
fn a_plans_length_is_written_as_the_command_lines_unless_zerocopy_is_named() {
    let zerocopy_of = |test: &str, matrix: &str| resolved(test, matrix, |s| s.zerocopy);
    let all = |v: &[(String, bool)], want: bool| v.iter().all(|(_, z)| *z == want);
    let lengths = "length = [\"128K\", \"1M\"]";
    assert!(all(&zerocopy_of("", "window = [\"64K\", \"1M\"]"), true));
    assert!(all(
        &zerocopy_of("length = \"1M\"", "window = [\"64K\", \"1M\"]"),
        false
    ));
    assert!(all(&zerocopy_of("", lengths), false));
    assert!(all(&zerocopy_of("zerocopy = true", lengths), true));
    assert!(all(
        &zerocopy_of("length = \"1M\"\nzerocopy = true", "window = [\"64K\"]"),
        true
    ));
    assert_eq!(
        zerocopy_of("", &format!("{lengths}\nzerocopy = [true, false]")),
        [
            ("length=128K zerocopy=true", true),
            ("length=128K zerocopy=false", false),
            ("length=1M zerocopy=true", true),
            ("length=1M zerocopy=false", false),
        ]
        .map(|(l, z)| (l.to_string(), z))
    );
}
