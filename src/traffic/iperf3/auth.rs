//! iperf3's authentication, as esnet/iperf's `iperf_auth.c` does it (3.5 to 3.21): pure
//! functions over fixed keys and times; files, clocks and terminals are `login`'s.
//!
//! The client writes its credentials as the text `user: %s\npwd:  %s\nts:   %ld` (the time in
//! Unix seconds), encrypts it with the server's RSA public key and sends the base64 of the block
//! (one line) as `authtoken` in the parameters. The padding is OAEP (SHA-1, as OpenSSL's
//! default) from 3.17 on, PKCS#1 v1.5 before and with `--use-pkcs1-padding`; both ends must
//! agree. The server decrypts, reads the text back as `sscanf` does (so names and passwords are
//! single words), refuses a time more than `--time-skew-threshold` seconds (10 by default) from
//! its own clock, then looks the user up in the authorized-users file: lines `user,hash` where
//! the hash is the lowercase hex SHA-256 of `{user}password`; blank lines, lines without a comma
//! and lines starting with `#` are skipped.
//!
//! Main items: `Credentials`, `encode_token`/`decode_token`, `password_hash`, `parse_users`,
//! `verify`, and the PEM key readers. Called by `login` (both roles), which `client` and
//! `server` use.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use rsa::pkcs1::{DecodeRsaPrivateKey, DecodeRsaPublicKey};
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use rsa::{Oaep, Pkcs1v15Encrypt, RsaPrivateKey, RsaPublicKey};
use sha2::Digest;

/// The RSA padding of the token; both ends must use the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Padding {
    /// OAEP with SHA-1 and MGF1-SHA-1, iperf3's default since 3.17.
    #[default]
    Oaep,
    /// PKCS#1 v1.5, the only padding of iperf3 before 3.17 (`--use-pkcs1-padding`).
    Pkcs1,
}

impl Padding {
    /// Its name in messages.
    pub fn words(self) -> &'static str {
        match self {
            Padding::Oaep => "OAEP padding",
            Padding::Pkcs1 => "PKCS#1 v1.5 padding (--use-pkcs1-padding)",
        }
    }
}

/// What the client proves: who, with which password, at which time (Unix seconds).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
    pub ts: i64,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .field("ts", &self.ts)
            .finish()
    }
}

/// Why a token could not be made or read, or a key not used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AuthError {
    #[error(
        "the {what} is empty or holds a space, tab or newline: iperf3 servers read the \
         credentials word by word, so it could never match"
    )]
    NotOneWord { what: &'static str },
    #[error("the user name holds a comma, which the authorized-users file uses between fields")]
    CommaInUser,
    #[error(
        "the credentials are {len} bytes, more than the {max} a {bits}-bit RSA key can carry \
         with {padding}: use a shorter name or password, or a larger key"
    )]
    TooLong {
        len: usize,
        max: usize,
        bits: usize,
        padding: &'static str,
    },
    #[error("RSA encryption failed: {0}")]
    Encrypt(String),
    #[error("the token is not base64")]
    NotBase64,
    #[error(
        "the token could not be decrypted with this private key and {0}: the client used \
         another public key or the other padding"
    )]
    Decrypt(&'static str),
    #[error("the decrypted token is not iperf3's credentials text")]
    NotCredentials,
    #[error(
        "not an RSA public key in PEM (expected -----BEGIN PUBLIC KEY-----, as `openssl rsa \
         -in private.pem -outform PEM -pubout` writes it): {0}"
    )]
    PublicKey(String),
    #[error(
        "not an unencrypted RSA private key in PEM (expected -----BEGIN PRIVATE KEY----- or \
         -----BEGIN RSA PRIVATE KEY-----): {0}"
    )]
    PrivateKey(String),
}

/// Why a server refuses credentials it could read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginRefused {
    #[error(
        "user {user:?}: the client's clock is {skew_s} s from this server's, more than the \
         --time-skew-threshold of {threshold_s} s"
    )]
    Skew {
        user: String,
        skew_s: i64,
        threshold_s: u64,
    },
    #[error("unknown user {0:?} (not in the authorized-users file)")]
    UnknownUser(String),
    #[error("wrong password for user {0:?}")]
    WrongPassword(String),
    #[error(
        "user {0:?} gave the right password, but it holds white space, which iperf3 servers \
         cannot read from the credentials (they refuse it): refused as they would; choose a \
         password without spaces"
    )]
    SpacedPassword(String),
}

