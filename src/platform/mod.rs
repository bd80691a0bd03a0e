//! Platform leaves (Linux): socket options and TCP_INFO (`sockopt`), thread scheduling
//! (`sched`), network namespaces (`netns`), signals (`signals`).

pub mod netns;
pub mod sched;
pub mod signals;
pub mod sockopt;
