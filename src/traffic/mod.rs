//! The traffic engine and its protocols: the test's description (`spec`, `timeline`), the
//! engine's stream loops (`engine`), what each end measures (`measure`) and the merged result
//! (`result`), where each end pins its data threads (`affinity`), netsweep's control protocol
//! (`protocol`, `session`, `server`, `client`), what a server lets clients hold and for how
//! long (`admission`) and how fast (`bitrate_limit`), the listener's buffers leased to tests in
//! setup (`listener`), what ends a test whose peer vanished (`liveness`: `--cntl-ka`,
//! `--snd-timeout`), iperf3's (`iperf3`), the latency probe beside a test (`latency`),
//! iperf3-style text output (`output`), request/response tests beside the throughput engine
//! (`rr`), and one finished test read back from its result file as a timeline to draw
//! (`over_time`).

pub mod address;
pub mod admission;
pub mod affinity;
pub mod bitrate_limit;
pub mod client;
pub mod engine;
pub mod histogram;
pub mod iperf3;
pub mod latency;
pub mod listener;
pub mod liveness;
pub mod measure;
pub mod output;
pub mod over_time;
pub mod protocol;
pub mod result;
pub mod rr;
pub mod server;
pub mod session;
pub mod spec;
pub mod steady;
pub mod timeline;
