//! iperf3 authentication in both roles, around `auth`'s pure functions: the client's
//! credentials (its password from `IPERF3_PASSWORD`, else a prompt on a terminal) and the
//! server's public key; the server's private key, read once at start, and its authorized-users
//! file, read again at every login as iperf3 does (so edits take effect without a restart).
//!
//! `ClientAuth` is made by the command line's conversion and used by `iperf3::client`;
//! `ServerAuth` by `netsweep server` and used by `iperf3::server` for every iperf3 client.

use super::auth::{self, AuthError, Credentials, LoginRefused, Padding};
use anyhow::Context;
use rsa::{RsaPrivateKey, RsaPublicKey};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The environment variable iperf3 clients take the password from.
pub const PASSWORD_ENV: &str = "IPERF3_PASSWORD";
/// iperf3's default `--time-skew-threshold`, in seconds.
pub const DEFAULT_SKEW_THRESHOLD_S: u64 = 10;
/// Why a server with authentication refuses netsweep's own protocol, which has no login.
pub const NETSWEEP_CLIENT_REFUSED: &str = "this server requires iperf3 authentication \
    (--authorized-users-path): log in with `netsweep client HOST --iperf3 --username USER \
    --rsa-public-key-path KEY` (the password in IPERF3_PASSWORD)";
/// Largest key or users file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Seconds since the Unix epoch by this host's clock (what iperf3 puts in `ts`).
pub fn unix_now() -> i64 {
    match SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

fn read_key_file(path: &Path, what: &str) -> anyhow::Result<String> {
    crate::inputs::read_regular(path, MAX_FILE_BYTES)
        .with_context(|| format!("{what} {}", path.display()))
}

/// A client's credentials and the server's public key.
#[derive(Clone)]
pub struct ClientAuth {
    pub user: String,
    password: String,
    key: RsaPublicKey,
    pub padding: Padding,
}

impl std::fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientAuth")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .field("padding", &self.padding)
            .finish()
    }
}

impl ClientAuth {
    /// Credentials for `user` with the server's public key in PEM; refused when they could
    /// never be read back by a server (see `auth::check_words`).
    pub fn new(
        user: &str,
        password: &str,
        public_key_pem: &str,
        padding: Padding,
    ) -> Result<ClientAuth, AuthError> {
        auth::check_words(user, password)?;
        Ok(ClientAuth {
            user: user.to_string(),
            password: password.to_string(),
            key: auth::public_key_from_pem(public_key_pem)?,
            padding,
        })
    }

    /// `--username` and `--rsa-public-key-path`, with the password `password()` finds.
    pub fn load(
        user: &str,
        key_path: &Path,
        padding: Padding,
        password: &str,
    ) -> anyhow::Result<ClientAuth> {
        let pem = read_key_file(key_path, "--rsa-public-key-path")?;
        ClientAuth::new(user, password, &pem, padding).map_err(|e| match e {
            AuthError::PublicKey(_) => {
                anyhow::anyhow!("--rsa-public-key-path {}: {e}", key_path.display())
            }
            e => anyhow::anyhow!("--username {user}: {e}"),
        })
    }

    /// The `authtoken` for a test starting now.
    pub fn token(&self) -> Result<String, AuthError> {
        let c = Credentials {
            user: self.user.clone(),
            password: self.password.clone(),
            ts: unix_now(),
        };
        auth::encode_token(&c, &self.key, self.padding, &mut rand::rngs::OsRng)
    }
}

/// The client's password: `IPERF3_PASSWORD`, else asked on the terminal (echo off); refused
/// when neither is there (a script without the variable must not hang on a prompt).
pub fn password() -> anyhow::Result<String> {
    if let Some(p) = std::env::var_os(PASSWORD_ENV) {
        return p
            .into_string()
            .map_err(|_| anyhow::anyhow!("{PASSWORD_ENV} is not valid UTF-8"));
    }
    match crate::platform::terminal::read_secret("Password: ") {
        Ok(Some(p)) => Ok(p),
        Ok(None) => anyhow::bail!(
            "--username needs a password: set {PASSWORD_ENV} (as for iperf3), or run on a \
             terminal to be asked for it"
        ),
        Err(e) => Err(anyhow::anyhow!(
            "cannot read the password from the terminal: {e}"
        )),
    }
}

