//! Lab hosts that are QEMU guests (`netsweep lab vm-image`, `lab up NAME --vm b --nic MODEL`).
//!
//! `image` builds the guest from this machine's Debian packages once and caches it: the kernel
//! package unpacked (not installed), its ELF `vmlinux` taken out of the compressed `vmlinuz`
//! so QEMU boots it directly through the PVH entry (no BIOS, no decompression in the guest:
//! about 5 s to a listening server under TCG instead of about 20), and an uncompressed
//! initramfs (`cpio`) with static busybox, the NIC drivers and netsweep itself with its
//! shared libraries. `guest` starts and stops QEMU: a TAP device in the lab's namespace, the
//! console in a file, the PID in a pidfile that `lab down` kills by. The accelerator is chosen
//! by a boot probe with a timeout, never by the presence of `/dev/kvm` (on this machine kind
//! `/dev/kvm` exists but a guest hangs under it).

pub mod agent;
pub mod channel;
pub mod cpio;
pub mod guest;
pub mod image;
pub mod snapshot;

use serde::{Deserialize, Serialize};

/// The NIC model QEMU gives the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NicModel {
    Virtio,
    E1000,
    Rtl8139,
}

impl NicModel {
    pub const ALL: [NicModel; 3] = [NicModel::Virtio, NicModel::E1000, NicModel::Rtl8139];

    pub fn parse(s: &str) -> Result<NicModel, String> {
        match s.to_ascii_lowercase().as_str() {
            "virtio" | "virtio-net" | "virtio-net-pci" => Ok(NicModel::Virtio),
            "e1000" => Ok(NicModel::E1000),
            "rtl8139" | "8139" => Ok(NicModel::Rtl8139),
            other => Err(format!(
                "unknown NIC model {other:?}: use virtio, e1000 or rtl8139"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NicModel::Virtio => "virtio",
            NicModel::E1000 => "e1000",
            NicModel::Rtl8139 => "rtl8139",
        }
    }

    /// QEMU's `-device` name.
    pub fn qemu_device(self) -> &'static str {
        match self {
            NicModel::Virtio => "virtio-net-pci",
            NicModel::E1000 => "e1000",
            NicModel::Rtl8139 => "rtl8139",
        }
    }

    /// The Linux driver the guest binds. QEMU's rtl8139 is an RTL8139C+ (PCI revision 0x20),
    /// which `8139too` refuses ("use 8139cp").
    pub fn guest_driver(self) -> &'static str {
        match self {
            NicModel::Virtio => "virtio_net",
            NicModel::E1000 => "e1000",
            NicModel::Rtl8139 => "8139cp",
        }
    }

    /// Emulated hardware (every packet through an emulated device's registers) rather than a
    /// paravirtual queue.
    pub fn emulated(self) -> bool {
        !matches!(self, NicModel::Virtio)
    }
}

/// How QEMU runs the guest's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nic_models_parse_and_name_their_devices_and_drivers() {
        for m in NicModel::ALL {
            assert_eq!(NicModel::parse(m.name()), Ok(m));
        }
        assert_eq!(NicModel::parse("virtio-net-pci"), Ok(NicModel::Virtio));
        assert_eq!(NicModel::Rtl8139.guest_driver(), "8139cp");
        assert_eq!(NicModel::Virtio.qemu_device(), "virtio-net-pci");
        assert!(
            NicModel::parse("ne2k")
                .unwrap_err()
                .contains("virtio, e1000 or rtl8139")
        );
        assert!(NicModel::E1000.emulated() && !NicModel::Virtio.emulated());
    }
}