/// The text iperf3 encrypts: `user: %s\npwd:  %s\nts:   %ld`.
pub fn credentials_text(c: &Credentials) -> String {
    format!("user: {}\npwd:  {}\nts:   {}", c.user, c.password, c.ts)
}

/// Reads the credentials text as iperf3's `sscanf(text, "user: %s\npwd:  %s\nts:   %ld")`
/// does: literals in order, any run of white space where the format has some, words up to
/// white space, a signed decimal time; anything after it ignored.
pub fn parse_credentials(text: &str) -> Option<Credentials> {
    let mut rest = text;
    let literal = |rest: &mut &str, lit: &str| -> Option<()> {
        *rest = rest.trim_start().strip_prefix(lit)?;
        Some(())
    };
    let word = |rest: &mut &str| -> Option<String> {
        let t = rest.trim_start();
        let end = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
        if end == 0 {
            return None;
        }
        *rest = &t[end..];
        Some(t[..end].to_string())
    };
    literal(&mut rest, "user:")?;
    let user = word(&mut rest)?;
    literal(&mut rest, "pwd:")?;
    let password = word(&mut rest)?;
    literal(&mut rest, "ts:")?;
    let t = rest.trim_start();
    let sign = usize::from(t.starts_with(['-', '+']));
    let digits = t[sign..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(t.len() - sign);
    let ts = t[..sign + digits].parse::<i64>().ok()?;
    Some(Credentials { user, password, ts })
}

/// Whether `user` and `password` survive the trip: one word each (see `parse_credentials`),
/// and no comma in the user (the users file splits on it).
pub fn check_words(user: &str, password: &str) -> Result<(), AuthError> {
    let one_word = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_ascii_whitespace());
    if !one_word(user) {
        return Err(AuthError::NotOneWord { what: "user name" });
    }
    if !one_word(password) {
        return Err(AuthError::NotOneWord { what: "password" });
    }
    if user.contains(',') {
        return Err(AuthError::CommaInUser);
    }
    Ok(())
}

/// Most plaintext bytes one RSA block of `key_bytes` carries with `padding`.
fn max_plaintext(key_bytes: usize, padding: Padding) -> usize {
    match padding {
        // Two SHA-1 digests and two bytes.
        Padding::Oaep => key_bytes.saturating_sub(2 * 20 + 2),
        Padding::Pkcs1 => key_bytes.saturating_sub(11),
    }
}

/// The `authtoken` for `c`: the base64 (standard alphabet, padded, one line) of the RSA block.
pub fn encode_token<R: rsa::rand_core::CryptoRngCore>(
    c: &Credentials,
    key: &RsaPublicKey,
    padding: Padding,
    rng: &mut R,
) -> Result<String, AuthError> {
    check_words(&c.user, &c.password)?;
    let text = credentials_text(c);
    let max = max_plaintext(key.size(), padding);
    if text.len() > max {
        return Err(AuthError::TooLong {
            len: text.len(),
            max,
            bits: key.size() * 8,
            padding: padding.words(),
        });
    }
    let block = match padding {
        Padding::Oaep => key.encrypt(rng, Oaep::new::<sha1::Sha1>(), text.as_bytes()),
        Padding::Pkcs1 => key.encrypt(rng, Pkcs1v15Encrypt, text.as_bytes()),
    }
    .map_err(|e| AuthError::Encrypt(e.to_string()))?;
    Ok(BASE64.encode(block))
}

/// The credentials in a client's `authtoken`. `rng` blinds the private-key operation, so its
/// time does not follow the key (the `rsa` crate's unblinded path leaks more).
pub fn decode_token<R: rsa::rand_core::CryptoRngCore>(
    token: &str,
    key: &RsaPrivateKey,
    padding: Padding,
    rng: &mut R,
) -> Result<Credentials, AuthError> {
    let block = BASE64
        .decode(token.trim().as_bytes())
        .map_err(|_| AuthError::NotBase64)?;
    let text = match padding {
        Padding::Oaep => key.decrypt_blinded(rng, Oaep::new::<sha1::Sha1>(), &block),
        Padding::Pkcs1 => key.decrypt_blinded(rng, Pkcs1v15Encrypt, &block),
    }
    .map_err(|_| AuthError::Decrypt(padding.words()))?;
    let text = String::from_utf8(text).map_err(|_| AuthError::NotCredentials)?;
    parse_credentials_exact(&text)
        .or_else(|| parse_credentials(&text))
        .ok_or(AuthError::NotCredentials)
}