/// A server's private key and where its authorized users are.
pub struct ServerAuth {
    key: RsaPrivateKey,
    pub users_path: PathBuf,
    pub skew_threshold_s: u64,
    pub padding: Padding,
}

impl std::fmt::Debug for ServerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAuth")
            .field("users_path", &self.users_path)
            .field("skew_threshold_s", &self.skew_threshold_s)
            .field("padding", &self.padding)
            .finish_non_exhaustive()
    }
}

/// Why a server refused a login, for its log (the client only learns iperf3's error 142).
#[derive(Debug, thiserror::Error)]
pub enum LoginFailure {
    #[error("the client sent no credentials (iperf3 --username and --rsa-public-key-path)")]
    NoToken,
    #[error("{0}{hint}", hint = padding_hint(.0, *.1))]
    Token(AuthError, Padding),
    #[error(
        "the client used PKCS#1 v1.5 padding (iperf3 clients before 3.17, or \
         --use-pkcs1-padding) and this server takes OAEP only: start it with \
         --use-pkcs1-padding, which takes both"
    )]
    Pkcs1ToOaep,
    #[error("{0}")]
    Refused(#[from] LoginRefused),
    #[error("the authorized-users file: {0}")]
    UsersFile(String),
}

fn padding_hint(e: &AuthError, padding: Padding) -> &'static str {
    match (e, padding) {
        (AuthError::Decrypt(_), Padding::Oaep) => {
            " (nor with PKCS#1 v1.5 padding: the client used another public key)"
        }
        (AuthError::Decrypt(_), Padding::Pkcs1) => {
            " (this server takes PKCS#1 and OAEP padding: the client used another key)"
        }
        _ => "",
    }
}

impl ServerAuth {
    /// `--rsa-private-key-path` and `--authorized-users-path`: the key is read now, the users
    /// file checked readable now and read at every login.
    pub fn load(
        key_path: &Path,
        users_path: &Path,
        skew_threshold_s: u64,
        padding: Padding,
    ) -> anyhow::Result<ServerAuth> {
        let pem = read_key_file(key_path, "--rsa-private-key-path")?;
        let key = auth::private_key_from_pem(&pem)
            .map_err(|e| anyhow::anyhow!("--rsa-private-key-path {}: {e}", key_path.display()))?;
        let users = crate::inputs::read_regular(users_path, MAX_FILE_BYTES)
            .with_context(|| format!("--authorized-users-path {}", users_path.display()))?;
        if auth::parse_users(&users).is_empty() {
            anyhow::bail!(
                "--authorized-users-path {}: no `user,sha256hex` line (the hash of a password: \
                 printf '%s' '{{USER}}PASSWORD' | sha256sum)",
                users_path.display()
            );
        }
        Ok(ServerAuth {
            key,
            users_path: users_path.to_path_buf(),
            skew_threshold_s,
            padding,
        })
    }

