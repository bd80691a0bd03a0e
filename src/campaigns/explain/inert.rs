//! Where a swept tuning profile cannot change a result by construction: read from the plan's
//! profiles, the tests as resolved and what the runs were granted. With `-w` Linux does not
//! autotune, which is all `tcp_rmem`/`tcp_wmem` steer; `rmem_max`/`wmem_max` cap only what
//! SO_RCVBUF/SO_SNDBUF ask (a forced window passes them; an asked one granted in full did not
//! meet them), never autotuning, which stops at `tcp_rmem`/`tcp_wmem`'s maximum.

use super::PROFILE;
use crate::campaigns::campaign::{self, Settled, SettledPair};
use crate::campaigns::plan::PlanFacts;
use crate::campaigns::store::{ConfigRow, RunRow};
use crate::traffic::result::TestResult;
use std::collections::HashMap;

/// How a sentence of this module begins, before the reason.
const CANNOT_MATTER: &str = "cannot matter here by construction: ";

/// Sysctls `-w` makes irrelevant: with fixed socket buffers Linux does not autotune, which is
/// all `tcp_rmem`/`tcp_wmem` steer. `rmem_max`/`wmem_max` cap what SO_RCVBUF/SO_SNDBUF may ask
/// (not autotuning); in force mode root passes them with SO_*BUFFORCE.
const OVERRIDDEN_BY_WINDOW: [&str; 2] = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];
const CAPS_OF_WINDOW: [&str; 2] = ["net.core.rmem_max", "net.core.wmem_max"];

/// Why each of a profile's keys cannot matter when every run fixes its buffers.
fn inert_words(names: &[&str]) -> String {
    let tuning: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| OVERRIDDEN_BY_WINDOW.contains(n))
        .collect();
    let caps: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| CAPS_OF_WINDOW.contains(n))
        .collect();
    let mut out = String::new();
    if !tuning.is_empty() {
        out.push_str(&format!(
            ", which turns off Linux's buffer autotuning, the only thing {} steer",
            tuning.join(" and ")
        ));
    }
    if !caps.is_empty() {
        out.push_str(&format!(
            "{}{} cap only what SO_RCVBUF/SO_SNDBUF may ask",
            if tuning.is_empty() { ": " } else { "; " },
            caps.join(" and ")
        ));
    }
    out
}

/// Where the profile cannot change the result by construction, read from the plan's profiles,
/// the tests as resolved and what the runs were granted: the sentences, and the contexts
/// (other dimensions' values) they hold at when not everywhere. A trial's `-w 64K` runs, granted
/// in full under both profiles of `rmem_max` and `tcp_rmem`, were called "faster by 9.4% (p =
/// 0.012)" after 3 rounds, and a `tcp_rmem`-only profile "about 14 more rounds would settle it",
/// because one other window value (autotuned) kept the whole campaign's rule from applying.
pub fn cannot_matter(
    facts: &PlanFacts,
    configs: &[ConfigRow],
    runs: &[RunRow],
    results: &[(i64, TestResult)],
) -> (Vec<String>, Settled) {
    if facts.profile_keys.is_empty() {
        return (Vec::new(), Settled::default());
    }
    // Each run's configuration, looked up once; the configurations of each context.
    let label_of: HashMap<i64, &str> = runs
        .iter()
        .map(|r| (r.id, r.configuration.as_str()))
        .collect();
    let mut by_context: Vec<(String, Vec<&ConfigRow>)> = Vec::new();
    for c in configs {
        let ctx = campaign::context_of(&c.dims, PROFILE);
        match by_context.iter_mut().find(|(k, _)| *k == ctx) {
            Some((_, mine)) => mine.push(c),
            None => by_context.push((ctx, vec![c])),
        }
    }
    let (mut said, contexts) = whole_profile(facts, &by_context, &label_of, results);
    let (pair_said, pairs) = pairs(facts, &by_context, &label_of, results, &contexts);
    said.extend(pair_said);
    (
        said,
        Settled {
            cannot_matter_at: contexts,
            cannot_matter_pairs: pairs,
        },
    )
}

