//! The results database's schema as ordered migrations: applying the first N gives schema
//! version N (`PRAGMA user_version`). Never edit a released migration; add a new one and keep a
//! fixture database of the old version in `tests/fixtures/`.

/// Ordered migrations; index + 1 is the schema version they produce.
pub(super) const MIGRATIONS: [&str; 8] = [
    // Version 1: campaigns, configurations, runs, intervals.
    "CREATE TABLE campaign (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        plan_path TEXT,
        plan_toml TEXT NOT NULL,
        plan_hash TEXT NOT NULL,
        target TEXT NOT NULL,
        run_order TEXT NOT NULL,
        seed INTEGER NOT NULL,
        repetitions INTEGER NOT NULL,
        created_unix REAL NOT NULL,
        finished_unix REAL,
        host_facts_json TEXT
     );
     CREATE TABLE configuration (
        id INTEGER PRIMARY KEY,
        campaign_id INTEGER NOT NULL REFERENCES campaign(id),
        position INTEGER NOT NULL,
        label TEXT NOT NULL,
        dims_json TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        UNIQUE (campaign_id, position)
     );
     CREATE TABLE run (
        id INTEGER PRIMARY KEY,
        campaign_id INTEGER NOT NULL REFERENCES campaign(id),
        configuration_id INTEGER NOT NULL REFERENCES configuration(id),
        round INTEGER NOT NULL,
        sequence INTEGER NOT NULL,
        started_unix REAL NOT NULL,
        finished_unix REAL NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        error TEXT,
        bits_per_second REAL,
        retransmits INTEGER,
        lost_percent REAL,
        jitter_ms REAL,
        cpu_local_percent REAL,
        cpu_remote_percent REAL,
        result_json TEXT,
        counters_json TEXT,
        UNIQUE (campaign_id, configuration_id, round)
     );
     CREATE INDEX run_by_campaign ON run (campaign_id, sequence);
     CREATE TABLE interval (
        run_id INTEGER NOT NULL REFERENCES run(id),
        stream INTEGER NOT NULL,
        idx INTEGER NOT NULL,
        start_s REAL NOT NULL,
        end_s REAL NOT NULL,
        omitted INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        bits_per_second REAL NOT NULL,
        retransmits INTEGER,
        rtt_us INTEGER,
        cwnd_bytes INTEGER,
        lost_packets INTEGER,
        jitter_ms REAL,
        PRIMARY KEY (run_id, stream, idx)
     );",
    // Version 2: per-run tuning values and per-campaign diagnostics (for `tune` and `doctor`).
    "ALTER TABLE run ADD COLUMN tuning_json TEXT;
     ALTER TABLE campaign ADD COLUMN doctor_json TEXT;",
    // Version 3: latency under load (`latency = true` in a plan's [test] or matrix).
    "ALTER TABLE run ADD COLUMN latency_idle_p50_ms REAL;
     ALTER TABLE run ADD COLUMN latency_loaded_p50_ms REAL;
     ALTER TABLE run ADD COLUMN latency_loaded_p99_ms REAL;
     ALTER TABLE run ADD COLUMN latency_added_ms REAL;",
    // Version 4: configurations skipped for failing the same way round after round, kept so
    // `--resume` can retry them after a fix.
    "CREATE TABLE skipped (
        campaign_id INTEGER NOT NULL REFERENCES campaign(id),
        configuration_id INTEGER NOT NULL REFERENCES configuration(id),
        reason TEXT NOT NULL,
        skipped_unix REAL NOT NULL,
        PRIMARY KEY (campaign_id, configuration_id)
     );",
    // Version 5: each configuration resolved once (`plan::Configuration`: dimensions, label,
    // test, lab path, libvirt NIC model, profile), read back by the runner and `explain`.
    "ALTER TABLE configuration ADD COLUMN resolved_json TEXT;",
    // Version 6: what the read commands need of the plan (`plan::PlanFacts`: the answer's
    // judging, the link rate, a guest host, the profiles' keys), so they never parse it again.
    "ALTER TABLE campaign ADD COLUMN plan_facts_json TEXT;",
    // Version 7: RFC 6349's metrics of each TCP run (`analysis::rfc6349`), as campaign metrics.
    "ALTER TABLE run ADD COLUMN rfc6349_transfer_time_ratio REAL;
     ALTER TABLE run ADD COLUMN rfc6349_tcp_efficiency_percent REAL;
     ALTER TABLE run ADD COLUMN rfc6349_buffer_delay_percent REAL;",
    // Version 8: request/response runs' transactions per second and 99th-percentile
    // transaction latency (`test = "rr"`/`"crr"`, `traffic::rr`), as campaign metrics.
    "ALTER TABLE run ADD COLUMN rr_transactions_per_second REAL;
     ALTER TABLE run ADD COLUMN rr_latency_p99_us REAL;",
];
