//! The tuning profiles of a campaign's runs, applied on every target and put back.

use crate::campaigns::plan::Plan;

/// Applies the tuning profile each run needs on every target, and puts everything back at
/// the end, on error (drop) and after a crash (the journal, via `recover`).
pub(super) struct Tuner {
    pub(super) targets: Vec<crate::host::tuning::Target>,
    /// The server side of an address target, through ssh.
    remote: Option<crate::host::tuning::Remote>,
    /// The values of `keys` in force on the remote (or why they could not be read), read once
    /// per profile switch (an ssh round trip per run would be overhead).
    remote_values: Option<serde_json::Value>,
    profiles: Vec<crate::host::tuning::profile::Profile>,
    /// Each profile as written on each target (`tuning::as_on`, by target then profile):
    /// worked out once, not at every switch.
    written: Vec<Vec<crate::host::tuning::profile::Profile>>,
    current: Option<String>,
    /// Keys recorded with every run: those of every profile of the plan.
    keys: Vec<String>,
    /// The plan's `allow_host_wide`.
    allow_host_wide: bool,
}

impl Tuner {
    pub(super) fn new(plan: &Plan, targets: Vec<crate::host::tuning::Target>) -> Tuner {
        let mut keys: Vec<String> = plan
            .profiles
            .iter()
            .flat_map(|p| p.linux.keys().cloned())
            .collect();
        keys.sort();
        keys.dedup();
        let written = targets
            .iter()
            .map(|t| {
                plan.profiles
                    .iter()
                    .map(|p| crate::host::tuning::as_on(t, p, &targets).0)
                    .collect()
            })
            .collect();
        Tuner {
            targets,
            remote: plan.server_tuning.clone(),
            remote_values: None,
            profiles: plan.profiles.clone(),
            written,
            current: None,
            keys,
            allow_host_wide: plan.allow_host_wide,
        }
    }

    pub(super) fn recover(&self) -> Vec<String> {
        // The remote keeps its own journal: an idempotent restore puts back what a crashed run left.
        let remote = self.remote.as_ref().and_then(|r| match r.restore() {
            Ok(true) => Some(format!(
                "restored the tuning a previous run left on {}",
                r.id()
            )),
            Ok(false) => None,
            Err(e) => Some(e),
        });
        remote
            .into_iter()
            .chain(
                self.targets
                    .iter()
                    .filter_map(|t| match crate::host::tuning::recover(t) {
                        Ok(Some(r)) => Some(r.recovery_line(t)),
                        Ok(None) => None,
                        Err(e) => Some(format!(
                            "could not restore the tuning journal of {}: {e:#}",
                            t.id()
                        )),
                    }),
            )
            .collect()
    }

    pub(super) fn switch(&mut self, name: &str) -> Result<(), String> {
        if self.current.as_deref() == Some(name) {
            return Ok(());
        }
        for t in &self.targets {
            crate::host::tuning::restore(t)
                .map_err(|e| format!("restoring tuning on {}: {e:#}", t.id()))?;
        }
        if let Some(r) = &self.remote {
            r.restore()?;
        }
        self.current = None;
        let at = self
            .profiles
            .iter()
            .position(|p| p.name == name)
            .ok_or(format!("no profile {name}"))?;
        let p = &self.profiles[at];
        let opts = crate::host::tuning::ApplyOptions {
            allow_host_wide: self.allow_host_wide,
            owner_pid: Some(std::process::id()),
        };
        for (t, written) in self.targets.iter().zip(&self.written) {
            if let Err(e) = crate::host::tuning::apply(t, &written[at], &opts) {
                for u in &self.targets {
                    let _ = crate::host::tuning::restore(u);
                }
                return Err(format!("applying profile {name} on {}: {e:#}", t.id()));
            }
        }
        if let Some(r) = self.remote.clone()
            && let Err(e) = r.apply(p)
        {
            self.restore_all();
            return Err(format!("applying profile {name} on {}: {e}", r.id()));
        }
        self.remote_values = self.remote.as_ref().map(|r| match r.values(&self.keys) {
            Ok(values) => serde_json::json!(values),
            Err(e) => serde_json::json!({ "error": e }),
        });
        self.current = Some(name.to_string());
        Ok(())
    }

    /// The values in force on every target.
    pub(super) fn values(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert(
            "profile".into(),
            serde_json::Value::from(self.current.clone()),
        );
        for t in &self.targets {
            let vals: serde_json::Map<String, serde_json::Value> = self
                .keys
                .iter()
                .filter_map(|k| {
                    t.read(k)
                        .ok()
                        .map(|v| (k.clone(), serde_json::Value::from(v)))
                })
                .collect();
            out.insert(t.id(), serde_json::Value::Object(vals));
        }
        if let (Some(r), Some(values)) = (&self.remote, &self.remote_values) {
            out.insert(r.id(), values.clone());
        }
        serde_json::Value::Object(out)
    }

    pub(super) fn restore_all(&mut self) -> Vec<String> {
        self.current = None;
        let remote = self.remote.as_ref().and_then(|r| r.restore().err());
        self.targets
            .iter()
            .filter_map(|t| {
                crate::host::tuning::restore(t)
                    .err()
                    .map(|e| format!("restoring {}: {e:#}", t.id()))
            })
            .chain(remote)
            .collect()
    }
}

impl Drop for Tuner {
    fn drop(&mut self) {
        for e in self.restore_all() {
            crate::errln!("netsweep: {e}");
        }
    }
}
