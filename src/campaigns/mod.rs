//! Campaigns and their storage: plans (`plan`), the runner and its executors (`runner`,
//! `executor`), the SQLite store (`store`) and the statistics of a campaign's runs (`campaign`).

pub mod campaign;
pub mod executor;
pub mod explain;
pub mod plan;
pub mod runner;
pub mod store;
