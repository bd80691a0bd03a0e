//! Host diagnostics and tuning: `doctor`, sysctl profiles with their journal (`tuning`), and
//! the kernel's counters and host facts they read (`counters`, `hostfacts`).

pub mod counters;
pub mod doctor;
pub mod freebsd;
pub mod hostfacts;
pub mod tuning;
