//! The IP header's fields as iperf3's command line gives them: the type-of-service byte
//! (`-S`, `--dscp`) and the IPv6 flow label (`-L`).

/// A type-of-service byte as iperf3's `-S` takes it: 0-255, in decimal, `0x` hex or `0` octal
/// (C's `strtol` with base 0).
pub fn parse_tos(text: &str) -> Result<u8, String> {
    let v = parse_c_integer(text)?;
    u8::try_from(v).map_err(|_| "out of range: the TOS byte is 0 to 255".to_string())
}

/// An IPv6 flow label as iperf3's `-L` reads it: 1 to 0xfffff (20 bits), decimal, 0x hex or
/// 0 octal.
pub fn parse_flowlabel(text: &str) -> Result<u32, String> {
    match parse_c_integer(text)? {
        v @ 1..=0xf_ffff => Ok(v),
        _ => Err("out of range: a flow label is 1 to 1048575 (0xfffff)".to_string()),
    }
}

/// A number as C's `strtol(text, _, 0)` reads it: decimal, 0x hex or 0 octal.
fn parse_c_integer(text: &str) -> Result<u32, String> {
    let t = text.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else if t.len() > 1 && t.starts_with('0') {
        u32::from_str_radix(&t[1..], 8)
    } else {
        t.parse::<u32>()
    }
    .map_err(|_| "not a number (decimal, 0x hex or 0 octal)".to_string())
}

/// Per-hop behaviours by name, as iperf3's `--dscp` knows them (RFC 2474, 2597, 3246, 5865),
/// with their TOS byte (the DSCP shifted past the two ECN bits).
const DSCP_NAMES: &[(&str, u8)] = &[
    ("af11", 0x28),
    ("af12", 0x30),
    ("af13", 0x38),
    ("af21", 0x48),
    ("af22", 0x50),
    ("af23", 0x58),
    ("af31", 0x68),
    ("af32", 0x70),
    ("af33", 0x78),
    ("af41", 0x88),
    ("af42", 0x90),
    ("af43", 0x98),
    ("cs0", 0x00),
    ("cs1", 0x20),
    ("cs2", 0x40),
    ("cs3", 0x60),
    ("cs4", 0x80),
    ("cs5", 0xa0),
    ("cs6", 0xc0),
    ("cs7", 0xe0),
    ("ef", 0xb8),
    ("va", 0xb0),
];

/// The TOS byte of a DSCP given as iperf3's `--dscp` takes it: a name, or a number 0-63.
pub fn parse_dscp(text: &str) -> Result<u8, String> {
    let t = text.trim();
    if let Some((_, tos)) = DSCP_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(t)) {
        return Ok(*tos);
    }
    let v = parse_tos(t).map_err(|_| {
        "not a DSCP: a number 0-63 or a name (ef, va, af11-af43, cs0-cs7)".to_string()
    })?;
    if v > 63 {
        return Err(format!("{v} is out of range: a DSCP is 0 to 63"));
    }
    Ok(v << 2)
}
