//! CPU pinning of a test's data threads (`-A`/`--affinity`, iperf3's flag; pure). iperf3's
//! `-A n` pins this end to CPU n and the client's `-A n,m` pins the server to CPU m for that
//! one test. netsweep pins each end's stream (and request/response connection) threads and
//! also takes a range, `-A 2-5`, which spreads them: stream i runs on CPU 2 + i mod 4, as
//! ESnet's 100G host-tuning pages have users spread flows over the cores of the NIC's node.

use serde::{Deserialize, Serialize};

/// The highest CPU number taken (the platforms' CPU set size, 1024, less one).
pub const MAX_CPU: u16 = 1023;

/// One CPU or a range of them, in the order streams are spread over them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpus {
    pub first: u16,
    pub last: u16,
}

impl Cpus {
    pub fn one(cpu: u16) -> Cpus {
        Cpus {
            first: cpu,
            last: cpu,
        }
    }

    /// `N` or `FIRST-LAST`.
    pub fn parse(v: &str) -> Result<Cpus, String> {
        let number = |s: &str| -> Result<u16, String> {
            match s.trim().parse::<u16>() {
                Ok(n) if n <= MAX_CPU => Ok(n),
                _ => Err(format!(
                    "{s:?} is not a CPU number (0 to {MAX_CPU}, as in -A 2 or -A 2-5)"
                )),
            }
        };
        let cpus = match v.split_once('-') {
            Some((a, b)) => Cpus {
                first: number(a)?,
                last: number(b)?,
            },
            None => Cpus::one(number(v)?),
        };
        if cpus.first > cpus.last {
            return Err(format!(
                "the CPU range {v} runs backwards (write {}-{})",
                cpus.last, cpus.first
            ));
        }
        Ok(cpus)
    }

    /// The CPU of this end's `i`th data thread.
    pub fn for_thread(&self, i: usize) -> usize {
        let count = usize::from(self.last - self.first) + 1;
        usize::from(self.first) + i % count
    }

    pub fn is_single(&self) -> bool {
        self.first == self.last
    }

    /// "CPU 2", "CPUs 2-5".
    pub fn words(&self) -> String {
        if self.is_single() {
            format!("CPU {}", self.first)
        } else {
            format!("CPUs {}-{}", self.first, self.last)
        }
    }

    /// As `-A` takes it: "2", "2-5".
    pub fn arg(&self) -> String {
        if self.is_single() {
            self.first.to_string()
        } else {
            format!("{}-{}", self.first, self.last)
        }
    }

    /// Why this host cannot pin here: a CPU of the range is not among `allowed`.
    pub fn unavailable(&self, allowed: &[usize]) -> Option<String> {
        let missing: Vec<u16> = (self.first..=self.last)
            .filter(|c| !allowed.contains(&usize::from(*c)))
            .collect();
        let first = missing.first()?;
        Some(format!(
            "CPU {first} is not one this process may run on (it may use {})",
            list_words(allowed)
        ))
    }
}

/// Where each end of a test pins its data threads; unset ends are left to the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Cpus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Cpus>,
}

impl Affinity {
    /// The client's `-A`: `N`, `N,M` (iperf3's), either side a range; `,M` pins the server
    /// alone.
    pub fn parse_client(v: &str) -> Result<Affinity, String> {
        let side = |s: &str| -> Result<Option<Cpus>, String> {
            if s.trim().is_empty() {
                Ok(None)
            } else {
                Cpus::parse(s).map(Some)
            }
        };
        let (client, server) = match v.split_once(',') {
            Some((c, s)) => (c, Some(s)),
            None => (v, None),
        };
        // iperf3's help writes `-A n/n,m` for "n or n,m", and iperf3 reads `-A 2/2` (its own
        // release commands) as CPU 2: so does netsweep.
        let client = client.split_once('/').map_or(client, |(n, _)| n);
        let (client, server) = (side(client)?, server.map(side).transpose()?.flatten());
        if client.is_none() && server.is_none() {
            return Err(format!(
                "-A {v:?} names no CPU (as in -A 2, -A 2,3 or -A 0-3,4-7)"
            ));
        }
        Ok(Affinity { client, server })
    }

    pub fn is_unset(&self) -> bool {
        self.client.is_none() && self.server.is_none()
    }

    /// This end's CPUs.
    pub fn of(&self, is_client: bool) -> Option<Cpus> {
        if is_client { self.client } else { self.server }
    }

    /// In words, for a result ("client's data threads on CPU 0, server's on CPUs 2-3"). A
    /// server not asked by the client pins where its own `-A` says, which the client does not
    /// know.
    pub fn words(&self) -> Option<String> {
        let client = self
            .client
            .map_or_else(|| "unpinned".to_string(), |c| format!("on {}", c.words()));
        let server = self.server.map_or_else(
            || "where the server's own -A puts them".to_string(),
            |c| format!("on {}", c.words()),
        );
        (!self.is_unset()).then(|| format!("client's data threads {client}, server's {server}"))
    }
}

/// "0-1", "0, 2, 5-7".
fn list_words(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &c in cpus {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == c => *last = c,
            _ => runs.push((c, c)),
        }
    }
    if runs.is_empty() {
        return "none".into();
    }
    runs.iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3s_forms_and_ranges_parse() {
        let a = Affinity::parse_client("1").unwrap();
        assert_eq!((a.client, a.server), (Some(Cpus::one(1)), None));
        let a = Affinity::parse_client("0,1").unwrap();
        assert_eq!(
            (a.client, a.server),
            (Some(Cpus::one(0)), Some(Cpus::one(1)))
        );
        let a = Affinity::parse_client(",3").unwrap();
        assert_eq!((a.client, a.server), (None, Some(Cpus::one(3))));
        let a = Affinity::parse_client("0-3,4-7").unwrap();
        assert_eq!(a.client, Some(Cpus { first: 0, last: 3 }));
        assert_eq!(a.server.unwrap().words(), "CPUs 4-7");
        let a = Affinity::parse_client("2/2").unwrap();
        assert_eq!((a.client, a.server), (Some(Cpus::one(2)), None));
        for bad in ["", ",", "x", "3-1", "1024", "-1", "1,2,3", "/2"] {
            assert!(Affinity::parse_client(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_range_spreads_threads_round_robin() {
        let c = Cpus::parse("2-4").unwrap();
        let got: Vec<usize> = (0..7).map(|i| c.for_thread(i)).collect();
        assert_eq!(got, [2, 3, 4, 2, 3, 4, 2]);
        assert_eq!(Cpus::one(5).for_thread(9), 5);
    }

    #[test]
    fn an_unavailable_cpu_is_named_with_the_ones_there_are() {
        let allowed = [0, 1, 2, 5, 6, 7];
        assert_eq!(Cpus::parse("0-2").unwrap().unavailable(&allowed), None);
        let why = Cpus::parse("1-4").unwrap().unavailable(&allowed).unwrap();
        assert_eq!(
            why,
            "CPU 3 is not one this process may run on (it may use 0-2, 5-7)"
        );
    }
}
