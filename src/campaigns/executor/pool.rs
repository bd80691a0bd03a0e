//! The labs a campaign keeps up. A path with a guest gets a lab of its own, kept running while
//! memory allows, so a swept NIC model (or any path value that needs its own guest) switches
//! between running guests instead of rebooting one for every run: booting a TCG guest takes
//! 5-6 s here, 4-10 s under load. Paths without guests share one lab that is rebuilt when the
//! path changes (namespaces take a fraction of a second, and an idle lab would only hold a
//! server and its delay line). When memory runs short, the lab used least recently goes down.

use crate::lab::topology::MAX_NAME;
use crate::lab::{Host, Lab, LabOptions, LabServer, PathConfig};
use crate::traffic::spec::ServerLimits;

/// Most labs up at once.
const MAX_LABS: usize = 8;
/// What QEMU itself takes beside the guest's memory, MiB: an allowance (a 256 MiB TCG guest's
/// QEMU held 295 MiB resident after a test here, 2026-11-26).
const QEMU_OVERHEAD_MIB: u64 = 128;

/// A lab and the server netsweep runs in it (none when host b is a guest, whose init starts
/// its own).
struct Slot {
    lab: Lab,
    server: Option<LabServer>,
    /// When it was last switched to, on the pool's clock.
    used: u64,
}

/// What `LabPool::switch` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Switch {
    /// The lab in use has the path already.
    Same,
    /// Another lab, already up, is in use now.
    ToRunning,
    /// A lab just built is in use now.
    ToNew,
}

pub(super) struct LabPool {
    slots: Vec<Slot>,
    current: usize,
    base: String,
    opts: LabOptions,
    clock: u64,
    /// MemAvailable in MiB, read when a guest lab is about to be added (`None` where the
    /// system does not say: one guest lab at a time then).
    mem_available: fn() -> Option<u64>,
}

impl LabPool {
    /// Builds the lab of `path`, and at the same time those of `others` that have guests, as
    /// many as half the available memory holds, so the guests' boots overlap before the first
    /// run instead of following one another run after run. `path`'s lab must come up; one of
    /// the others that fails is only said (it is tried again when a run needs it). Returns the
    /// pool with `path`'s lab in use, what `welcome` returned for each lab (run on each as soon
    /// as it is up, while the others boot), and what failed.
    pub(super) fn start<T: Send>(
        base: &str,
        path: PathConfig,
        others: &[PathConfig],
        opts: &LabOptions,
        welcome: &(dyn Fn(&Lab) -> T + Sync),
    ) -> anyhow::Result<(Self, Vec<T>, Vec<String>)> {
        let mut pool = LabPool {
            slots: Vec::new(),
            current: 0,
            base: base.to_string(),
            opts: opts.clone(),
            clock: 0,
            mem_available: read_mem_available,
        };
        let wanted = to_build(base, &path, others, (pool.mem_available)());
        let opts = &pool.opts;
        let built: Vec<anyhow::Result<(Lab, T)>> = std::thread::scope(|scope| {
            let running: Vec<_> = wanted
                .iter()
                .map(|(name, p)| {
                    scope.spawn(move || {
                        let lab = Lab::up(name, p.clone(), opts)?;
                        let welcomed = welcome(&lab);
                        Ok((lab, welcomed))
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("its build panicked")))
                })
                .collect()
        });
        let mut problems = Vec::new();
        let mut welcomed = Vec::new();
        for (i, ((name, _), lab)) in wanted.iter().zip(built).enumerate() {
            let slot = lab.and_then(|(lab, w)| {
                let server = serve(&lab).map_err(anyhow::Error::msg)?;
                Ok((
                    Slot {
                        lab,
                        server,
                        used: 0,
                    },
                    w,
                ))
            });
            match slot {
                Ok((slot, w)) => {
                    pool.slots.push(slot);
                    welcomed.push(w);
                }
                // The labs built already go down with the pool.
                Err(e) if i == 0 => return Err(e),
                Err(e) => problems.push(format!("lab {name}: {e:#}")),
            }
        }
        Ok((pool, welcomed, problems))
    }

    /// The lab in use.
    pub(super) fn lab(&self) -> &Lab {
        &self.slots[self.current].lab
    }

