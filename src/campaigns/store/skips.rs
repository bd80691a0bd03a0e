//! Configurations a campaign skipped because their runs failed the same way in consecutive
//! rounds (`runner::failfast`): stored so a `--resume` after a fix knows to retry them, and so
//! the summary can say why their runs are missing.

use super::Store;
use crate::platform::clock::now_unix;
use rusqlite::params;

impl Store {
    /// Records that `configuration` of `campaign` is skipped for the rest of it, and why.
    pub fn skip_configuration(
        &mut self,
        campaign: i64,
        configuration: i64,
        reason: &str,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO skipped (campaign_id, configuration_id, reason, skipped_unix)
             VALUES (?1, ?2, ?3, ?4)",
            params![campaign, configuration, reason, now_unix()],
        )?;
        Ok(())
    }

    /// The skipped configurations of a campaign: (configuration id, reason), in skip order.
    pub fn skipped(&self, campaign: i64) -> anyhow::Result<Vec<(i64, String)>> {
        let mut st = self.conn.prepare(
            "SELECT configuration_id, reason FROM skipped WHERE campaign_id = ?1
             ORDER BY skipped_unix, configuration_id",
        )?;
        let rows = st.query_map(params![campaign], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Forgets a campaign's skips (a resume retries those configurations).
    pub fn clear_skips(&mut self, campaign: i64) -> anyhow::Result<()> {
        self.conn.execute(
            "DELETE FROM skipped WHERE campaign_id = ?1",
            params![campaign],
        )?;
        Ok(())
    }
}
