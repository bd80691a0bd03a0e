//! iperf3's authentication options of `netsweep client` and `netsweep server`, and their
//! conversion into `traffic::iperf3::login`'s configurations (keys read, password found).

use crate::traffic::iperf3::auth::Padding;
use crate::traffic::iperf3::installed;
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
    /// before 3.17, or started with --use-pkcs1-padding (iperf3's option from 3.17 on).
    /// Without it, iperf3's command line (`netsweep -c`) pads as the iperf3 on the PATH.
    #[arg(long)]
    pub use_pkcs1_padding: bool,
}

impl ClientAuthArgs {
    /// The credentials to send, or `None` without `--username`. The password is looked for
    /// only then.
    /// With `iperf3_cli` (iperf3's command line, as pScheduler's iperf3 tool runs it) and no
    /// `--use-pkcs1-padding`, the padding is that of the iperf3 on the PATH (`installed`).
    pub fn load(&self, iperf3_cli: bool) -> anyhow::Result<Option<ClientAuth>> {
        let (Some(user), Some(key)) = (&self.username, &self.rsa_public_key_path) else {
            if self.use_pkcs1_padding {
                anyhow::bail!("--use-pkcs1-padding needs --username and --rsa-public-key-path");
            }
            return Ok(None);
        };
        let password = login::password()?;
        let padding = padding(self.use_pkcs1_padding, iperf3_cli);
        ClientAuth::load(user, key, padding, &password).map(Some)
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
    // `--authorized-user`: the prefix iperf3's own auth_test.sh writes (getopt_long takes
    // any unambiguous prefix).
    #[arg(
        long,
        value_name = "FILE",
        requires = "rsa_private_key_path",
        alias = "authorized-user"
    )]
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
    /// With `iperf3_cli` and no `--use-pkcs1-padding`, the paddings are those of the iperf3
    /// on the PATH (`installed`).
    pub fn load(&self, iperf3_cli: bool) -> anyhow::Result<Option<ServerAuth>> {
        let (Some(key), Some(users)) = (&self.rsa_private_key_path, &self.authorized_users_path)
        else {
            return Ok(None);
        };
        let skew = self.time_skew_threshold.unwrap_or(DEFAULT_SKEW_THRESHOLD_S);
        if skew == 0 {
            anyhow::bail!("--time-skew-threshold must be at least 1 second");
        }
        ServerAuth::load(
            key,
            users,
            skew,
            padding(self.use_pkcs1_padding, iperf3_cli),
        )
        .map(Some)
    }
}

/// `--use-pkcs1-padding` chooses PKCS#1; without it, iperf3's command line pads as the iperf3
/// this host announces to pScheduler would, netsweep's own with OAEP.
fn padding(pkcs1: bool, iperf3_cli: bool) -> Padding {
    if pkcs1 {
        Padding::Pkcs1
    } else if iperf3_cli {
        let version = installed::version_output().and_then(|o| installed::announced_version(&o));
        installed::default_padding(version)
    } else {
        Padding::Oaep
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command, ServerConfig, iperf3_argv};
    use clap::Parser;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/iperf3/auth/");

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        let argv = std::iter::once("netsweep")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        Cli::try_parse_from(iperf3_argv(argv))
    }

    #[test]
    fn iperf3s_server_options_make_the_servers_login() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.csv");
        std::fs::write(&users, "alice,0123\n").unwrap();
        let key = format!("{FIXTURES}private.pem");
        let cli = parse(&[
            "-s",
            "--rsa-private-key-path",
            &key,
            "--authorized-users-path",
            users.to_str().unwrap(),
            "--time-skew-threshold",
            "30",
            "--use-pkcs1-padding",
        ])
        .unwrap();
        let Command::Server(a) = cli.command else {
            panic!("not a server")
        };
        let auth = ServerConfig::try_from(&a).unwrap().auth.expect("a login");
        assert_eq!(auth.skew_threshold_s, 30);
        assert_eq!(auth.padding, super::Padding::Pkcs1);
        // Without the flags there is no login; half of them is refused by the parser.
        let Command::Server(a) = parse(&["-s"]).unwrap().command else {
            panic!("not a server")
        };
        assert!(ServerConfig::try_from(&a).unwrap().auth.is_none());
        assert!(parse(&["-s", "--rsa-private-key-path", &key]).is_err());
        assert!(parse(&["-s", "--time-skew-threshold", "5"]).is_err());
    }

    #[test]
    fn iperf3s_client_options_go_together() {
        let key = format!("{FIXTURES}public.pem");
        assert!(parse(&["-c", "127.0.0.1", "--username", "alice"]).is_err());
        assert!(parse(&["-c", "127.0.0.1", "--rsa-public-key-path", &key]).is_err());
        let Command::Client(a) = parse(&["-c", "127.0.0.1", "--use-pkcs1-padding"])
            .unwrap()
            .command
        else {
            panic!("not a client")
        };
        let e = a.auth.load(false).unwrap_err();
        assert!(e.to_string().contains("needs --username"), "{e}");
        let Command::Client(a) = parse(&[
            "-c",
            "127.0.0.1",
            "--username",
            "alice",
            "--rsa-public-key-path",
            &key,
        ])
        .unwrap()
        .command
        else {
            panic!("not a client")
        };
        assert_eq!(a.auth.username.as_deref(), Some("alice"));
    }
}
