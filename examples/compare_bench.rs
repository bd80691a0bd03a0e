//! Benchmark: `compare` over 100,000 stored runs (target: under 2 s).
//!
//!     cargo run --release --example compare_bench
//!
//! Builds a database of 100,000 runs (10 configurations x 10,000 rounds) in a temporary
//! directory, then times reading the runs back and comparing one dimension within the others.

use netsweep::campaigns::campaign::{self, Metric};
use netsweep::campaigns::plan::Plan;
use netsweep::campaigns::store::Store;
use rusqlite::params;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("bench.db");
    let plan = Plan::parse(
        "bench.toml",
        "[target]\nkind = \"loopback\"\n[matrix]\nwindow = [\"64K\", \"128K\", \"256K\", \"512K\", \"1M\"]\ncongestion = [\"cubic\", \"bbr\"]\n[repeat]\ncount = 10000\n",
    )?;
    let mut store = Store::open(&db)?;
    let campaign = store.create_campaign(&plan, None, "bench", 1, &serde_json::json!({}))?;
    let configs = store.configurations(campaign)?;
    let t = Instant::now();
    {
        let conn = store.connection();
        conn.execute_batch("BEGIN")?;
        let mut st = conn.prepare(
            "INSERT INTO run (campaign_id, configuration_id, round, sequence, started_unix, finished_unix, status, bits_per_second, retransmits)
             VALUES (?1, ?2, ?3, ?4, 0, 0, 'ok', ?5, 0)",
        )?;
        let mut seq = 0i64;
        for round in 0..10_000i64 {
            for (i, c) in configs.iter().enumerate() {
                let bps = 1e8 * (i + 1) as f64
                    + ((round * 7919 + i as i64 * 104_729) % 1000) as f64 * 1e4;
                st.execute(params![campaign, c.id, round, seq, bps])?;
                seq += 1;
            }
        }
        conn.execute_batch("COMMIT")?;
    }
    println!("built 100,000 runs in {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let runs = store.runs(campaign)?;
    let read = t.elapsed();
    let groups = campaign::compare(
        &runs,
        "congestion",
        &["cubic".into(), "bbr".into()],
        &[],
        Metric::BitsPerSecond,
        &campaign::Judging::default(),
    );
    let total = t.elapsed();
    println!(
        "read {} runs in {:.3} s; compared {} groups; total {:.3} s (target < 2 s)",
        runs.len(),
        read.as_secs_f64(),
        groups.len(),
        total.as_secs_f64()
    );
    for g in &groups {
        if let Some(a) = &g.analysis {
            println!("  {}: {}", g.context, a.comparisons[0].verdict);
        }
    }
    Ok(())
}