    /// Labs up, the one in use among them.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Makes the lab of `path` the one in use: one already up, or a new one (taking down the
    /// lab of a path without guests, or the least recently used when memory is short).
    pub(super) fn switch(&mut self, path: &PathConfig) -> Result<Switch, String> {
        if self.lab().path() == path {
            return Ok(Switch::Same);
        }
        self.clock += 1;
        if let Some(i) = self.slots.iter().position(|s| s.lab.path() == path) {
            self.current = i;
            self.slots[i].used = self.clock;
            return Ok(Switch::ToRunning);
        }
        let committed = self
            .slots
            .iter()
            .map(|s| lab_memory_mib(s.lab.path()))
            .sum();
        let keep = path.guest.is_some()
            && room_for_another(
                (self.mem_available)(),
                lab_memory_mib(path),
                (self.slots.len(), committed),
            );
        if !keep {
            let victim = if path.guest.is_some() || self.lab().guest().is_some() {
                least_recently_used(self.slots.iter().map(|s| s.used))
            } else {
                self.current
            };
            let slot = self.slots.remove(victim);
            // The server thread first, then the namespaces it lives in.
            drop(slot.server);
            slot.lab
                .down()
                .map_err(|e| format!("cannot take the lab down: {e:#}"))?;
        }
        let name = self.free_name()?;
        let lab = Lab::up(&name, path.clone(), &self.opts)
            .map_err(|e| format!("cannot build the lab: {e:#}"))?;
        let server = serve(&lab)?;
        self.slots.push(Slot {
            lab,
            server,
            used: self.clock,
        });
        self.current = self.slots.len() - 1;
        Ok(Switch::ToNew)
    }

    /// Builds the lab in use again, with its path, under a name no lab up has, and takes the
    /// old one down once the new one is up (a guest of the old one died: the new lab boots its
    /// guests anew). When the new lab cannot be built, the old one stays in use.
    pub(super) fn rebuild_current(&mut self) -> Result<(), String> {
        let name = self.free_name()?;
        let lab = Lab::up(&name, self.lab().path().clone(), &self.opts)
            .map_err(|e| format!("cannot build the lab again: {e:#}"))?;
        let server = serve(&lab)?;
        let old = std::mem::replace(
            &mut self.slots[self.current],
            Slot {
                lab,
                server,
                used: self.clock,
            },
        );
        // The server thread first, then the namespaces it lives in.
        drop(old.server);
        old.lab
            .down()
            .map(drop)
            .map_err(|e| format!("the new lab is up, but the old one did not go down: {e:#}"))
    }

    /// The first of the pool's names no lab up has (there is one more name than labs).
    fn free_name(&self) -> Result<String, String> {
        let used: Vec<&str> = self.slots.iter().map(|s| s.lab.name()).collect();
        (0..=MAX_LABS)
            .map(|k| lab_name(&self.base, k))
            .find(|n| !used.contains(&n.as_str()))
            .ok_or_else(|| "no lab name left".to_string())
    }
}

impl Drop for LabPool {
    fn drop(&mut self) {
        for slot in self.slots.drain(..) {
            // The server thread first, then the namespaces it lives in.
            drop(slot.server);
            drop(slot.lab);
        }
    }
}

/// The labs to build at the start, with their names: `path`'s, then those of `others` that
/// have guests (each once), while they fit in half of `available` MiB beside `path`'s and
/// `MAX_LABS` allows.
fn to_build(
    base: &str,
    path: &PathConfig,
    others: &[PathConfig],
    available: Option<u64>,
) -> Vec<(String, PathConfig)> {
    let mut wanted = vec![(base.to_string(), path.clone())];
    let mut budget = available
        .map_or(0, |a| a / 2)
        .saturating_sub(lab_memory_mib(path));
    for p in others {
        let need = lab_memory_mib(p);
        if p.guest.is_none()
            || need > budget
            || wanted.len() >= MAX_LABS
            || wanted.iter().any(|(_, w)| w == p)
        {
            continue;
        }
        budget -= need;
        wanted.push((lab_name(base, wanted.len()), p.clone()));
    }
    wanted
}

/// Starts netsweep's server on host b, unless host b is a guest (its init starts one).
fn serve(lab: &Lab) -> Result<Option<LabServer>, String> {
    if lab.guest().is_some() {
        return Ok(None);
    }
    lab.start_server(Host::B, ServerLimits::default())
        .map(Some)
        .map_err(|e| format!("cannot start the server in the lab: {e:#}"))
}

/// The name of the pool's `k`-th lab: the campaign's own, then with a digit appended (the
/// base is cut to leave room for it within the kernel's device names).
fn lab_name(base: &str, k: usize) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{}{k}", &base[..base.len().min(MAX_NAME - 1)])
    }
}

/// Memory a lab of `path` holds while it runs: its guests and their QEMU processes.
fn lab_memory_mib(path: &PathConfig) -> u64 {
    [Host::A, Host::B]
        .into_iter()
        .filter_map(|h| path.guest_on(h))
        .map(|g| u64::from(g.memory_mib) + QEMU_OVERHEAD_MIB)
        .sum()
}

