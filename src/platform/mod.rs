//! Platform leaves (Linux): socket options and TCP_INFO (`sockopt`), network namespaces
//! (`netns`), signals (`signals`).

pub mod netns;
pub mod signals;
pub mod sockopt;
