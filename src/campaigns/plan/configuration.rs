//! A configuration resolved once: its dimensions and label, the test it runs, the lab path or
//! libvirt NIC model it needs and its tuning profile. The store keeps it (`resolved_json`) and
//! the runner and `explain` read it back instead of recomputing it from the plan.

use super::{PROFILE_DIMENSION, Plan, label};
use crate::lab::PathConfig;
use crate::traffic::spec::TestSpec;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Configuration {
    pub dims: Vec<(String, String)>,
    pub label: String,
    pub spec: TestSpec,
    /// The lab's path, when the plan sweeps path settings (`Plan::path_for`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathConfig>,
    /// A libvirt domain's NIC model, when the plan sweeps `nic` on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_model: Option<String>,
    /// The tuning profile's name, when the plan sweeps profiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl Plan {
    /// One configuration, resolved.
    pub fn resolve(&self, dims: &[(String, String)]) -> Result<Configuration, String> {
        Ok(Configuration {
            dims: dims.to_vec(),
            label: label(dims),
            spec: self.spec_for(dims)?,
            path: self.path_for(dims).transpose()?,
            nic_model: self.libvirt_model_for(dims).map(str::to_string),
            profile: dims
                .iter()
                .find(|(k, _)| k == PROFILE_DIMENSION)
                .map(|(_, v)| v.clone()),
        })
    }

    /// Every configuration of the matrix, resolved, in the plan's order.
    pub fn resolve_all(&self) -> Result<Vec<Configuration>, String> {
        self.configurations()
            .iter()
            .map(|c| self.resolve(c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resolved_configuration_holds_what_the_plan_computes_and_reads_back() {
        let plan = Plan::parse(
            "p.toml",
            "[target]\nkind = \"lab\"\nrate = \"1G\"\nrtt = \"10ms\"\n[test]\nduration = \"2s\"\n\
             [matrix]\nwindow = [\"64K\", \"1M\"]\nqueue = [\"30000\", \"300000\"]\n\
             profile = [\"default\", \"high-bdp-ns\"]\n",
        )
        .unwrap();
        let all = plan.resolve_all().unwrap();
        assert_eq!(all.len(), 8);
        for (c, dims) in all.iter().zip(plan.configurations()) {
            assert_eq!(c.dims, dims);
            assert_eq!(c.spec, plan.spec_for(&dims).unwrap());
            assert_eq!(c.path, plan.path_for(&dims).transpose().unwrap());
            assert!(c.path.is_some());
            assert_eq!(c.nic_model, None);
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(&serde_json::from_str::<Configuration>(&json).unwrap(), c);
        }
        assert_eq!(all[0].label, "window=64K queue=30000 profile=default");
        assert_eq!(all[0].profile.as_deref(), Some("default"));
        assert_eq!(all[0].spec.window_bytes, Some(64 * 1024));
    }

    /// The store keeps each configuration as resolved, and the plan's facts, and gives them
    /// back; a campaign from before schema version 5 or 6 has them derived from its stored plan.
    #[test]
    fn the_store_gives_back_the_resolved_configurations() {
        use crate::campaigns::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.db");
        let plan = Plan::parse(
            "p.toml",
            "[target]\nkind = \"lab\"\nrate = \"1G\"\n[matrix]\nrate = [\"100M\", \"1G\"]\n\
             window = [\"1M\"]\n[answer]\nchange = \"2%\"\n",
        )
        .unwrap();
        let mut store = Store::open(&db).unwrap();
        let id = store
            .create_campaign(&plan, None, "lab", 1, &serde_json::Value::Null)
            .unwrap();
        let rows = store.configurations(id).unwrap();
        let resolved: Vec<Configuration> =
            rows.iter().map(|r| r.resolved.clone().unwrap()).collect();
        assert_eq!(resolved, plan.resolve_all().unwrap());
        assert_eq!(resolved[0].path.as_ref().unwrap().rate_bps, Some(100e6));
        assert_eq!(store.campaign(id).unwrap().facts, plan.facts());
        assert_eq!(store.campaign(id).unwrap().facts.answer.change, 0.02);
        drop(store);
        // Stored text that says otherwise shows the facts are read, not derived.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut other = plan.facts();
        other.link_bps = Some(42.0);
        conn.execute(
            "UPDATE campaign SET plan_facts_json = ?1",
            [serde_json::to_string(&other).unwrap()],
        )
        .unwrap();
        drop(conn);
        let store = Store::open_read_only(&db).unwrap();
        assert_eq!(store.campaign(id).unwrap().facts, other);
        drop(store);
        // A campaign made before version 5: no resolved configurations nor facts stored.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "ALTER TABLE configuration DROP COLUMN resolved_json; \
             ALTER TABLE campaign DROP COLUMN plan_facts_json; \
             ALTER TABLE run DROP COLUMN rfc6349_transfer_time_ratio; \
             ALTER TABLE run DROP COLUMN rfc6349_tcp_efficiency_percent; \
             ALTER TABLE run DROP COLUMN rfc6349_buffer_delay_percent; \
             ALTER TABLE run DROP COLUMN rr_transactions_per_second; \
             ALTER TABLE run DROP COLUMN rr_latency_p99_us; PRAGMA user_version = 4;",
        )
        .unwrap();
        drop(conn);
        // Read commands take a version 4 store as it is; what it lacks comes from its plan.
        let old = Store::open_read_only(&db).unwrap();
        let derived: Vec<Configuration> = old
            .configurations(id)
            .unwrap()
            .into_iter()
            .map(|r| r.resolved.unwrap())
            .collect();
        assert_eq!(derived, resolved);
        assert_eq!(old.campaign(id).unwrap().facts, plan.facts());
        drop(old);
        // Migrated, the old campaign has them written in: a reader at the newest version
        // derives nothing and still finds them.
        drop(Store::open(&db).unwrap());
        let migrated = Store::open_read_only(&db).unwrap();
        assert_eq!(
            migrated.schema_version().unwrap(),
            crate::campaigns::store::SCHEMA_VERSION
        );
        assert_eq!(migrated.campaign(id).unwrap().facts, plan.facts());
        let written: Vec<Configuration> = migrated
            .configurations(id)
            .unwrap()
            .into_iter()
            .map(|r| r.resolved.unwrap())
            .collect();
        assert_eq!(written, resolved);
    }

    /// Imported runs have no plan: default facts, no resolved configurations.
    #[test]
    fn imported_runs_have_default_facts() {
        use crate::campaigns::store::Store;
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let id = store.create_import_campaign("files").unwrap();
        store
            .configuration_for(id, &[("file".into(), "a.json".into())])
            .unwrap();
        assert_eq!(
            store.campaign(id).unwrap().facts,
            crate::campaigns::plan::PlanFacts::default()
        );
        assert!(store.configurations(id).unwrap()[0].resolved.is_none());
    }
}