/// Whether another lab of `need` MiB may join `up` labs that were given `committed` MiB: at
/// most `MAX_LABS`, and all of them within half of the memory available, so the tests
/// themselves (and the host) keep the rest, as at the start (`to_build`). The running guests'
/// memory counts whole: a TCG guest touches little of what it was given, so MemAvailable
/// hardly falls while it runs (a trial's three 4.6 GiB guests ran at once where the start had
/// kept two, the third added on a later switch).
fn room_for_another(available_mib: Option<u64>, need: u64, (up, committed): (usize, u64)) -> bool {
    up < MAX_LABS && available_mib.is_some_and(|a| committed + need <= a / 2)
}

/// The index of the smallest `used`.
fn least_recently_used(used: impl Iterator<Item = u64>) -> usize {
    used.enumerate()
        .min_by_key(|(_, u)| *u)
        .map_or(0, |(i, _)| i)
}

fn read_mem_available() -> Option<u64> {
    mem_available_mib(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemAvailable` of a /proc/meminfo text, in MiB.
fn mem_available_mib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_within_the_kernels_device_names_and_differ() {
        assert_eq!(lab_name("r1234567", 0), "r1234567");
        assert_eq!(lab_name("r1234567", 3), "r12345673");
        // A base of the longest length is cut to leave room for the digit.
        assert_eq!(lab_name("abcdefghi", 2), "abcdefgh2");
        let names: Vec<String> = (0..=MAX_LABS).map(|k| lab_name("nics", k)).collect();
        assert!(names.iter().all(|n| n.len() <= MAX_NAME));
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn guests_are_kept_while_half_the_available_memory_holds_them() {
        // 256 MiB guests: 384 MiB each with QEMU.
        let path = PathConfig {
            guest: Some(crate::lab::vm::guest::GuestSpec::default()),
            ..PathConfig::default()
        };
        assert_eq!(lab_memory_mib(&path), 384);
        let both = PathConfig {
            guest_a: true,
            ..path.clone()
        };
        assert_eq!(lab_memory_mib(&both), 768);
        assert_eq!(lab_memory_mib(&PathConfig::default()), 0);
        assert!(room_for_another(Some(24_000), 384, (2, 768)));
        assert!(!room_for_another(Some(700), 384, (0, 0)));
        assert!(!room_for_another(Some(1 << 20), 384, (MAX_LABS, 384)));
        // A system that does not say keeps one guest lab at a time.
        assert!(!room_for_another(None, 384, (1, 384)));
        // The trial's 4608 MiB guests (4736 with QEMU) on 24 GB available: two fit in half of
        // it, as at the start; a third is not added beside them, though MemAvailable stays
        // near 24 GB while TCG guests run.
        let big = 4608 + QEMU_OVERHEAD_MIB;
        assert!(room_for_another(Some(24_000), big, (1, big)));
        assert!(!room_for_another(Some(24_000), big, (2, 2 * big)));
    }

    #[test]
    fn the_labs_built_at_the_start_are_each_guest_path_once_within_memory() {
        let nic = |n: &str| PathConfig {
            guest: Some(crate::lab::vm::guest::GuestSpec {
                nic: crate::lab::vm::NicModel::parse(n).unwrap(),
                ..Default::default()
            }),
            ..PathConfig::default()
        };
        let (virtio, e1000, rtl) = (nic("virtio"), nic("e1000"), nic("rtl8139"));
        let names = |w: Vec<(String, PathConfig)>| -> Vec<String> {
            w.into_iter().map(|(n, _)| n).collect()
        };
        // The first path's lab, then each other guest path once, named in turn.
        let others = [e1000.clone(), virtio.clone(), rtl.clone(), e1000.clone()];
        let all = to_build("r42", &virtio, &others, Some(24_000));
        assert_eq!(names(all.clone()), ["r42", "r421", "r422"]);
        assert_eq!(all[2].1, rtl);
        // 384 MiB each: half of 1600 MiB holds the first and one more.
        assert_eq!(
            names(to_build("r42", &virtio, &others, Some(1600))),
            ["r42", "r421"]
        );
        // Unknown memory, or paths without guests: the first lab alone.
        assert_eq!(names(to_build("r42", &virtio, &others, None)), ["r42"]);
        let plain = [PathConfig::default()];
        assert_eq!(
            names(to_build("r42", &virtio, &plain, Some(24_000))),
            ["r42"]
        );
    }

    #[test]
    fn the_least_recently_used_lab_goes_first() {
        assert_eq!(least_recently_used([5, 2, 9].into_iter()), 1);
        assert_eq!(least_recently_used([0].into_iter()), 0);
    }

    #[test]
    fn memavailable_is_read_in_mib() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20480000 kB\n";
        assert_eq!(mem_available_mib(text), Some(20_000));
        assert_eq!(mem_available_mib("MemTotal: 1 kB\n"), None);
    }
}