/// The profile's effect line of the answer, with the contexts its average includes where the
/// profile (or the pair its headline compares, `headline`: two profile names) cannot matter: a
/// VM trial read "profile matters too: tcpmem raises goodput 1.07x of default" where tcpmem
/// gained 16% autotuned and could not matter at the other two windows.
pub fn where_an_effect_cannot_matter(
    answer: &str,
    settled: &Settled,
    headline: Option<(&str, &str)>,
) -> String {
    let named = |v: &str| format!("{PROFILE}={v}");
    answer
        .lines()
        .map(|line| {
            if !line.starts_with(&format!("{PROFILE} matters")) {
                return line.to_string();
            }
            let mut at: Vec<&str> = settled
                .cannot_matter_at
                .iter()
                .map(String::as_str)
                .collect();
            if let Some((a, b)) = headline {
                for p in &settled.cannot_matter_pairs {
                    if settled.covers(&p.context, &named(a), &named(b))
                        && !at.contains(&p.context.as_str())
                    {
                        at.push(&p.context);
                    }
                }
            }
            at.retain(|c| !c.is_empty());
            if at.is_empty() {
                return line.to_string();
            }
            format!(
                "{line}; an average that includes {}, where it cannot matter by construction \
                 (below)",
                at.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The results of the runs of `configs` (`label_of`: each run's configuration).
fn results_of<'a>(
    results: &'a [(i64, TestResult)],
    label_of: &HashMap<i64, &str>,
    configs: &[&ConfigRow],
) -> Vec<&'a (i64, TestResult)> {
    results
        .iter()
        .filter(|(id, _)| {
            label_of
                .get(id)
                .is_some_and(|l| configs.iter().any(|c| c.label == *l))
        })
        .collect()
}

/// The contexts where the whole profile dimension cannot matter, and their sentences.
fn whole_profile(
    facts: &PlanFacts,
    by_context: &[(String, Vec<&ConfigRow>)],
    label_of: &HashMap<i64, &str>,
    results: &[(i64, TestResult)],
) -> (Vec<String>, Vec<String>) {
    let sentence = |reason: String| format!("profile {CANNOT_MATTER}{reason}");
    let said: Vec<(&str, Option<String>)> = by_context
        .iter()
        .map(|(ctx, mine)| {
            let theirs = results_of(results, label_of, mine);
            let reason = inert_reason(&facts.profile_keys, mine, &theirs);
            (ctx.as_str(), reason.map(sentence))
        })
        .collect();
    if said.iter().all(|(_, s)| s.is_some()) {
        // Everywhere: the campaign's sentence, once.
        let whole: Vec<&ConfigRow> = by_context.iter().flat_map(|(_, m)| m.clone()).collect();
        let all: Vec<&(i64, TestResult)> = results.iter().collect();
        return (
            inert_reason(&facts.profile_keys, &whole, &all)
                .map(sentence)
                .into_iter()
                .collect(),
            Vec::new(),
        );
    }
    said.into_iter()
        .filter(|(ctx, _)| !ctx.is_empty())
        .filter_map(|(ctx, s)| Some((format!("at {ctx}: {}", s?), ctx.to_string())))
        .unzip()
}

/// Pairs of profiles that differ only in keys that cannot act at a context (other than those
/// where the whole profile cannot matter), and their sentences. A VM trial's seeds campaign
/// (`-w 512K` and `2M` asked, autotuned) was told "about 31 more rounds would settle" a
/// `tcp_rmem`-only profile at the fixed windows and a `rmem_max`-only one autotuned, because
/// the third profile could matter there. Needs the profiles' settings (stores before them: none).
fn pairs(
    facts: &PlanFacts,
    by_context: &[(String, Vec<&ConfigRow>)],
    label_of: &HashMap<i64, &str>,
    results: &[(i64, TestResult)],
    settled: &[String],
) -> (Vec<String>, Vec<SettledPair>) {
    let profile_of = |c: &ConfigRow| {
        c.dims
            .iter()
            .find(|(k, _)| k == PROFILE)
            .map(|(_, v)| v.clone())
    };
    let mut said = Vec::new();
    let mut found = Vec::new();
    for (ctx, mine) in by_context.iter().filter(|(c, _)| !settled.contains(c)) {
        let mut names: Vec<String> = Vec::new();
        for c in mine {
            if let Some(p) = profile_of(c).filter(|p| !names.contains(p)) {
                names.push(p);
            }
        }
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                let (Some(sa), Some(sb)) =
                    (facts.profile_settings.get(a), facts.profile_settings.get(b))
                else {
                    continue;
                };
                let mut differ: Vec<String> = sa
                    .iter()
                    .filter(|(k, v)| sb.get(*k) != Some(*v))
                    .map(|(k, _)| k.clone())
                    .chain(sb.keys().filter(|k| !sa.contains_key(*k)).cloned())
                    .collect();
                differ.sort_unstable();
                differ.dedup();
                if differ.is_empty() {
                    continue;
                }
                let two: Vec<&ConfigRow> = mine
                    .iter()
                    .copied()
                    .filter(|c| profile_of(c).is_some_and(|p| p == *a || p == *b))
                    .collect();
                let theirs = results_of(results, label_of, &two);
                let Some(reason) = inert_reason(&differ, &two, &theirs) else {
                    continue;
                };
                let (from, to) = (format!("{PROFILE}={a}"), format!("{PROFILE}={b}"));
                let why = format!(
                    "{to} against {from} {CANNOT_MATTER}they differ only in {}, and {reason}",
                    differ.join(", ")
                );
                said.push(if ctx.is_empty() {
                    why
                } else {
                    format!("at {ctx}: {why}")
                });
                found.push(SettledPair {
                    context: ctx.clone(),
                    from,
                    to,
                });
            }
        }
    }
    (said, found)
}

/// Why profiles differing in `keys` cannot matter for `configs` (their runs' `results`): every
/// one fixes `-w`, and the keys are only what `-w` overrides or (forced, or granted in full)
/// caps that did not bind; or none does and no end set a buffer, and the keys are only the
/// caps, which autotuning does not meet.
fn inert_reason(
    keys: &[String],
    configs: &[&ConfigRow],
    results: &[&(i64, TestResult)],
) -> Option<String> {
    let specs: Vec<_> = configs
        .iter()
        .filter_map(|c| c.resolved.as_ref().map(|r| &r.spec))
        .collect();
    let resolved = !specs.is_empty() && specs.len() == configs.len();
    let all_fixed = resolved && specs.iter().all(|s| s.window_bytes.is_some());
    let none_fixed = resolved && specs.iter().all(|s| s.window_bytes.is_none());
    if none_fixed {
        return autotuned_reason(keys, results);
    }
    if !all_fixed {
        return None;
    }
    let all_forced = specs.iter().all(|s| s.window_mode.forced());
    // Were the buffers granted as asked (root, or caps high enough)? Then the caps did not bind.
    let granted = !results.is_empty()
        && results.iter().all(|(_, t)| {
            t.spec.window_bytes.is_none_or(|w| {
                t.start
                    .client_sockets
                    .iter()
                    .chain(&t.start.server_sockets)
                    .all(|s| {
                        // The end's own account, else the reported sizes (older records).
                        s.window_bytes
                            .map_or(s.rcvbuf_bytes >= w && s.sndbuf_bytes >= w, |g| g >= w)
                    })
            })
        });
    fixed_reason(keys, all_forced, granted)
}

/// Caps of SO_RCVBUF/SO_SNDBUF where no run sets a buffer: the kernel autotunes up to
/// `tcp_rmem`/`tcp_wmem`'s maximum and never meets `rmem_max`/`wmem_max` (Linux's
/// `tcp_rcv_space_adjust` and `tcp_sndbuf_expand`). Only where the runs' own accounts say no
/// end set one (a same-host path's receive buffer would meet them).
fn autotuned_reason(keys: &[String], results: &[&(i64, TestResult)]) -> Option<String> {
    let unset = !results.is_empty()
        && results.iter().all(|(_, t)| {
            t.start.receive_buffer_bytes.is_none()
                && t.start.send_buffer_bytes.is_none()
                && t.start.other_receive_buffer_bytes.is_none()
        });
    if !unset || keys.is_empty() || !keys.iter().all(|k| CAPS_OF_WINDOW.contains(&k.as_str())) {
        return None;
    }
    Some(format!(
        "no run fixes its socket buffers (no -w), so \
         the kernel autotunes them up to net.ipv4.tcp_rmem/tcp_wmem's maximum, and {} cap only \
         what SO_RCVBUF/SO_SNDBUF may ask",
        keys.join(" and ")
    ))
}

/// The sentence for a swept profile whose every key is inert when every run fixes its buffers
/// with `-w`: `all_forced` (force mode everywhere), `granted` (every run was granted its window
/// in full, so the caps did not bind). `run --check` says it before any run (forced windows).
pub fn profile_cannot_matter(keys: &[String], all_forced: bool, granted: bool) -> Option<String> {
    fixed_reason(keys, all_forced, granted).map(|r| format!("profile {CANNOT_MATTER}{r}"))
}

/// Why a profile of `keys` cannot matter where every run fixes its buffers with `-w`.
fn fixed_reason(keys: &[String], all_forced: bool, granted: bool) -> Option<String> {
    // Forced windows pass the caps by construction; asked ones only when granted in full.
    let inert = |k: &str| {
        OVERRIDDEN_BY_WINDOW.contains(&k)
            || ((granted || all_forced) && CAPS_OF_WINDOW.contains(&k))
    };
    if keys.is_empty() || !keys.iter().all(|k| inert(k)) {
        return None;
    }
    // Sorted and each once (`Plan::facts`).
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    Some(format!(
        "every run fixes its socket buffers with -w (window) in --window-mode {}{}{}",
        if all_forced { "force" } else { "ask" },
        inert_words(&names),
        match (all_forced, names.iter().any(|n| CAPS_OF_WINDOW.contains(n))) {
            (true, true) =>
                "; forced windows pass net.core.rmem_max/wmem_max, so the caps cannot bind \
                 (window_mode = \"ask\" lets them)",
            (false, true) => "; the buffers were granted in full, so the caps did not bind",
            _ => "",
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A campaign of `windows` (each `-w`, asked, or autotuned) x `profiles`, one run each at
    /// 100 Mbit/s, each end granted `granted(profile, window)`.
    pub(super) fn window_by_profile(
        windows: &[(&str, Option<u64>)],
        profiles: &[&str],
        granted: impl Fn(&str, Option<u64>) -> Option<u64>,
    ) -> (Vec<ConfigRow>, Vec<RunRow>, Vec<(i64, TestResult)>) {
        use crate::campaigns::plan::Configuration;
        use crate::traffic::measure::SocketInfo;
        let (mut configs, mut runs, mut results) = (Vec::new(), Vec::new(), Vec::new());
        for (window, bytes) in windows {
            for profile in profiles {
                let dims = vec![
                    ("window".to_string(), window.to_string()),
                    ("profile".to_string(), profile.to_string()),
                ];
                let label = crate::campaigns::plan::label(&dims);
                let mut spec =
                    crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(3));
                spec.window_bytes = *bytes;
                spec.window_mode = crate::traffic::spec::WindowMode::Ask;
                let id = configs.len() as i64 + 1;
                configs.push(ConfigRow {
                    id,
                    position: id as usize,
                    label: label.clone(),
                    dims: dims.clone(),
                    resolved: Some(Configuration {
                        dims: dims.clone(),
                        label,
                        spec: spec.clone(),
                        path: None,
                        nic_model: None,
                        profile: Some(profile.to_string()),
                    }),
                });
                let mut t = crate::traffic::result::unmeasured(&spec);
                let sock = SocketInfo {
                    window_bytes: granted(profile, *bytes),
                    ..SocketInfo::default()
                };
                t.start.client_sockets = vec![sock.clone()];
                t.start.server_sockets = vec![sock];
                let dims_ref: Vec<(&str, &str)> = vec![("window", window), ("profile", profile)];
                runs.push(crate::campaigns::explain::tests::run(
                    id,
                    &dims_ref,
                    0,
                    Some(1e8),
                ));
                results.push((id, t));
            }
        }
        (configs, runs, results)
    }

    /// The trial's seeds campaign: window 64K (ask mode, granted in full under both profiles)
    /// and autotuned, profiles of rmem_max and tcp_rmem. At 64K the profile cannot matter;
    /// autotuned it can; the campaign as a whole has no such rule.
    #[test]
    fn the_profile_cannot_matter_at_a_fixed_window_granted_in_full_though_it_can_elsewhere() {
        let facts = PlanFacts {
            profile_keys: vec!["net.core.rmem_max".into(), "net.ipv4.tcp_rmem".into()],
            ..PlanFacts::default()
        };
        let (configs, runs, results) = window_by_profile(
            &[("64K", Some(65536)), ("auto", None)],
            &["default", "bufmax"],
            |_, bytes| bytes,
        );
        let (said, at) = cannot_matter(&facts, &configs, &runs, &results);
        assert_eq!(at.cannot_matter_at, ["window=64K"]);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].starts_with("at window=64K: profile cannot matter here by construction")
                && said[0].contains("the buffers were granted in full"),
            "{said:?}"
        );
        // Cut at 64K under one profile (the default's rmem_max): it can matter there too.
        let mut cut = results.clone();
        cut[0].1.start.server_sockets[0].window_bytes = Some(32768);
        let (said, at) = cannot_matter(&facts, &configs, &runs, &cut);
        assert!(said.is_empty() && at == Settled::default(), "{said:?}");
        // Every window fixed and granted: the campaign's own sentence, and no context.
        let fixed: Vec<ConfigRow> = configs[..2].to_vec();
        let (said, at) = cannot_matter(&facts, &fixed, &runs, &results[..2]);
        assert!(at == Settled::default(), "{at:?}");
        assert!(
            said[0].starts_with("profile cannot matter here"),
            "{said:?}"
        );
    }
}

#[cfg(test)]
mod pair_tests {
    use super::tests::window_by_profile;
    use super::*;
    use std::collections::BTreeMap;

    /// The VM trial's seeds campaign: window 512K (asked, cut to 208 KB by the guest's
    /// rmem_max except under `raised`) and autotuned, x profiles default, raised (rmem_max and
    /// wmem_max), tcpmem (tcp_rmem and tcp_wmem). The profile can matter at both windows, so no
    /// context is settled; but tcpmem against default cannot differ at 512K (-w turns off the
    /// autotuning tcp_rmem steers), nor raised against default autotuned (autotuning never meets
    /// rmem_max). It was told "about 31 more rounds would settle" both.
    #[test]
    fn pairs_of_profiles_that_differ_only_in_inert_keys_are_settled() {
        let set = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let mut facts = PlanFacts {
            profile_keys: vec![
                "net.core.rmem_max".into(),
                "net.core.wmem_max".into(),
                "net.ipv4.tcp_rmem".into(),
                "net.ipv4.tcp_wmem".into(),
            ],
            ..PlanFacts::default()
        };
        facts.profile_settings = [
            ("default".to_string(), set(&[])),
            (
                "raised".to_string(),
                set(&[
                    ("net.core.rmem_max", "4194304"),
                    ("net.core.wmem_max", "4194304"),
                ]),
            ),
            (
                "tcpmem".to_string(),
                set(&[
                    ("net.ipv4.tcp_rmem", "4096 131072 4194304"),
                    ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
                ]),
            ),
        ]
        .into_iter()
        .collect();
        // The guest's rmem_max cuts an asked 512K to 208 KB but under `raised`.
        let (configs, runs, results) = window_by_profile(
            &[("512K", Some(524_288)), ("auto", None)],
            &["default", "raised", "tcpmem"],
            |profile, bytes| bytes.map(|b| if profile == "raised" { b } else { 212_992 }),
        );
        let (said, settled) = cannot_matter(&facts, &configs, &runs, &results);
        assert!(settled.cannot_matter_at.is_empty(), "{settled:?}");
        assert!(settled.covers("window=512K", "profile=default", "profile=tcpmem"));
        assert!(settled.covers("window=512K", "profile=tcpmem", "profile=default"));
        assert!(!settled.covers("window=512K", "profile=default", "profile=raised"));
        assert!(settled.covers("window=auto", "profile=default", "profile=raised"));
        assert!(!settled.covers("window=auto", "profile=default", "profile=tcpmem"));
        // raised against tcpmem differ in all four keys: the caps bind at 512K, tcp_rmem
        // steers autotuned.
        assert!(!settled.covers("window=512K", "profile=raised", "profile=tcpmem"));
        assert!(!settled.covers("window=auto", "profile=raised", "profile=tcpmem"));
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with(
                "at window=512K: profile=tcpmem against profile=default cannot matter here by \
                 construction: they differ only in net.ipv4.tcp_rmem, net.ipv4.tcp_wmem, and \
                 every run fixes"
            ),
            "{said:?}"
        );
        assert!(
            said[1].starts_with(
                "at window=auto: profile=raised against profile=default cannot matter here by \
                 construction: they differ only in net.core.rmem_max, net.core.wmem_max, and no \
                 run fixes"
            ),
            "{said:?}"
        );
        // A run that set a receive buffer (a same-host path) meets the caps autotuned too.
        let mut set_one = results.clone();
        set_one[4].1.start.receive_buffer_bytes = Some(8 << 20);
        let (_, settled) = cannot_matter(&facts, &configs, &runs, &set_one);
        assert!(!settled.covers("window=auto", "profile=default", "profile=raised"));
        // A store without the profiles' settings: nothing said of pairs.
        facts.profile_settings.clear();
        let (said, settled) = cannot_matter(&facts, &configs, &runs, &results);
        assert!(said.is_empty() && settled == Settled::default(), "{said:?}");
    }
}

