//! The run order of a campaign: rounds of freshly shuffled configurations, or the
//! sequential shell-loop order.

use crate::campaigns::plan::Order;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

/// The run order: (configuration position, round), deterministic for a seed. With `groups`
/// (a group number per configuration, e.g. its tuning profile), each interleaved round keeps a
/// group's configurations together, the groups in shuffled order.
pub fn schedule(
    configs: usize,
    count: u32,
    order: Order,
    seed: u64,
    groups: Option<&[usize]>,
) -> Vec<(usize, u32)> {
    match order {
        Order::Sequential => (0..configs)
            .flat_map(|c| (0..count).map(move |r| (c, r)))
            .collect(),
        Order::Interleaved => {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut out = Vec::with_capacity(configs * count as usize);
            for r in 0..count {
                let mut round: Vec<usize> = (0..configs).collect();
                round.shuffle(&mut rng);
                if let Some(g) = groups {
                    let mut first_seen: Vec<usize> = Vec::new();
                    for c in &round {
                        let grp = g.get(*c).copied().unwrap_or(0);
                        if !first_seen.contains(&grp) {
                            first_seen.push(grp);
                        }
                    }
                    round.sort_by_key(|c| {
                        first_seen
                            .iter()
                            .position(|x| *x == g.get(*c).copied().unwrap_or(0))
                    });
                }
                out.extend(round.into_iter().map(|c| (c, r)));
            }
            out
        }
    }
}
