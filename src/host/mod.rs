//! Host diagnostics and tuning: `doctor`, sysctl profiles with their journal (`tuning`), and
//! the kernel's counters and host facts they read (`counters`, `hostfacts`), and a user's
//! libvirt domain whose NIC model a campaign changes and puts back (`libvirt`).

pub mod counters;
pub mod doctor;
pub mod freebsd;
pub mod hostfacts;
pub mod libvirt;
pub mod tuning;
