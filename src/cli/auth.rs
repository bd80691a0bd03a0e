//! iperf3's authentication options of `netsweep client` and `netsweep server`, and their
//! conversion into `traffic::iperf3::login`'s configurations (keys read, password found).

use crate::traffic::iperf3::auth::Padding;
use crate::traffic::iperf3::login::{self, ClientAuth, DEFAULT_SKEW_THRESHOLD_S, ServerAuth};
use clap::Args;
use std::path::PathBuf;

/// The client's side: who logs in, and the server's public key.
#[derive(Debug, Args, Clone, Default)]
pub struct ClientAuthArgs {
    /// iperf3 authentication: the user name; the password comes from IPERF3_PASSWORD, else
    /// a prompt (needs --rsa-public-key-path; speaks iperf3's protocol).
    #[arg(long, value_name = "USER", requires = "rsa_public_key_path")]
    pub username: Option<String>,
    /// The iperf3 server's RSA public key (PEM, `openssl rsa -in private.pem -outform PEM
    /// -pubout`) that encrypts the credentials.
    #[arg(long, value_name = "FILE", requires = "username")]
    pub rsa_public_key_path: Option<PathBuf>,
    /// Encrypt the credentials with PKCS#1 v1.5 padding instead of OAEP: for iperf3 servers
    /// before 3.17, or started with --use-pkcs1-padding (iperf3's own client has no such
    /// option from 3.17 on: it always sends OAEP).
    #[arg(long)]
    pub use_pkcs1_padding: bool,
}

impl ClientAuthArgs {
    /// The credentials to send, or `None` without `--username`. The password is looked for
    /// only then.
    pub fn load(&self) -> anyhow::Result<Option<ClientAuth>> {
        let (Some(user), Some(key)) = (&self.username, &self.rsa_public_key_path) else {
            if self.use_pkcs1_padding {
                anyhow::bail!("--use-pkcs1-padding needs --username and --rsa-public-key-path");
            }
            return Ok(None);
        };
        let password = login::password()?;
        ClientAuth::load(user, key, padding(self.use_pkcs1_padding), &password).map(Some)
    }
}

/// The server's side: its private key and who may run tests.
#[derive(Debug, Args, Clone, Default)]
pub struct ServerAuthArgs {
    /// iperf3 authentication: the RSA private key (PEM, PKCS#8 or PKCS#1, unencrypted) that
    /// decrypts iperf3 clients' credentials (needs --authorized-users-path). netsweep's own
    /// clients are then refused: they log in with `--iperf3 --username`.
    #[arg(long, value_name = "FILE", requires = "authorized_users_path")]
    pub rsa_private_key_path: Option<PathBuf>,
    /// Who may run tests: lines `user,sha256hex` where the hash is of `{user}password`
    /// (printf '%s' '{alice}secret' | sha256sum); `#` starts a comment. Read at every login.
    #[arg(long, value_name = "FILE", requires = "rsa_private_key_path")]
    pub authorized_users_path: Option<PathBuf>,
    /// Most seconds between the client's clock and this server's at a login (default 10).
    #[arg(long, value_name = "SECONDS", requires = "rsa_private_key_path")]
    pub time_skew_threshold: Option<u64>,
    /// Also take credentials in PKCS#1 v1.5 padding, as iperf3 clients before 3.17 send them
    /// (less safe; OAEP, what later clients send, is still taken).
    #[arg(long, requires = "rsa_private_key_path")]
    pub use_pkcs1_padding: bool,
}

impl ServerAuthArgs {
    /// The server's authentication, or `None` when not asked for.
    pub fn load(&self) -> anyhow::Result<Option<ServerAuth>> {
        let (Some(key), Some(users)) = (&self.rsa_private_key_path, &self.authorized_users_path)
        else {
            return Ok(None);
        };
        let skew = self.time_skew_threshold.unwrap_or(DEFAULT_SKEW_THRESHOLD_S);
        if skew == 0 {
            anyhow::bail!("--time-skew-threshold must be at least 1 second");
        }
        ServerAuth::load(key, users, skew, padding(self.use_pkcs1_padding)).map(Some)
    }
}

fn padding(pkcs1: bool) -> Padding {
    if pkcs1 { Padding::Pkcs1 } else { Padding::Oaep }
}
