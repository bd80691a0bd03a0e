//! Reads a libvirt domain definition (`virsh dumpxml DOMAIN`) and flags network interfaces
//! whose model is emulated (`rtl8139`, `e1000`, `e1000e`) or missing (libvirt's default can be
//! rtl8139), with the corrected XML and the `virsh` commands that apply it.

use super::{Finding, Severity};
use crate::host::libvirt::{virsh::Virsh, xml};

/// What `doctor --libvirt-xml` says of a libvirt guest given NIC `model` (`virtio`, `e1000`,
/// `rtl8139`, as QEMU names them): for a campaign that measured a QEMU guest of that model, the
/// advice a libvirt user with the same model would get, with its corrected XML.
pub fn advice_for_model(model: &str) -> Vec<Finding> {
    if model.is_empty()
        || !model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Vec::new();
    }
    let xml = format!(
        "<domain type='kvm'><name>guest</name><devices><interface type='network'>\
         <source network='default'/><model type='{model}'/></interface></devices></domain>"
    );
    check(&xml).unwrap_or_default()
}

/// Findings for every `<interface>` of the domain.
pub fn check(xml: &str) -> Result<Vec<Finding>, String> {
    let doc = xml::parse(xml)?;
    let root = doc.root_element();
    let domain = root
        .children()
        .find(|n| n.has_tag_name("name"))
        .and_then(|n| n.text())
        .map_or_else(|| "DOMAIN".to_string(), crate::inputs::peer_text);
    let mut out = Vec::new();
    let ifaces = root.descendants().filter(|n| {
        n.has_tag_name("interface") && n.parent().is_some_and(|p| p.has_tag_name("devices"))
    });
    for (i, iface) in ifaces.enumerate() {
        let kind = crate::inputs::peer_text(iface.attribute("type").unwrap_or("?"));
        let mac = iface
            .children()
            .find(|n| n.has_tag_name("mac"))
            .and_then(|n| n.attribute("address"))
            .map(crate::inputs::peer_text);
        let model = iface
            .children()
            .find(|n| n.has_tag_name("model"))
            .and_then(|n| n.attribute("type"))
            .map(crate::inputs::peer_text);
        let source = iface
            .children()
            .find(|n| n.has_tag_name("source"))
            .and_then(|n| {
                n.attribute("network")
                    .or(n.attribute("bridge"))
                    .or(n.attribute("dev"))
            })
            .unwrap_or("default")
            .to_string();
        let who = mac
            .clone()
            .map_or(format!("interface {}", i + 1), |m| format!("interface {m}"));
        let id = format!(
            "libvirt.nic.{}",
            mac.clone().unwrap_or_else(|| (i + 1).to_string())
        );
        let (sev, what) = match model.as_deref() {
            Some("virtio") => (Severity::Ok, format!("{who} uses virtio")),
            Some(m @ "rtl8139") => (
                Severity::Problem,
                format!("{who} uses the emulated {m}: expect a small fraction of line rate"),
            ),
            Some(m @ ("e1000" | "e1000e")) => (
                Severity::Problem,
                format!("{who} uses the emulated {m}: far slower than virtio"),
            ),
            Some(m) => (Severity::Info, format!("{who} uses model {m}")),
            None => (
                Severity::Problem,
                format!(
                    "{who} has no <model>: libvirt and QEMU may default to an emulated rtl8139 or e1000"
                ),
            ),
        };
        let mut f = Finding::new(id, sev, what)
            .evidence("type", &kind)
            .evidence("model", model.clone().unwrap_or_else(|| "(none)".into()))
            .evidence("source", &source);
        if sev == Severity::Problem {
            let mac_line = mac
                .as_ref()
                .map(|m| format!("\n  <mac address='{m}'/>"))
                .unwrap_or_default();
            let src_attr = if kind == "bridge" {
                "bridge"
            } else {
                "network"
            };
            let mac_arg = mac
                .as_ref()
                .map(|m| format!(" --mac {m}"))
                .unwrap_or_default();
            f = f.fix(format!(
                "use this interface XML (virsh edit {domain}):\n<interface type='{kind}'>{mac_line}\n  <source {src_attr}='{source}'/>\n  <model type='virtio'/>\n</interface>\nor: virsh detach-interface {domain} {kind}{mac_arg} --config && virsh attach-interface {domain} {kind} {source} --model virtio{mac_arg} --config, then restart the guest; inside it the driver becomes virtio_net"
            ));
        }
        out.push(f);
    }
    if out.is_empty() {
        out.push(Finding::new(
            "libvirt.no_interfaces",
            Severity::Info,
            format!("domain {domain} has no network interface"),
        ));
    }
    Ok(out)
}

