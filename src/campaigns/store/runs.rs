//! A campaign's runs in and out of the store: one finished run with its intervals in one
//! transaction (`insert_run`), several writes as one (`all_or_nothing`), and every run of a campaign as the read commands see it (`runs`).

use super::{NewRun, RunRow, Store};
use rusqlite::params;

impl Store {
    /// Stores one finished run (and its intervals) in one transaction (a savepoint, so that
    /// inside `all_or_nothing` it joins the caller's).
    pub fn insert_run(&mut self, campaign: i64, run: &NewRun) -> anyhow::Result<i64> {
        let tx = self.conn.savepoint()?;
        let s = run.result.as_ref().map(|r| &r.summary);
        let imp = run.imported.as_ref();
        let lat = run.result.as_ref().and_then(|r| r.latency.as_ref());
        let rfc = run.result.as_ref().and_then(|r| r.rfc6349.as_ref());
        let rr = run.result.as_ref().and_then(|r| r.rr.as_ref());
        let status = if run.error.is_none() { "ok" } else { "failed" };
        tx.execute(
            "INSERT INTO run (campaign_id, configuration_id, round, sequence, started_unix, finished_unix, status, error,
                              bits_per_second, retransmits, lost_percent, jitter_ms, cpu_local_percent, cpu_remote_percent,
                              result_json, counters_json, tuning_json,
                              latency_idle_p50_ms, latency_loaded_p50_ms, latency_loaded_p99_ms, latency_added_ms,
                              rfc6349_transfer_time_ratio, rfc6349_tcp_efficiency_percent, rfc6349_buffer_delay_percent,
                              rr_transactions_per_second, rr_latency_p99_us)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
            params![
                campaign,
                run.configuration_id,
                run.round,
                run.sequence as i64,
                run.started_unix,
                run.finished_unix,
                status,
                run.error,
                s.map(|s| s.bits_per_second).or(imp.map(|i| i.bits_per_second)),
                s.and_then(|s| s.retransmits).map(|v| v as i64).or(imp.and_then(|i| i.retransmits)),
                s.and_then(|s| s.lost_percent).or(imp.and_then(|i| i.lost_percent)),
                s.and_then(|s| s.jitter_ms).or(imp.and_then(|i| i.jitter_ms)),
                run.result.as_ref().map(|r| r.cpu.local_percent).or(imp.and_then(|i| i.cpu_local_percent)),
                run.result.as_ref().map(|r| r.cpu.remote_percent).or(imp.and_then(|i| i.cpu_remote_percent)),
                run.result.as_ref().map(serde_json::to_string).transpose()?.or(imp.map(|i| i.raw_json.clone())),
                run.counters_json,
                run.tuning_json,
                lat.and_then(|l| l.idle_p50_ms),
                lat.and_then(|l| l.loaded_p50_ms),
                lat.and_then(|l| l.loaded_p99_ms),
                lat.and_then(|l| l.added_ms),
                rfc.and_then(|m| m.transfer_time_ratio),
                rfc.and_then(|m| m.tcp_efficiency_percent),
                rfc.and_then(|m| m.buffer_delay_percent),
                rr.map(|r| r.transactions_per_second),
                rr.map(|r| r.latency_us.p99),
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        if let Some(result) = &run.result {
            let mut st = tx.prepare(
                "INSERT INTO interval (run_id, stream, idx, start_s, end_s, omitted, bytes, bits_per_second, retransmits, rtt_us, cwnd_bytes, lost_packets, jitter_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?;
            for iv in &result.intervals {
                // Stream -1 is the total over all streams.
                let rows = std::iter::once((-1i64, &iv.total))
                    .chain(iv.streams.iter().map(|s| (i64::from(s.stream), s)));
                for (stream, row) in rows {
                    st.execute(params![
                        run_id,
                        stream,
                        iv.index,
                        iv.start_s,
                        iv.end_s,
                        iv.omitted,
                        row.bytes as i64,
                        row.bits_per_second,
                        row.retransmits.map(|v| v as i64),
                        row.rtt_us,
                        row.cwnd_bytes.map(|v| v as i64),
                        row.lost_packets.map(|v| v as i64),
                        row.jitter_ms
                    ])?;
                }
            }
        }
        tx.commit()?;
        Ok(run_id)
    }

    /// Runs `write` in one transaction: everything it stores is kept, or, when it fails, none
    /// of it (`import` of several files stores all or none of them).
    pub fn all_or_nothing<T>(
        &mut self,
        write: impl FnOnce(&mut Store) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let done = write(self).and_then(|v| {
            self.conn.execute_batch("COMMIT")?;
            Ok(v)
        });
        if done.is_err() && !self.conn.is_autocommit() {
            // The error that stopped the write is the one to report.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        done
    }

    /// The tests imported into a campaign, each as `Imported::identity` names it.
    pub fn imported_identities(&self, campaign: i64) -> anyhow::Result<Vec<String>> {
        let mut st = self.conn.prepare(
            "SELECT r.result_json FROM run r JOIN campaign k ON k.id = r.campaign_id
             WHERE r.campaign_id = ?1 AND k.target = ?2 AND r.result_json IS NOT NULL",
        )?;
        let rows = st.query_map(params![campaign, super::legacy::IMPORTED], |r| {
            r.get::<_, String>(0)
        })?;
        let mut out = Vec::new();
        for text in rows {
            let text = text?;
            let cookie = serde_json::from_str(&text)
                .ok()
                .and_then(|v| crate::traffic::iperf3::import::cookie_of(&v));
            out.push(cookie.unwrap_or(text));
        }
        Ok(out)
    }

    /// Every run of a campaign, in run order. An imported campaign's runs are of no round
    /// (older stores numbered them by their place on the command line).
    pub fn runs(&self, campaign: i64) -> anyhow::Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(
            "SELECT r.id, c.label, c.dims_json,
                    CASE WHEN (SELECT target FROM campaign WHERE id = r.campaign_id) = ?2 THEN 0 ELSE r.round END,
                    r.sequence, r.status, r.error, r.bits_per_second, r.retransmits,
                    r.lost_percent, r.jitter_ms, r.cpu_local_percent, r.cpu_remote_percent, c.position,
                    r.latency_loaded_p50_ms, r.latency_loaded_p99_ms, r.latency_added_ms,
                    r.rfc6349_transfer_time_ratio, r.rfc6349_tcp_efficiency_percent, r.rfc6349_buffer_delay_percent,
                    r.rr_transactions_per_second, r.rr_latency_p99_us, r.started_unix
             FROM run r JOIN configuration c ON c.id = r.configuration_id WHERE r.campaign_id = ?1 ORDER BY r.sequence",
        )?;
        let rows = st.query_map(params![campaign, super::legacy::IMPORTED], |r| {
            Ok(RunRow {
                id: r.get(0)?,
                configuration: r.get(1)?,
                dims: serde_json::from_str(&r.get::<_, String>(2)?).unwrap_or_default(),
                round: r.get(3)?,
                started_unix: r.get::<_, Option<f64>>(22)?,
                sequence: r.get::<_, i64>(4)? as u64,
                status: r.get(5)?,
                error: r.get(6)?,
                bits_per_second: r.get(7)?,
                retransmits: r.get(8)?,
                lost_percent: r.get(9)?,
                jitter_ms: r.get(10)?,
                cpu_local_percent: r.get(11)?,
                cpu_remote_percent: r.get(12)?,
                config_position: r.get(13)?,
                loaded_p50_ms: r.get(14)?,
                loaded_p99_ms: r.get(15)?,
                added_latency_ms: r.get(16)?,
                transfer_time_ratio: r.get(17)?,
                tcp_efficiency_percent: r.get(18)?,
                buffer_delay_percent: r.get(19)?,
                transactions_per_second: r.get(20)?,
                latency_p99_us: r.get(21)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `import` of several files relies on: a failure part-way stores none of the runs.
    #[test]
    fn all_or_nothing_keeps_every_run_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let campaign = store.create_import_campaign("t").unwrap();
        let config = store
            .configuration_for(campaign, &[("a".into(), "b".into())])
            .unwrap();
        let run = |sequence| NewRun {
            configuration_id: config,
            round: sequence as u32,
            sequence,
            imported: Some(Default::default()),
            ..NewRun::default()
        };
        let failed: anyhow::Result<()> = store.all_or_nothing(|s| {
            s.insert_run(campaign, &run(0))?;
            s.insert_run(campaign, &run(1))?;
            anyhow::bail!("the second file is damaged")
        });
        assert!(failed.is_err());
        assert!(store.runs(campaign).unwrap().is_empty());
        store
            .all_or_nothing(|s| {
                s.insert_run(campaign, &run(0))?;
                s.insert_run(campaign, &run(1))
            })
            .unwrap();
        assert_eq!(store.runs(campaign).unwrap().len(), 2);
        // A run stored alone is still its own transaction.
        store.insert_run(campaign, &run(2)).unwrap();
        assert_eq!(store.runs(campaign).unwrap().len(), 3);
    }

    /// The report's account of the kernel's retransmissions: those of the omitted warm-up are
    /// summed over finished runs from the stored totals (stream -1), never the streams' rows.
    #[test]
    fn omitted_retransmits_sum_the_warm_up_totals_of_finished_runs() {
        use crate::traffic::result::{Interval, StreamInterval};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("x.db")).unwrap();
        let campaign = store.create_import_campaign("t").unwrap();
        let config = store.configuration_for(campaign, &[]).unwrap();
        let interval = |index, omitted, retransmits| {
            let row = StreamInterval {
                retransmits: Some(retransmits),
                ..StreamInterval::default()
            };
            Interval {
                index,
                start_s: f64::from(index),
                end_s: f64::from(index + 1),
                omitted,
                total: row.clone(),
                streams: vec![row.clone(), StreamInterval { stream: 1, ..row }],
                latency: None,
            }
        };
        let run = |sequence, error: Option<&str>| {
            let spec = crate::traffic::spec::TestSpec::tcp(std::time::Duration::from_secs(2));
            let mut result = crate::traffic::result::unmeasured(&spec);
            result.intervals = vec![interval(0, true, 513), interval(1, false, 5)];
            NewRun {
                configuration_id: config,
                round: sequence as u32 + 1,
                sequence,
                result: Some(result),
                error: error.map(String::from),
                ..NewRun::default()
            }
        };
        store.insert_run(campaign, &run(0, None)).unwrap();
        store.insert_run(campaign, &run(1, None)).unwrap();
        store
            .insert_run(campaign, &run(2, Some("refused")))
            .unwrap();
        assert_eq!(store.omitted_retransmits(campaign).unwrap(), 1026);
        let other = store.create_import_campaign("u").unwrap();
        assert_eq!(store.omitted_retransmits(other).unwrap(), 0);
    }
}