    /// Checks a client's `authtoken` at `now` (Unix seconds); the user's name when it passes.
    pub fn check(&self, token: Option<&str>, now: i64) -> Result<String, LoginFailure> {
        let token = token.ok_or(LoginFailure::NoToken)?;
        let c = match auth::decode_token(token, &self.key, self.padding, &mut rand::rngs::OsRng) {
            // With PKCS#1 allowed for old clients, newer ones' OAEP still logs in (iperf3's
            // server takes one padding only): a mixed fleet needs no second server.
            Err(AuthError::Decrypt(_) | AuthError::NotCredentials)
                if self.padding == Padding::Pkcs1 =>
            {
                auth::decode_token(token, &self.key, Padding::Oaep, &mut rand::rngs::OsRng)
            }
            // An OAEP-only server says whether the token was PKCS#1's (an older client), or
            // in neither padding (another key).
            Err(AuthError::Decrypt(p)) if self.padding == Padding::Oaep => {
                match auth::decode_token(token, &self.key, Padding::Pkcs1, &mut rand::rngs::OsRng) {
                    Ok(_) => return Err(LoginFailure::Pkcs1ToOaep),
                    Err(_) => Err(AuthError::Decrypt(p)),
                }
            }
            other => other,
        }
        .map_err(|e| LoginFailure::Token(e, self.padding))?;
        let text = crate::inputs::read_regular(&self.users_path, MAX_FILE_BYTES)
            .map_err(|e| LoginFailure::UsersFile(format!("{}: {e}", self.users_path.display())))?;
        auth::verify(&c, &auth::parse_users(&text), now, self.skew_threshold_s)?;
        Ok(c.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/iperf3/auth/");

    fn server(users: &str, padding: Padding) -> (ServerAuth, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.csv");
        std::fs::write(&path, users).unwrap();
        let key = Path::new(FIXTURES).join("private.pem");
        (ServerAuth::load(&key, &path, 10, padding).unwrap(), dir)
    }

    fn client(password: &str, padding: Padding) -> ClientAuth {
        let pem = std::fs::read_to_string(Path::new(FIXTURES).join("public.pem")).unwrap();
        ClientAuth::new("alice", password, &pem, padding).unwrap()
    }

    #[test]
    fn a_client_token_passes_the_server_check_in_both_paddings() {
        let users = format!("alice,{}\n", auth::password_hash("alice", "s3cret"));
        for padding in [Padding::Oaep, Padding::Pkcs1] {
            let (s, _dir) = server(&users, padding);
            let token = client("s3cret", padding).token().unwrap();
            assert_eq!(s.check(Some(&token), unix_now()).unwrap(), "alice");
            let wrong = client("guess", padding).token().unwrap();
            assert!(matches!(
                s.check(Some(&wrong), unix_now()),
                Err(LoginFailure::Refused(LoginRefused::WrongPassword(_)))
            ));
            // An hour later the same token is stale.
            assert!(matches!(
                s.check(Some(&token), unix_now() + 3600),
                Err(LoginFailure::Refused(LoginRefused::Skew { .. }))
            ));
        }
        let (s, _dir) = server(&users, Padding::Oaep);
        let old_client = client("s3cret", Padding::Pkcs1).token().unwrap();
        let e = s.check(Some(&old_client), unix_now()).unwrap_err();
        assert!(matches!(e, LoginFailure::Pkcs1ToOaep), "{e}");
        assert!(e.to_string().contains("the client used PKCS#1"), "{e}");
        assert!(!e.to_string().contains("could not be decrypted"), "{e}");
        // A server that takes PKCS#1 for old clients takes newer ones' OAEP too.
        let (mixed, _dir) = server(&users, Padding::Pkcs1);
        for padding in [Padding::Oaep, Padding::Pkcs1] {
            let token = client("s3cret", padding).token().unwrap();
            assert_eq!(mixed.check(Some(&token), unix_now()).unwrap(), "alice");
        }
        assert!(matches!(s.check(None, 0), Err(LoginFailure::NoToken)));
    }

    #[test]
    fn a_password_with_a_space_is_read_whole_and_judged_truly() {
        use rsa::Pkcs1v15Encrypt;
        use rsa::pkcs8::DecodePublicKey;
        use rsa::rand_core::OsRng;
        let pem = std::fs::read_to_string(Path::new(FIXTURES).join("public.pem")).unwrap();
        let key = rsa::RsaPublicKey::from_public_key_pem(&pem).unwrap();
        // What iperf3's client encrypts for IPERF3_PASSWORD="very incorrect".
        let token = |password: &str| {
            let text = format!("user: alice\npwd:  {password}\nts:   {}", unix_now());
            let block = key
                .encrypt(&mut OsRng, Pkcs1v15Encrypt, text.as_bytes())
                .unwrap();
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, block)
        };
        let users = format!("alice,{}\n", auth::password_hash("alice", "very correct"));
        let (s, _dir) = server(&users, Padding::Pkcs1);
        let wrong = s
            .check(Some(&token("very incorrect")), unix_now())
            .unwrap_err();
        assert!(
            matches!(wrong, LoginFailure::Refused(LoginRefused::WrongPassword(_))),
            "{wrong}"
        );
        // The right one is refused too, as iperf3's server refuses it, and says why.
        let right = s
            .check(Some(&token("very correct")), unix_now())
            .unwrap_err();
        assert!(
            matches!(
                right,
                LoginFailure::Refused(LoginRefused::SpacedPassword(_))
            ),
            "{right}"
        );
    }

    #[test]
    fn the_users_file_is_read_again_at_every_login() {
        let (s, dir) = server("bob,x\n", Padding::Oaep);
        let token = client("s3cret", Padding::Oaep).token().unwrap();
        assert!(matches!(
            s.check(Some(&token), unix_now()),
            Err(LoginFailure::Refused(LoginRefused::UnknownUser(_)))
        ));
        std::fs::write(
            dir.path().join("users.csv"),
            format!("alice,{}\n", auth::password_hash("alice", "s3cret")),
        )
        .unwrap();
        assert_eq!(s.check(Some(&token), unix_now()).unwrap(), "alice");
        std::fs::remove_file(dir.path().join("users.csv")).unwrap();
        assert!(matches!(
            s.check(Some(&token), unix_now()),
            Err(LoginFailure::UsersFile(_))
        ));
    }

    /// Regression: a users file replaced by a FIFO held a `--max-tests 1` server's only slot
    /// (a blocking open at every login), and key or users options on a FIFO blocked the start.
    #[test]
    fn a_fifo_for_a_file_is_refused_at_once_never_waited_on() {
        let fifo = |path: &Path| crate::platform::mkfifo(path).unwrap();
        let users = format!("alice,{}\n", auth::password_hash("alice", "s3cret"));
        let (s, dir) = server(&users, Padding::Oaep);
        let path = dir.path().join("users.csv");
        std::fs::remove_file(&path).unwrap();
        fifo(&path);
        let token = client("s3cret", Padding::Oaep).token().unwrap();
        let t0 = std::time::Instant::now();
        let e = s.check(Some(&token), unix_now()).unwrap_err();
        assert!(matches!(e, LoginFailure::UsersFile(_)), "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let key = Path::new(FIXTURES).join("private.pem");
        assert!(ServerAuth::load(&key, &path, 10, Padding::Oaep).is_err());
        let key_fifo = dir.path().join("key.pem");
        fifo(&key_fifo);
        let e = ServerAuth::load(&key_fifo, &path, 10, Padding::Oaep).unwrap_err();
        assert!(format!("{e:#}").contains("not a regular file"), "{e:#}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn bad_server_files_are_named_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let users = dir.path().join("users.csv");
        std::fs::write(&users, "# nobody yet\n").unwrap();
        let key = Path::new(FIXTURES).join("private.pem");
        let e = ServerAuth::load(&key, &users, 10, Padding::Oaep).unwrap_err();
        assert!(
            format!("{e:#}").contains("no `user,sha256hex` line"),
            "{e:#}"
        );
        let e = ServerAuth::load(&key, &dir.path().join("missing"), 10, Padding::Oaep).unwrap_err();
        assert!(
            format!("{e:#}").contains("--authorized-users-path"),
            "{e:#}"
        );
        let public = Path::new(FIXTURES).join("public.pem");
        let e = ServerAuth::load(&public, &users, 10, Padding::Oaep).unwrap_err();
        assert!(format!("{e:#}").contains("--rsa-private-key-path"), "{e:#}");
    }
}
