//! `[test]` (the base test) and the dimensions: `[matrix]` (client options, lab path settings,
//! tuning profiles) and `[dimensions]` (the user's own, with setup and teardown commands).

use super::{
    DimValue, Dimension, OPTIONS, PROFILE_DIMENSION, Reader, apply_option, scalar, settle_zerocopy,
    target,
};
use crate::lab::PathConfig;
use crate::traffic::spec::TestSpec;
use std::time::Duration;
use toml_edit::Item;

/// The base test of `[test]`, and the options it names.
pub(super) fn read_test(r: &mut Reader, item: Option<&Item>) -> (TestSpec, Vec<String>) {
    let mut spec = TestSpec::tcp(Duration::from_secs(10));
    let Some(table) = item.and_then(Item::as_table) else {
        return (spec, Vec::new());
    };
    r.unknown_keys(table, "test", &OPTIONS);
    // Protocol first: it changes the defaults of length and bitrate; then the test's kind,
    // which keeps the request sizes whatever their place.
    let mut keys: Vec<&str> = table.iter().map(|(k, _)| k).collect();
    keys.sort_by_key(|k| (*k != "protocol", *k != "test"));
    keys.retain(|k| OPTIONS.contains(k));
    for k in &keys {
        if let Some((v, span)) = r.string(table, k)
            && let Err(msg) = apply_option(&mut spec, k, &v)
        {
            r.issue(span, format!("test {k}: {msg}"));
        }
    }
    settle_zerocopy(&mut spec, |k| keys.contains(&k));
    (spec, keys.into_iter().map(str::to_string).collect())
}

pub(super) fn read_matrix(
    r: &mut Reader,
    item: Option<&Item>,
    base: &TestSpec,
    lab_path: &PathConfig,
    libvirt: bool,
) -> Vec<Dimension> {
    let Some(table) = item.and_then(Item::as_table) else {
        return Vec::new();
    };
    let mut dims = Vec::new();
    for (k, v) in table.iter() {
        let kspan = table.get_key_value(k).and_then(|(key, _)| key.span());
        if k == PROFILE_DIMENSION {
            // Values are checked by `resolve_profiles`; here they only make configurations.
            let mut values: Vec<DimValue> = Vec::new();
            for val in v.as_array().into_iter().flatten() {
                let Some(label) = scalar(val) else { continue };
                if values.iter().any(|d| d.label == label) {
                    r.issue(
                        val.span(),
                        format!("matrix profile: {label:?} is listed twice; list it once"),
                    );
                    continue;
                }
                values.push(DimValue {
                    label,
                    setup: None,
                    teardown: None,
                });
            }
            dims.push(Dimension {
                name: k.to_string(),
                user: true,
                path: false,
                values,
            });
            continue;
        }
        let path = target::PATH_DIMENSIONS.contains(&k);
        if !OPTIONS.contains(&k) && !path {
            r.issue(kspan, format!("unknown matrix dimension {k:?}: options are {}, and on a lab {}; use [dimensions.{k}] for your own", OPTIONS.join(", "), target::PATH_DIMENSIONS.join(", ")));
            continue;
        }
        let Some(arr) = v.as_array() else {
            r.issue(
                v.span(),
                format!("matrix {k} must be a list, e.g. {k} = [\"a\", \"b\"]"),
            );
            continue;
        };
        let mut values: Vec<DimValue> = Vec::new();
        for val in arr.iter() {
            match scalar(val) {
                Some(s) if values.iter().any(|v| v.label == s) => r.issue(
                    val.span(),
                    format!(
                        "matrix {k}: {s:?} is listed twice; each value makes one configuration, \
                         so list it once (repeat counts go in [repeat] count)"
                    ),
                ),
                Some(s) => {
                    let checked = if libvirt && k == "nic" {
                        crate::host::libvirt::xml::valid_model(&s)
                    } else if path {
                        target::apply_path(&mut lab_path.clone(), k, &s)
                    } else {
                        apply_option(&mut base.clone(), k, &s)
                    };
                    if let Err(msg) = checked {
                        r.issue_unsaid(val.span(), &format!("matrix {k}"), &msg);
                    }
                    values.push(DimValue {
                        label: s,
                        setup: None,
                        teardown: None,
                    });
                }
                None => r.issue(
                    val.span(),
                    format!("matrix {k}: values must be strings, numbers or booleans"),
                ),
            }
        }
        if values.is_empty() {
            r.issue(v.span(), format!("matrix {k} has no values"));
        }
        dims.push(Dimension {
            name: k.to_string(),
            user: false,
            path,
            values,
        });
    }
    dims
}

pub(super) fn read_user_dimensions(r: &mut Reader, item: Option<&Item>) -> Vec<Dimension> {
    let Some(table) = item.and_then(Item::as_table) else {
        return Vec::new();
    };
    let mut dims = Vec::new();
    for (name, d) in table.iter() {
        // A guest's settings (nic, vcpus, ...) may also be the user's own dimension on other
        // targets (a NIC switched by commands, as with a libvirt domain).
        if OPTIONS.contains(&name)
            || name == PROFILE_DIMENSION
            || (target::PATH_DIMENSIONS.contains(&name)
                && !target::GUEST_DIMENSIONS.contains(&name))
        {
            r.issue(
                d.span(),
                format!("dimension {name:?} has the name of a client option, a lab path setting or the tuning profiles: sweep it in [matrix]"),
            );
            continue;
        }
        let Some(values_table) = d.as_table_like() else {
            r.issue(d.span(), format!("[dimensions.{name}] must hold one table per value: VALUE = {{ setup = \"...\", teardown = \"...\" }}"));
            continue;
        };
        let mut values = Vec::new();
        for (label, v) in values_table.iter() {
            let Some(vt) = v.as_table_like() else {
                r.issue(
                    v.span(),
                    format!("dimensions.{name}.{label} must be a table with setup and teardown"),
                );
                continue;
            };
            r.unknown_keys(
                vt,
                &format!("dimensions.{name}.{label}"),
                &["setup", "teardown"],
            );
            values.push(DimValue {
                label: label.to_string(),
                setup: r.string(vt, "setup").map(|(s, _)| s),
                teardown: r.string(vt, "teardown").map(|(s, _)| s),
            });
        }
        if values.is_empty() {
            r.issue(d.span(), format!("dimension {name} has no values"));
        }
        dims.push(Dimension {
            name: name.to_string(),
            user: true,
            path: false,
            values,
        });
    }
    dims
}