/// The credentials text exactly as iperf3's clients write it (`credentials_text`), words with
/// white space kept whole: a password "very incorrect" is read as such, so the server can
/// say what is true of it (iperf3's own `sscanf` reads no such text, and refuses it).
fn parse_credentials_exact(text: &str) -> Option<Credentials> {
    let rest = text.strip_prefix("user: ")?;
    let (user, rest) = rest.split_once("\npwd:  ")?;
    let (password, ts) = rest.rsplit_once("\nts:   ")?;
    Some(Credentials {
        user: user.to_string(),
        password: password.to_string(),
        ts: ts.trim_end_matches('\0').trim().parse().ok()?,
    })
}

/// The authorized-users file's hash of a password: lowercase hex SHA-256 of `{user}password`.
pub fn password_hash(user: &str, password: &str) -> String {
    let digest = sha2::Sha256::digest(format!("{{{user}}}{password}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// One line of the authorized-users file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserEntry {
    pub user: String,
    pub hash: String,
}

/// The entries of an authorized-users file, as iperf3 reads it: each line up to its first CR or
/// LF; empty lines, lines without a comma and lines starting with `#` skipped; the user is the
/// first comma-separated field and the hash the second (empty fields skipped, as `strtok`
/// does); a line with a single field holds no entry.
pub fn parse_users(text: &str) -> Vec<UserEntry> {
    text.split('\n')
        .map(|line| line.split('\r').next().unwrap_or_default())
        .filter(|line| !line.is_empty() && line.contains(',') && !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split(',').filter(|f| !f.is_empty());
            Some(UserEntry {
                user: fields.next()?.to_string(),
                hash: fields.next()?.to_string(),
            })
        })
        .collect()
}

/// Whether `c` may run a test at `now` (Unix seconds): the time first (iperf3's order), then
/// the user and the hash of the password. A time `threshold_s` away still passes.
pub fn verify(
    c: &Credentials,
    users: &[UserEntry],
    now: i64,
    threshold_s: u64,
) -> Result<(), LoginRefused> {
    let skew_s = now.saturating_sub(c.ts);
    if skew_s.unsigned_abs() > threshold_s {
        return Err(LoginRefused::Skew {
            user: c.user.clone(),
            skew_s,
            threshold_s,
        });
    }
    let hash = password_hash(&c.user, &c.password);
    let mut known = false;
    for e in users.iter().filter(|e| e.user == c.user) {
        known = true;
        if same_text(&e.hash.to_ascii_lowercase(), &hash) {
            if c.password.chars().any(|ch| ch.is_ascii_whitespace()) {
                return Err(LoginRefused::SpacedPassword(c.user.clone()));
            }
            return Ok(());
        }
    }
    Err(if known {
        LoginRefused::WrongPassword(c.user.clone())
    } else {
        LoginRefused::UnknownUser(c.user.clone())
    })
}

/// Equality in a time that does not depend on where two equally long texts differ.
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// An RSA public key from PEM: SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`, what iperf3 reads), or
/// PKCS#1 (`BEGIN RSA PUBLIC KEY`).
pub fn public_key_from_pem(pem: &str) -> Result<RsaPublicKey, AuthError> {
    let pem = pem.trim();
    if pem.contains("BEGIN RSA PUBLIC KEY") {
        RsaPublicKey::from_pkcs1_pem(pem).map_err(|e| AuthError::PublicKey(e.to_string()))
    } else if pem.contains("PRIVATE KEY") {
        Err(AuthError::PublicKey(
            "this is a private key: give the server's public key (keep the private one on the \
             server)"
                .into(),
        ))
    } else {
        RsaPublicKey::from_public_key_pem(pem).map_err(|e| AuthError::PublicKey(e.to_string()))
    }
}

/// An RSA private key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`) or PKCS#1 (`BEGIN RSA PRIVATE
/// KEY`). Keys encrypted with a passphrase are refused (iperf3 cannot prompt for one either).
pub fn private_key_from_pem(pem: &str) -> Result<RsaPrivateKey, AuthError> {
    let pem = pem.trim();
    if pem.contains("ENCRYPTED") {
        return Err(AuthError::PrivateKey(
            "it is encrypted with a passphrase: write an unencrypted copy with `openssl rsa -in \
             KEY -out KEY.plain` and keep it readable by the server only"
                .into(),
        ));
    }
    if pem.contains("BEGIN RSA PRIVATE KEY") {
        RsaPrivateKey::from_pkcs1_pem(pem).map_err(|e| AuthError::PrivateKey(e.to_string()))
    } else {
        RsaPrivateKey::from_pkcs8_pem(pem).map_err(|e| AuthError::PrivateKey(e.to_string()))
    }
}

#[cfg(test)]
mod tests;
