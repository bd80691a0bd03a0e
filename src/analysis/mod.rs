//! Analysis and reports: ministat-compatible statistics and verdicts (`stats`), ministat's
//! rendering and input (`ministat`), HTML and Markdown reports (`report`).

pub mod decide;
pub mod effects;
pub mod ministat;
pub mod report;
pub mod stats;
