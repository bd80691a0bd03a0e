//! What the read commands (`explain`, `compare`, `report`) need of a plan beyond its resolved
//! configurations: how the answer is judged, the target's link rate, whether host b is a QEMU
//! guest, and the sysctl keys the tuning profiles set. Computed once when the campaign is made
//! and stored with it (`campaign.plan_facts_json`), so nothing reads the stored plan text again.

use super::{AnswerSettings, Configuration, PROFILE_DIMENSION, Plan, Target};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Stored as JSON (`campaign.plan_facts_json`). A key this version does not know is refused,
/// not skipped: a renamed or misspelt key would otherwise read as its default and change the
/// answer in silence. Keys added later are `#[serde(default)]`, so what older versions wrote
/// (without them) still reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFacts {
    /// How comparisons are judged (`[answer]`).
    pub answer: AnswerSettings,
    /// The rate of a lab target's path, used for the configurations whose own path does not
    /// say (`None` for other targets or an unlimited path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bps: Option<f64>,
    /// The round trip of a lab target's path, seconds (`None` for other targets or a path
    /// with no delay): the idle RTT a window is judged over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_s: Option<f64>,
    /// Host b is a QEMU guest (a lab with `vm`): what limits a run is, first, the emulation.
    #[serde(default)]
    pub guest: bool,
    /// The Linux sysctl keys of the tuning profiles, sorted, when the plan sweeps `profile`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile_keys: Vec<String>,
    /// Each swept profile's Linux settings (key to value), so a pair of profiles is known by
    /// the keys it differs in (`explain`'s cannot-matter rule; stores before it have none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile_settings: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for PlanFacts {
    /// For runs that have no plan (imported ones): the default judging and nothing else.
    fn default() -> PlanFacts {
        PlanFacts {
            answer: AnswerSettings::default(),
            link_bps: None,
            rtt_s: None,
            guest: false,
            profile_keys: Vec::new(),
            profile_settings: BTreeMap::new(),
        }
    }
}

impl PlanFacts {
    /// A configuration's link rate: its own lab path's (a swept `rate` included), else the
    /// target's.
    pub fn link_of(&self, resolved: Option<&Configuration>) -> Option<f64> {
        match resolved.and_then(|r| r.path.as_ref()) {
            Some(path) => path.rate_bps,
            None => self.link_bps,
        }
    }

    /// A configuration's idle round trip: its own lab path's (a swept `rtt` included), else
    /// the target's; `None` without a lab delay.
    pub fn rtt_of(&self, resolved: Option<&Configuration>) -> Option<f64> {
        match resolved.and_then(|r| r.path.as_ref()) {
            Some(path) => (!path.delay.is_zero()).then(|| path.rtt().as_secs_f64()),
            None => self.rtt_s,
        }
    }
}

impl Plan {
    /// Each dimension's name and its values' labels, in the plan's order.
    pub fn order(&self) -> Vec<(String, Vec<String>)> {
        self.dimensions
            .iter()
            .map(|d| {
                (
                    d.name.clone(),
                    d.values.iter().map(|v| v.label.clone()).collect(),
                )
            })
            .collect()
    }

    /// The facts the read commands keep of this plan.
    pub fn facts(&self) -> PlanFacts {
        let path = match &self.target {
            Target::Lab { path, .. } | Target::Auto { path, .. } => Some(path),
            _ => None,
        };
        let sweeps_profiles = self.dimensions.iter().any(|d| d.name == PROFILE_DIMENSION);
        let mut profile_keys: Vec<String> = if sweeps_profiles {
            self.profiles
                .iter()
                .flat_map(|p| p.linux.keys().cloned())
                .collect()
        } else {
            Vec::new()
        };
        profile_keys.sort_unstable();
        profile_keys.dedup();
        let profile_settings = if sweeps_profiles {
            self.profiles
                .iter()
                .map(|p| {
                    let keys = p
                        .linux
                        .iter()
                        .map(|(k, v)| (k.clone(), v.0.clone()))
                        .collect();
                    (p.name.clone(), keys)
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        PlanFacts {
            answer: self.answer.clone(),
            link_bps: path.and_then(|p| p.rate_bps),
            rtt_s: path
                .filter(|p| !p.delay.is_zero())
                .map(|p| p.rtt().as_secs_f64()),
            guest: matches!(&self.target, Target::Lab { path, .. } if path.guest.is_some()),
            profile_keys,
            profile_settings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_facts_hold_its_answer_link_guest_and_profile_keys() {
        let plan = Plan::parse(
            "p.toml",
            "[target]\nkind = \"lab\"\nrate = \"1G\"\nrtt = \"10ms\"\n[test]\nduration = \"2s\"\n\
             [matrix]\nwindow = [\"64K\", \"1M\"]\nprofile = [\"default\", \"high-bdp-ns\"]\n\
             [answer]\nchange = \"3%\"\nkeep_outliers = \"true\"\n\
             [answer.baseline]\nprofile = \"default\"\n",
        )
        .unwrap();
        let f = plan.facts();
        assert_eq!(f.answer.change, 0.03);
        assert!(f.answer.keep_outliers);
        assert_eq!(
            f.answer.baselines,
            vec![("profile".to_string(), "default".to_string())]
        );
        assert_eq!(f.link_bps, Some(1e9));
        assert_eq!(f.rtt_s, Some(0.010));
        assert!(!f.guest);
        assert!(!f.profile_keys.is_empty());
        let mut sorted = f.profile_keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted, f.profile_keys);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<PlanFacts>(&json).unwrap(), f);

        let plain = Plan::parse("p.toml", "[target]\nkind = \"loopback\"\n").unwrap();
        let f = plain.facts();
        assert_eq!(f.link_bps, None);
        assert!(f.profile_keys.is_empty());
        assert_eq!(f.answer, AnswerSettings::default());
        assert_eq!(f, PlanFacts::default());
    }

    /// Regression (issue 42, audit): `"guest":true` stored as `"guset":true` (or `link_bps` as
    /// `link_bpz`) read as the default in silence, changing explain's answer.
    #[test]
    fn stored_facts_with_a_key_this_version_does_not_know_are_refused() {
        let written = serde_json::to_value(PlanFacts {
            link_bps: Some(1e9),
            rtt_s: Some(0.01),
            guest: true,
            profile_keys: vec!["net.core.rmem_max".into()],
            ..PlanFacts::default()
        })
        .unwrap();
        let text = written.to_string();
        assert!(serde_json::from_str::<PlanFacts>(&text).is_ok());
        for (from, to) in [
            ("\"guest\"", "\"guset\""),
            ("\"link_bps\"", "\"link_bpz\""),
            ("\"rtt_s\"", "\"rtt_ms\""),
            (
                "\"keep_outliers\"",
                "\"keep_outliers\":true,\"keep_outlier\"",
            ),
        ] {
            assert!(text.contains(from), "{text}");
            let e = serde_json::from_str::<PlanFacts>(&text.replacen(from, to, 1)).unwrap_err();
            assert!(e.to_string().contains("unknown field"), "{from}: {e}");
        }
        // What the first version with stored facts wrote (no rtt_s) still reads.
        let older = r#"{"answer":{"change":0.3,"baselines":[],"keep_outliers":false},
            "link_bps":1e9,"guest":true}"#;
        let f = serde_json::from_str::<PlanFacts>(older).unwrap();
        assert_eq!((f.answer.change, f.rtt_s, f.guest), (0.3, None, true));
    }
}