/// How long the printed restart waits for the guest to shut down before powering it off.
const RESTART_GRACE_S: u32 = 60;

/// The commands that restart a running `domain` gracefully: shut down, wait until it is off
/// (at most `RESTART_GRACE_S`, then power it off: a guest that ignores ACPI never shuts down,
/// and a trial's pasted loop waited forever), start. A domain that is off is left off: the
/// change is in its next start.
fn restart_commands(virsh: &Virsh, domain: &str) -> String {
    let state = format!("\"$({})\"", virsh.command_line(&["domstate", domain]));
    format!(
        "if [ {state} != \"shut off\" ]; then {}; i=0; while [ {state} != \"shut off\" ] && \
         [ $i -lt {RESTART_GRACE_S} ]; do sleep 1; i=$((i+1)); done; [ {state} = \"shut off\" ] \
         || {}; {}; fi",
        virsh.command_line(&["shutdown", domain]),
        virsh.command_line(&["destroy", domain]),
        virsh.command_line(&["start", domain])
    )
}

/// A domain as libvirt runs it (`live`, from `virsh dumpxml`), with the definition its next
/// start uses (`inactive`): `check`'s findings, each fix as the exact commands for this domain
/// (`virsh update-device --config` of the interface as the next start has it, only its model
/// changed, then a restart), the driver the guest bound where it was read (`drivers`, by MAC),
/// and any model changed for the next start but not running yet.
pub fn check_live(
    virsh: &Virsh,
    domain: &str,
    live: &str,
    inactive: &str,
    drivers: &[(String, Result<String, String>)],
) -> Result<Vec<Finding>, String> {
    let mut findings = check(live)?;
    let live_ifaces = xml::interfaces(live)?;
    let next_ifaces = xml::interfaces(inactive)?;
    let mut extra = Vec::new();
    for (i, iface) in live_ifaces.iter().enumerate() {
        let Some(f) = findings.get_mut(i) else { break };
        // The same interface in the next start's definition: by MAC, else by position.
        let next = match &iface.mac {
            Some(m) => next_ifaces
                .iter()
                .position(|n| n.mac.as_deref() == Some(m.as_str())),
            None => (i < next_ifaces.len()).then_some(i),
        };
        if let Some(Ok(driver)) = iface
            .mac
            .as_ref()
            .and_then(|m| drivers.iter().find(|(dm, _)| dm == m))
            .map(|(_, d)| d)
        {
            f.evidence.push(("guest driver".into(), driver.clone()));
        }
        let Some(n) = next else { continue };
        let next_model = next_ifaces[n].model.as_deref();
        if next_model != iface.model.as_deref() {
            extra.push(
                Finding::new(
                    format!("libvirt.pending.{}", iface.mac.as_deref().unwrap_or("?")),
                    Severity::Warning,
                    format!(
                        "interface {} runs model {} but the next start uses {}: the change takes \
                         effect when the domain restarts",
                        iface.mac.as_deref().unwrap_or("?"),
                        iface.model.as_deref().unwrap_or("(default)"),
                        next_model.unwrap_or("(default)")
                    ),
                )
                .fix(restart_commands(virsh, domain)),
            );
            if next_model == Some("virtio") {
                // Already fixed for the next start: only the restart is missing.
                f.fix = None;
                continue;
            }
        }
        if f.severity == Severity::Problem {
            let changed = xml::with_model(inactive, n, "virtio")?;
            let text = xml::interface_text(&changed, n)?;
            f.fix = Some(format!(
                "give the interface model virtio in the definition, then restart the guest (its \
                 driver becomes virtio_net):\n{} <<'EOF'\n{text}\nEOF\n{}",
                virsh.command_line(&["update-device", domain, "/dev/stdin", "--config"]),
                restart_commands(virsh, domain)
            ));
        }
    }
    findings.extend(extra);
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(ifaces: &str) -> String {
        format!("<domain type='kvm'><name>vm1</name><devices>{ifaces}</devices></domain>")
    }

    #[test]
    fn emulated_and_missing_models_are_problems_with_a_fix() {
        let xml = domain(
            "<interface type='network'><mac address='52:54:00:aa:bb:01'/><source network='default'/><model type='rtl8139'/></interface>\
             <interface type='bridge'><mac address='52:54:00:aa:bb:02'/><source bridge='br0'/><model type='e1000'/></interface>\
             <interface type='network'><mac address='52:54:00:aa:bb:03'/><source network='default'/><model type='virtio'/></interface>\
             <interface type='network'><source network='lan'/></interface>",
        );
        let f = check(&xml).unwrap();
        assert_eq!(f.len(), 4);
        assert_eq!(f[0].id, "libvirt.nic.52:54:00:aa:bb:01");
        assert_eq!(f[0].severity, Severity::Problem);
        let fix = f[0].fix.as_deref().unwrap();
        assert!(
            fix.contains("<model type='virtio'/>")
                && fix.contains("virsh edit vm1")
                && fix.contains("--model virtio"),
            "{fix}"
        );
        assert!(
            f[1].fix
                .as_deref()
                .unwrap()
                .contains("<source bridge='br0'/>")
        );
        assert_eq!(f[2].severity, Severity::Ok);
        assert_eq!(
            (f[3].id.as_str(), f[3].severity),
            ("libvirt.nic.4", Severity::Problem)
        );
    }

    #[test]
    fn bad_xml_and_other_documents_are_refused() {
        assert!(check("<domain>").unwrap_err().contains("not valid XML"));
        assert!(
            check("<network/>")
                .unwrap_err()
                .contains("expected a libvirt <domain>")
        );
        assert_eq!(
            check(&domain("")).unwrap()[0].id.as_str(),
            "libvirt.no_interfaces"
        );
    }

    #[test]
    fn the_advice_for_a_measured_model_is_what_a_libvirt_user_would_get() {
        let f = advice_for_model("rtl8139");
        assert_eq!(f[0].severity, Severity::Problem);
        assert!(
            f[0].fix
                .as_deref()
                .unwrap()
                .contains("<model type='virtio'/>"),
            "{:?}",
            f[0]
        );
        assert_eq!(advice_for_model("virtio")[0].severity, Severity::Ok);
        assert!(advice_for_model("x'/><evil").is_empty());
    }
}

