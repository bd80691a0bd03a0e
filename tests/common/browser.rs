//! A page opened in headless Chromium as a user would: its DOM after the page's scripts ran,
//! and a screenshot. No network, a throwaway profile; used by the report and plot tests.

use std::path::Path;
use std::process::Command;

const BASE: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--virtual-time-budget=3000",
];

/// The DOM of `file` (an HTML or SVG file) after loading, and a screenshot of it
/// `width` x `height` pixels as PNG bytes. The profile lives in `scratch`.
pub fn load(file: &Path, scratch: &Path, width: u32, height: u32) -> (String, Vec<u8>) {
    let profile = scratch.join("chromium-profile");
    let url = format!("file://{}", file.display());
    let out = Command::new("chromium")
        .args(BASE)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    let shot = scratch.join(format!(
        "{}.png",
        file.file_name()
            .map_or("page".into(), |n| n.to_string_lossy())
    ));
    let out = Command::new("chromium")
        .args(BASE)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .args([&format!("--window-size={width},{height}"), &url])
        .output()
        .expect("chromium runs");
    let png = std::fs::read(&shot).unwrap_or_else(|e| {
        panic!(
            "no screenshot of {} ({e}): {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (dom, png)
}

/// The value of attribute `name` in `dom` (its first occurrence).
pub fn attr(dom: &str, name: &str) -> String {
    let key = format!("{name}=\"");
    let i = dom
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in the DOM: {}", &dom[..dom.len().min(500)]));
    dom[i + key.len()..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string()
}
