//! A libvirt domain definition read and changed as text: its network interfaces, and the same
//! definition with one interface's `<model type>` replaced. Only that attribute changes; every
//! other byte of the user's definition stays as it was (a parsed and re-serialized document
//! would lose comments, attribute quoting and order, which `virsh define` would keep).

/// One `<interface>` of a domain's `<devices>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its `type` attribute (`network`, `bridge`, `ethernet`, `direct`, ...).
    pub kind: String,
    pub mac: Option<String>,
    /// `<model type>`; `None` when the definition leaves it to libvirt's default.
    pub model: Option<String>,
    /// `<source network|bridge|dev>`.
    pub source: Option<String>,
}

/// The most a definition may hold: `virsh dumpxml` of a large domain is a few tens of KiB.
pub const MAX_DEFINITION: usize = 4 << 20;

/// The definition parsed, its root checked to be a `<domain>`, its size capped.
pub fn parse(xml: &str) -> Result<roxmltree::Document<'_>, String> {
    if xml.len() > MAX_DEFINITION {
        return Err(format!(
            "the definition is {} bytes, more than the {MAX_DEFINITION}-byte cap",
            xml.len()
        ));
    }
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("not valid XML: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "domain" {
        return Err(format!(
            "expected a libvirt <domain>, found <{}>",
            root.tag_name().name()
        ));
    }
    Ok(doc)
}

fn interface_nodes<'a, 'i>(
    doc: &'a roxmltree::Document<'i>,
) -> impl Iterator<Item = roxmltree::Node<'a, 'i>> {
    doc.root_element().descendants().filter(|n| {
        n.has_tag_name("interface") && n.parent().is_some_and(|p| p.has_tag_name("devices"))
    })
}

fn child<'a, 'i>(n: roxmltree::Node<'a, 'i>, tag: &str) -> Option<roxmltree::Node<'a, 'i>> {
    n.children().find(|c| c.has_tag_name(tag))
}

/// The domain's `<name>`.
pub fn name(xml: &str) -> Result<String, String> {
    let doc = parse(xml)?;
    child(doc.root_element(), "name")
        .and_then(|n| n.text())
        .map(|s| s.trim().to_string())
        .ok_or_else(|| "the definition has no <name>".to_string())
}

/// Every network interface, in the definition's order.
pub fn interfaces(xml: &str) -> Result<Vec<Interface>, String> {
    let doc = parse(xml)?;
    Ok(interface_nodes(&doc)
        .map(|n| Interface {
            kind: n.attribute("type").unwrap_or("?").to_string(),
            mac: child(n, "mac")
                .and_then(|m| m.attribute("address"))
                .map(|s| s.to_ascii_lowercase()),
            model: child(n, "model")
                .and_then(|m| m.attribute("type"))
                .map(str::to_string),
            source: child(n, "source").and_then(|s| {
                s.attribute("network")
                    .or(s.attribute("bridge"))
                    .or(s.attribute("dev"))
                    .map(str::to_string)
            }),
        })
        .collect())
}

/// A model name as libvirt spells them (`virtio`, `e1000`, `e1000e`, `rtl8139`, ...): letters,
/// digits, `-` and `_`, so it can go into XML and a printed command unquoted.
pub fn valid_model(model: &str) -> Result<(), String> {
    if !model.is_empty()
        && model.len() <= 32
        && model
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(format!(
            "NIC model {model:?} is not a libvirt model name (virtio, e1000, e1000e, rtl8139, ...)"
        ))
    }
}

