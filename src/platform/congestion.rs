//! Whether this host's kernel lets a socket use a congestion control, and why not: tried on a
//! throwaway socket (what counts is what a test's socket would get), explained from the
//! kernel's available and allowed lists.

/// Why `name` cannot be used on this host (`end` says where that is, for the message: "here",
/// "on the server"), or `None` when a socket accepts it.
pub fn unusable(name: &str, end: &str) -> Option<String> {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| e.to_string());
    let set = sock.and_then(|s| {
        crate::platform::sockopt::set_congestion(&s, name).map_err(|e| e.to_string())
    });
    let error = set.err()?;
    let read = |key| crate::platform::sysctl::read(key).unwrap_or_else(|_| "?".into());
    let available = match crate::platform::THIS_OS {
        crate::platform::Os::Linux => read("net.ipv4.tcp_available_congestion_control"),
        // FreeBSD lists loaded modules (cc_cubic, cc_htcp, ...) here and has no allowed list.
        crate::platform::Os::FreeBsd => {
            let list = read("net.inet.tcp.cc.available");
            return Some(format!(
                "congestion control {name:?} cannot be set {end} ({error}); available: {} \
                 (kldload cc_NAME loads another)",
                list.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    };
    Some(if available.split_whitespace().any(|a| a == name) {
        let allowed = read("net.ipv4.tcp_allowed_congestion_control");
        format!(
            "congestion control {name:?} is not in net.ipv4.tcp_allowed_congestion_control \
             ({allowed}) {end}, so only root may set it: run as root, allow it {end} with `{}`, \
             or leave it out",
            allow_command(&allowed, name)
        )
    } else {
        format!("congestion control {name:?} cannot be set {end} ({error}); available: {available}")
    })
}

/// The exact command that adds `name` to the allowed list `allowed` (kept in its order).
pub fn allow_command(allowed: &str, name: &str) -> String {
    let mut names: Vec<&str> = allowed.split_whitespace().collect();
    if !names.contains(&name) {
        names.push(name);
    }
    crate::platform::sysctl::sysctl_line(
        "net.ipv4.tcp_allowed_congestion_control",
        &names.join(" "),
    )
}

#[cfg(test)]
mod tests {
    /// Regression: the advice said "add it there", which is not a command.
    #[test]
    fn the_allowed_list_advice_is_a_command() {
        assert_eq!(
            super::allow_command("reno bbr", "cubic"),
            "sysctl -w net.ipv4.tcp_allowed_congestion_control='reno bbr cubic'"
        );
        assert_eq!(
            super::allow_command("reno bbr", "bbr"),
            "sysctl -w net.ipv4.tcp_allowed_congestion_control='reno bbr'"
        );
    }

    #[test]
    fn a_name_no_kernel_has_is_explained_and_the_default_is_usable() {
        let why = super::unusable("nosuchcc", "on the server").expect("refused");
        assert!(
            why.starts_with("congestion control \"nosuchcc\" cannot be set on the server ("),
            "{why}"
        );
        assert!(why.contains("available: "), "{why}");
        // Whatever this kernel's default is, a socket accepts it.
        if let Ok(default) = crate::platform::sysctl::read("net.ipv4.tcp_congestion_control") {
            assert_eq!(super::unusable(default.trim(), "here"), None);
        }
    }
}
