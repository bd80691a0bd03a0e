//! The layers `src/lib.rs` lists hold in the code: no module names a module of a higher layer
//! (`crate::X` in a `use` or a path). This is the check a Cargo workspace would make through
//! the compiler, made over the source instead, so the crate stays one package (one
//! `cargo install`, the README's two commands unchanged).

use std::path::Path;

/// From the ground up, as `src/lib.rs` lists them; modules of one layer may use each other.
const LAYERS: &[&[&str]] = &[
    &["units", "inputs", "console", "paste", "analysis"],
    &["platform"],
    &["traffic"],
    &["host", "pscheduler"],
    &["lab"],
    &["campaigns", "cli"],
    &["report"],
    &["app"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top modules `text` names through `crate::`, including grouped `use crate::{a, b::c}`.
fn named(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            for item in inner.split(',') {
                let top: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !top.is_empty() {
                    out.push(top);
                }
            }
        } else {
            let top: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            // `crate::errln!`: a macro `console` exports at the crate's root (ground floor).
            if rest[top.len()..].starts_with('!') {
                out.push("console".into());
            } else if !top.is_empty() {
                out.push(top);
            }
        }
    }
    out
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_names_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut wrong = Vec::new();
    let mut unknown = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(mine) = layer_of(&top) else {
            unknown.push(top);
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for m in named(code) {
                match layer_of(&m) {
                    Some(l) if l > mine => wrong.push(format!(
                        "{}:{}: {top} (layer {mine}) names crate::{m} (layer {l})",
                        rel.display(),
                        n + 1
                    )),
                    Some(_) => {}
                    None => unknown.push(m),
                }
            }
        }
    }
    unknown.sort();
    unknown.dedup();
    assert!(
        unknown.is_empty(),
        "modules not in the layer list (add them here and in src/lib.rs): {unknown:?}"
    );
    assert!(
        wrong.is_empty(),
        "imports that run up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_list_here_is_the_one_in_lib_rs() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let mut listed: Vec<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    listed.sort();
    let mut declared_sorted = declared.clone();
    declared_sorted.sort();
    assert_eq!(listed, declared_sorted);
    // The doc comment names the layers in this order.
    let doc: String = lib
        .lines()
        .filter(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let firsts: Vec<usize> = LAYERS
        .iter()
        .map(|l| {
            l.iter()
                .filter_map(|m| doc.find(&format!("`{m}`")))
                .min()
                .unwrap_or_else(|| panic!("src/lib.rs does not name {l:?}"))
        })
        .collect();
    assert!(
        firsts.windows(2).all(|w| w[0] < w[1]),
        "src/lib.rs names the layers in another order: {firsts:?}"
    );
}

#[test]
fn a_grouped_use_is_read() {
    assert_eq!(
        named("use crate::{platform::netns, traffic::server};"),
        vec!["platform", "traffic"]
    );
    assert_eq!(named("crate::host::libvirt::dir()"), vec!["host"]);
    assert_eq!(named("crate::errln!(\"x\")"), vec!["console"]);
}