/// A MAC address written as libvirt writes one: six pairs of hex digits joined by `:`.
pub fn valid_mac(mac: &str) -> bool {
    mac.len() == 17
        && mac
            .split(':')
            .all(|b| b.len() == 2 && b.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Which interface `mac` names (any case), or the only one when `mac` is `None`.
pub fn pick(ifaces: &[Interface], mac: Option<&str>) -> Result<usize, String> {
    match mac {
        Some(m) => ifaces
            .iter()
            .position(|i| i.mac.as_deref() == Some(m.to_ascii_lowercase().as_str()))
            .ok_or_else(|| {
                format!(
                    "the domain has no interface with MAC {m} (it has {})",
                    macs(ifaces)
                )
            }),
        None => match ifaces.len() {
            0 => Err("the domain has no network interface".into()),
            1 => Ok(0),
            _ => Err(format!(
                "the domain has {} interfaces ({}): say which with interface = \"MAC\"",
                ifaces.len(),
                macs(ifaces)
            )),
        },
    }
}

fn macs(ifaces: &[Interface]) -> String {
    let list: Vec<&str> = ifaces
        .iter()
        .map(|i| i.mac.as_deref().unwrap_or("no MAC"))
        .collect();
    if list.is_empty() {
        "none".into()
    } else {
        list.join(", ")
    }
}

/// The definition with interface number `index` given `<model type='MODEL'/>`: its `type`
/// attribute replaced where the interface has a `<model>`, a `<model>` element added before
/// `</interface>` where it has none.
pub fn with_model(xml: &str, index: usize, model: &str) -> Result<String, String> {
    valid_model(model)?;
    let doc = parse(xml)?;
    let iface = interface_nodes(&doc)
        .nth(index)
        .ok_or_else(|| format!("the domain has no interface number {}", index + 1))?;
    let mut out = String::with_capacity(xml.len() + 32);
    match child(iface, "model") {
        Some(m) => match m.attribute_node("type") {
            Some(attr) => {
                let r = attr.range_value();
                out.push_str(&xml[..r.start]);
                out.push_str(model);
                out.push_str(&xml[r.end..]);
            }
            None => {
                // `<model/>` without a type: the element is replaced whole.
                let r = m.range();
                out.push_str(&xml[..r.start]);
                out.push_str(&format!("<model type='{model}'/>"));
                out.push_str(&xml[r.end..]);
            }
        },
        None => {
            let r = iface.range();
            let text = &xml[r.clone()];
            let Some(close) = text.rfind("</") else {
                return Err("the interface element has no closing tag".into());
            };
            out.push_str(&xml[..r.start + close]);
            out.push_str(&format!("<model type='{model}'/>"));
            out.push_str(&xml[r.start + close..]);
        }
    }
    // The change must read back as asked, and nothing else may have moved.
    let before = interfaces(xml)?;
    let after = interfaces(&out)?;
    let mut expected = before.clone();
    expected[index].model = Some(model.to_string());
    if after != expected {
        return Err("the changed definition does not read back as asked".into());
    }
    Ok(out)
}

/// Whether `now` differs from `original` by more than its interfaces' models (what a campaign
/// changes): `now` with each interface given the original's model, against `original`.
pub fn changed_beyond_models(now: &str, original: &str) -> Result<bool, String> {
    let (was, is) = (interfaces(original)?, interfaces(now)?);
    if was.len() != is.len() {
        return Ok(true);
    }
    let mut back = now.to_string();
    for (i, (w, n)) in was.iter().zip(&is).enumerate() {
        match (&w.model, &n.model) {
            (Some(m), b) if Some(m) != b.as_ref() => back = with_model(&back, i, m)?,
            // A model netsweep added where there was none cannot be told from an edit.
            (None, Some(_)) => return Ok(true),
            _ => {}
        }
    }
    Ok(back != original)
}

/// The text of interface number `index`, as the definition writes it.
pub fn interface_text(xml: &str, index: usize) -> Result<String, String> {
    let doc = parse(xml)?;
    let iface = interface_nodes(&doc)
        .nth(index)
        .ok_or_else(|| format!("the domain has no interface number {}", index + 1))?;
    Ok(xml[iface.range()].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOMAIN: &str = "<domain type='qemu'>\n  <name>vm1</name>\n  <!-- the user's comment -->\n  <devices>\n    <interface type='bridge'>\n      <mac address='52:54:00:AA:00:01'/>\n      <source bridge='br0'/>\n      <model type=\"rtl8139\"/>\n    </interface>\n    <interface type='network'>\n      <mac address='52:54:00:aa:00:02'/>\n      <source network='default'/>\n    </interface>\n  </devices>\n</domain>\n";

    #[test]
    fn interfaces_are_read_with_their_models_and_sources() {
        let i = interfaces(DOMAIN).unwrap();
        assert_eq!(i.len(), 2);
        assert_eq!(i[0].mac.as_deref(), Some("52:54:00:aa:00:01"));
        assert_eq!(i[0].model.as_deref(), Some("rtl8139"));
        assert_eq!(i[0].source.as_deref(), Some("br0"));
        assert_eq!(i[1].model, None);
        assert_eq!(name(DOMAIN).unwrap(), "vm1");
    }

    #[test]
    fn only_the_model_attribute_changes() {
        let out = with_model(DOMAIN, 0, "virtio").unwrap();
        assert_eq!(
            out,
            DOMAIN.replace("<model type=\"rtl8139\"/>", "<model type=\"virtio\"/>")
        );
        // An interface without a model gets one before its closing tag.
        let out = with_model(DOMAIN, 1, "e1000").unwrap();
        assert!(
            out.contains(
                "<source network='default'/>\n    <model type='e1000'/></interface>\n  </devices>"
            ),
            "{out}"
        );
        assert!(out.contains("<!-- the user's comment -->"));
        assert_eq!(
            interface_text(&out, 1).unwrap(),
            "<interface type='network'>\n      <mac address='52:54:00:aa:00:02'/>\n      <source network='default'/>\n    <model type='e1000'/></interface>"
        );
        // And back: the original model restores the original text of the first interface.
        let there = with_model(DOMAIN, 0, "e1000e").unwrap();
        assert_eq!(with_model(&there, 0, "rtl8139").unwrap(), DOMAIN);
    }

    /// Regression (a trial's finding): after a kill -9, the next command put the journaled
    /// definition back over an admin's later edit. Only a definition that differs from the
    /// original by its models (what a campaign changes) is put back.
    #[test]
    fn a_definition_edited_beyond_its_models_is_told_apart() {
        let swept = with_model(DOMAIN, 0, "virtio").unwrap();
        assert_eq!(changed_beyond_models(&swept, DOMAIN), Ok(false));
        assert_eq!(changed_beyond_models(DOMAIN, DOMAIN), Ok(false));
        let edited = swept.replace(
            "<name>vm1</name>",
            "<name>vm1</name>\n  <description>an admin's edit</description>",
        );
        assert_eq!(changed_beyond_models(&edited, DOMAIN), Ok(true));
        // A model given where the original had none cannot be told from an edit.
        let added = with_model(DOMAIN, 1, "virtio").unwrap();
        assert_eq!(changed_beyond_models(&added, DOMAIN), Ok(true));
        let one_less = DOMAIN.replace("<interface type='network'>", "<x>").replace(
            "<source network='default'/>\n    </interface>",
            "<source network='default'/>\n    </x>",
        );
        assert_eq!(changed_beyond_models(&one_less, DOMAIN), Ok(true));
    }

    #[test]
    fn the_interface_is_picked_by_mac_or_as_the_only_one() {
        let i = interfaces(DOMAIN).unwrap();
        assert_eq!(pick(&i, Some("52:54:00:AA:00:02")), Ok(1));
        assert!(pick(&i, None).unwrap_err().contains("interface = \"MAC\""));
        assert!(
            pick(&i, Some("52:54:00:aa:00:09"))
                .unwrap_err()
                .contains("52:54:00:aa:00:01, 52:54:00:aa:00:02")
        );
        assert_eq!(pick(&i[..1], None), Ok(0));
    }

    #[test]
    fn hostile_models_and_documents_are_refused() {
        assert!(with_model(DOMAIN, 0, "x'/><evil").is_err());
        assert!(with_model(DOMAIN, 0, "").is_err());
        assert!(with_model(DOMAIN, 5, "virtio").is_err());
        assert!(interfaces("<network/>").unwrap_err().contains("<domain>"));
        assert!(
            interfaces("<domain>")
                .unwrap_err()
                .contains("not valid XML")
        );
        let big = format!("<domain>{}</domain>", " ".repeat(MAX_DEFINITION));
        assert!(interfaces(&big).unwrap_err().contains("cap"));
    }
}
