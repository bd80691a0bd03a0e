//! iperf3's error codes (`iperf_api.h`) a netsweep server sends or a client meets often, and
//! their words.

pub const DURATION: i32 = 5;
pub const NUM_STREAMS: i32 = 6;
pub const BLOCK_SIZE: i32 = 7;
pub const BUF_SIZE: i32 = 8;
pub const MSS: i32 = 10;
pub const OMIT: i32 = 12;
pub const UNIMPLEMENTED: i32 = 13;
pub const UDP_BLOCK_SIZE: i32 = 20;
pub const BAD_TOS: i32 = 21;
pub const TOTAL_RATE: i32 = 27;
pub const MAX_SERVER_DURATION: i32 = 37;
pub const RECV_PARAMS: i32 = 114;
pub const RECV_RESULTS: i32 = 117;
pub const CLIENT_TERM: i32 = 119;
pub const SERVER_TERM: i32 = 120;
pub const ACCESS_DENIED: i32 = 121;
pub const SET_TOS: i32 = 125;
pub const SET_COS: i32 = 126;
pub const SET_FLOW: i32 = 127;
pub const AFFINITY: i32 = 132;
pub const SET_CONGESTION: i32 = 134;
pub const SET_PACING: i32 = 140;
pub const SET_DONT_FRAGMENT: i32 = 145;
pub const AUTH_TEST: i32 = 142;
pub const NO_MSG: i32 = 144;
pub const SERVER_DURATION_EXPIRED: i32 = 160;
pub const STREAM_ACCEPT: i32 = 204;
pub const STREAM_WRITE: i32 = 205;
pub const STREAM_READ: i32 = 206;
pub const STREAM_ID: i32 = 208;

/// An iperf3 error code in words (iperf_error.c's wording for the ones users meet).
pub fn error_text(code: i32) -> String {
    let known = match code {
        DURATION => "test duration too long (iperf3 allows at most 86400 s)",
        NUM_STREAMS => "too many parallel streams (iperf3 allows at most 128)",
        BLOCK_SIZE => "block size too large (TCP: at most 1 MiB)",
        BUF_SIZE => "socket buffer size too large (at most 512 MiB)",
        MSS => "MSS too large (at most 32767)",
        OMIT => "bogus --omit value",
        UNIMPLEMENTED => "not implemented by that server",
        UDP_BLOCK_SIZE => "UDP block size invalid",
        BAD_TOS => "bad TOS value (0 to 255)",
        TOTAL_RATE => {
            "the total requested bitrate is above the server's limit (--server-bitrate-limit)"
        }
        MAX_SERVER_DURATION => {
            "the test is longer than the server allows (iperf3 -s --server-max-duration; \
             netsweep server --max-duration or --max-intervals)"
        }
        RECV_PARAMS => "the server could not read the parameters",
        RECV_RESULTS => "the server could not read the results",
        CLIENT_TERM => "the client has terminated",
        120 => "the server has terminated",
        ACCESS_DENIED => "the server is busy running a test",
        124 | 130 | 141 => "the server could not set the socket buffer size",
        SET_TOS => "the server could not set the IP TOS (-S/--dscp)",
        SET_COS => "the server could not set the IPv6 traffic class (-S/--dscp)",
        SET_FLOW => "unable to set the IPv6 flow label (-L: 1 to 0xfffff)",
        AFFINITY => "the server could not set CPU affinity (-A)",
        SET_CONGESTION => "the server could not set that congestion control algorithm",
        SET_PACING => "the server could not set the socket pacing rate (--fq-rate)",
        SET_DONT_FRAGMENT => "the server could not set Don't Fragment (--dont-fragment)",
        AUTH_TEST => {
            "authentication failed: the server requires credentials (--username and \
             --rsa-public-key-path, the password in IPERF3_PASSWORD) or refused the ones sent"
        }
        NO_MSG => "idle timeout for receiving data (the far end's --rcv-timeout)",
        SERVER_DURATION_EXPIRED => "the server's maximum test duration expired",
        STREAM_WRITE => "the server was unable to write to a stream socket",
        STREAM_READ => "the server was unable to read from a stream socket",
        200..=208 => "a data stream failed on the server",
        _ => "",
    };
    if known.is_empty() {
        format!("iperf3 error code {code}")
    } else {
        format!("{known} (iperf3 error {code})")
    }
}