#[cfg(test)]
mod effect_tests {
    use super::*;

    #[test]
    fn an_effect_averaged_over_contexts_where_it_cannot_matter_says_so() {
        let settled = Settled {
            cannot_matter_at: vec!["window=64K".into()],
            cannot_matter_pairs: vec![
                SettledPair {
                    context: "window=512K".into(),
                    from: "profile=default".into(),
                    to: "profile=tcpmem".into(),
                },
                SettledPair {
                    context: "window=auto".into(),
                    from: "profile=default".into(),
                    to: "profile=raised".into(),
                },
            ],
        };
        let answer = "window matters most: 2M raises goodput 3.1x of 64K\n\
                      profile matters too: tcpmem raises goodput 1.07x of default (p = 0.009)\n\
                      no drift over the rounds";
        let said = where_an_effect_cannot_matter(answer, &settled, Some(("tcpmem", "default")));
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(
            lines[0],
            "window matters most: 2M raises goodput 3.1x of 64K"
        );
        assert_eq!(
            lines[1],
            "profile matters too: tcpmem raises goodput 1.07x of default (p = 0.009); an \
             average that includes window=64K, window=512K, where it cannot matter by \
             construction (below)"
        );
        assert_eq!(lines[2], "no drift over the rounds");
        assert_eq!(
            where_an_effect_cannot_matter(answer, &Settled::default(), None),
            answer
        );
        // Another headline pair (raised against default, which can matter at 512K): only
        // where the whole profile cannot matter, and where that pair cannot (auto).
        let said = where_an_effect_cannot_matter(answer, &settled, Some(("raised", "default")));
        assert!(
            said.contains("an average that includes window=64K, window=auto, where"),
            "{said}"
        );
    }
}
