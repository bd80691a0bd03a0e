//! Stores written before the typed plan values were kept: a campaign from before schema
//! version 6 has no `plan_facts_json`, and its configurations from before version 5 no
//! `resolved_json`. They are derived here from the stored plan text, the one place that parses
//! it again, so every reader gets typed values whatever the store's age. A campaign whose text
//! is not a plan (imported runs) gets the defaults.

use crate::campaigns::plan::{Configuration, Plan, PlanFacts};

fn stored_plan(plan_path: Option<&str>, plan_toml: &str) -> Option<Plan> {
    Plan::parse(plan_path.unwrap_or("plan"), plan_toml).ok()
}

/// The facts of a campaign stored without them.
pub(super) fn facts(plan_path: Option<&str>, plan_toml: &str) -> PlanFacts {
    stored_plan(plan_path, plan_toml)
        .map(|p| p.facts())
        .unwrap_or_default()
}

/// A configuration stored without its resolved form, resolved from the stored plan.
pub(super) fn resolver(
    plan_path: Option<&str>,
    plan_toml: &str,
) -> impl Fn(&[(String, String)]) -> Option<Configuration> {
    let plan = stored_plan(plan_path, plan_toml);
    move |dims| plan.as_ref()?.resolve(dims).ok()
}
