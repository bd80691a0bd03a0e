//! Platform leaf for labs: network namespaces, TUN devices and `ip`/`tc`. Linux only.

mod linux;
pub use linux::*;