#[cfg(test)]
mod live_tests {
    use super::*;

    const NEXT: &str = "<domain type='qemu'><name>my vm</name><devices>\n<interface type='bridge'>\n  <mac address='52:54:00:12:00:02'/>\n  <source bridge='br0'/>\n  <model type='rtl8139'/>\n  <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0'/>\n</interface>\n</devices></domain>";

    #[test]
    fn a_live_domain_gets_the_exact_commands_of_its_fix() {
        let virsh = Virsh::new(Some("qemu:///system".into()));
        let drivers = vec![("52:54:00:12:00:02".to_string(), Ok("8139cp".to_string()))];
        let f = check_live(&virsh, "my vm", NEXT, NEXT, &drivers).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Severity::Problem);
        assert!(
            f[0].evidence
                .contains(&("guest driver".into(), "8139cp".into()))
        );
        let fix = f[0].fix.as_deref().unwrap();
        assert!(
            fix.contains("virsh -c qemu:///system update-device 'my vm' /dev/stdin --config <<'EOF'\n<interface type='bridge'>")
                && fix.contains("<model type='virtio'/>\n  <address type='pci'")
                && fix.contains("\nEOF\nif [ \"$(virsh -c qemu:///system domstate 'my vm')\" != \"shut off\" ]; then virsh -c qemu:///system shutdown 'my vm'; i=0; while [ \"$(virsh -c qemu:///system domstate 'my vm')\" != \"shut off\" ] && [ $i -lt 60 ]; do sleep 1; i=$((i+1)); done; [ \"$(virsh -c qemu:///system domstate 'my vm')\" = \"shut off\" ] || virsh -c qemu:///system destroy 'my vm'; virsh -c qemu:///system start 'my vm'; fi"),
            "{fix}"
        );
    }

    #[test]
    fn a_model_changed_for_the_next_start_only_asks_for_a_restart() {
        let virsh = Virsh::new(None);
        let next = NEXT.replace("rtl8139", "virtio");
        let f = check_live(&virsh, "vm", NEXT, &next, &[]).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].fix, None);
        assert_eq!(f[1].severity, Severity::Warning);
        assert!(
            f[1].title
                .contains("runs model rtl8139 but the next start uses virtio")
        );
        // A trial's finding: 26 spaces in mid-sentence.
        assert!(!f[1].title.contains("  "), "{}", f[1].title);
        // The restart, bounded (a guest that ignores ACPI is powered off after 60 s), and
        // nothing for a domain that is off; valid sh.
        let fix = f[1].fix.as_deref().unwrap();
        assert!(
            fix.starts_with(
                "if [ \"$(virsh domstate vm)\" != \"shut off\" ]; then virsh shutdown vm; i=0; "
            ) && fix.contains("[ $i -lt 60 ]")
                && fix.contains("|| virsh destroy vm; virsh start vm; fi"),
            "{fix}"
        );
        let syntax = std::process::Command::new("sh")
            .args(["-n", "-c", fix])
            .status()
            .unwrap();
        assert!(syntax.success(), "{fix}");
    }
}
