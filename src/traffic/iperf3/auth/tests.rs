//! Tokens with fixed keys and times: made here and read back in both paddings, and made by
//! Debian's iperf3 3.12 (PKCS#1) and by `openssl pkeyutl` (OAEP, PKCS#1) and read here
//! (`tests/fixtures/iperf3/auth/`).

use super::*;
use rand::SeedableRng;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/iperf3/auth/");

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}{name}")).expect("auth fixture")
}

fn keys() -> (RsaPrivateKey, RsaPublicKey) {
    let private = private_key_from_pem(&fixture("private.pem")).expect("PKCS#8 private key");
    let public = public_key_from_pem(&fixture("public.pem")).expect("SPKI public key");
    assert_eq!(RsaPublicKey::from(&private), public);
    (private, public)
}

fn alice(ts: i64) -> Credentials {
    Credentials {
        user: "alice".into(),
        password: "s3cret".into(),
        ts,
    }
}

fn rng() -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(28)
}

#[test]
fn the_credentials_text_is_iperf3s_format() {
    assert_eq!(
        credentials_text(&alice(1_700_000_000)),
        "user: alice\npwd:  s3cret\nts:   1700000000"
    );
    assert_eq!(
        parse_credentials("user: alice\npwd:  s3cret\nts:   1700000000"),
        Some(alice(1_700_000_000))
    );
    // sscanf's leniency: any white space where the format has some, none where %s skips it,
    // a sign, trailing text ignored.
    assert_eq!(
        parse_credentials("user:alice pwd:\ts3cret\n\nts: -5xyz"),
        Some(alice(-5))
    );
    assert_eq!(parse_credentials("user: alice\npwd:  s3cret\nts:   "), None);
    assert_eq!(parse_credentials("user: alice\nts: 1"), None);
    assert_eq!(parse_credentials(""), None);
}

#[test]
fn tokens_round_trip_in_both_paddings() {
    let (private, public) = keys();
    for padding in [Padding::Oaep, Padding::Pkcs1] {
        let token = encode_token(&alice(1_700_000_000), &public, padding, &mut rng()).unwrap();
        assert!(!token.contains('\n') && token.len() == 344, "{token}");
        assert_eq!(
            decode_token(&token, &private, padding, &mut rng()),
            Ok(alice(1_700_000_000)),
            "{padding:?}"
        );
    }
}

#[test]
fn a_token_in_the_other_padding_is_refused_as_such() {
    let (private, public) = keys();
    let oaep = encode_token(&alice(1), &public, Padding::Oaep, &mut rng()).unwrap();
    let pkcs1 = encode_token(&alice(1), &public, Padding::Pkcs1, &mut rng()).unwrap();
    assert!(matches!(
        decode_token(&oaep, &private, Padding::Pkcs1, &mut rng()),
        Err(AuthError::Decrypt(_) | AuthError::NotCredentials)
    ));
    assert_eq!(
        decode_token(&pkcs1, &private, Padding::Oaep, &mut rng()),
        Err(AuthError::Decrypt(Padding::Oaep.words()))
    );
    assert_eq!(
        decode_token("not base64!", &private, Padding::Oaep, &mut rng()),
        Err(AuthError::NotBase64)
    );
}

#[test]
fn tokens_made_by_iperf3_and_openssl_are_read() {
    let (private, _) = keys();
    let from_iperf3 = fixture("token-pkcs1-iperf3-3.12.txt");
    assert_eq!(
        decode_token(&from_iperf3, &private, Padding::Pkcs1, &mut rng()),
        Ok(alice(1_795_474_488))
    );
    for (file, padding) in [
        ("token-oaep-openssl.txt", Padding::Oaep),
        ("token-pkcs1-openssl.txt", Padding::Pkcs1),
    ] {
        assert_eq!(
            decode_token(&fixture(file), &private, padding, &mut rng()),
            Ok(alice(1_700_000_000)),
            "{file}"
        );
    }
    // The same key as PKCS#1 PEM (`openssl rsa -traditional`).
    let pkcs1_key = private_key_from_pem(&fixture("private-pkcs1.pem")).unwrap();
    assert_eq!(pkcs1_key, private);
}

#[test]
fn credentials_that_cannot_survive_the_trip_are_refused_before_encrypting() {
    let (_, public) = keys();
    let with = |user: &str, password: &str| {
        encode_token(
            &Credentials {
                user: user.into(),
                password: password.into(),
                ts: 0,
            },
            &public,
            Padding::Oaep,
            &mut rng(),
        )
    };
    assert_eq!(
        with("alice", "two words"),
        Err(AuthError::NotOneWord { what: "password" })
    );
    assert_eq!(
        with("", "x"),
        Err(AuthError::NotOneWord { what: "user name" })
    );
    assert_eq!(with("a,b", "x"), Err(AuthError::CommaInUser));
    // 2048-bit OAEP carries 214 bytes.
    let long = "p".repeat(200);
    assert!(matches!(
        with("alice", &long),
        Err(AuthError::TooLong { max: 214, .. })
    ));
    assert!(with("alice", &"p".repeat(150)).is_ok());
}

#[test]
fn the_password_hash_is_sha256_of_the_salted_password() {
    // printf '%s' '{alice}s3cret' | sha256sum
    assert_eq!(
        password_hash("alice", "s3cret"),
        "9fb9349969765cb57b343daf1872140068c079c5fdf209f18422b11d5b96fafc"
    );
}

#[test]
fn the_users_file_is_read_as_iperf3_reads_it() {
    let text = "# comment,with a comma\n\nalice,AAA\r\nno comma here\n,,bob,BBB,extra\ncarol,\n#dave,DDD\n";
    assert_eq!(
        parse_users(text),
        vec![
            UserEntry {
                user: "alice".into(),
                hash: "AAA".into()
            },
            UserEntry {
                user: "bob".into(),
                hash: "BBB".into()
            },
        ]
    );
}

#[test]
fn verify_checks_the_time_then_the_user_then_the_password() {
    let users = parse_users(&format!(
        "alice,{}\nbob,{}\n",
        password_hash("alice", "s3cret"),
        password_hash("bob", "other")
    ));
    let now = 1_700_000_000;
    assert_eq!(verify(&alice(now), &users, now, 10), Ok(()));
    // Exactly the threshold passes, either way; one more does not.
    assert_eq!(verify(&alice(now - 10), &users, now, 10), Ok(()));
    assert_eq!(verify(&alice(now + 10), &users, now, 10), Ok(()));
    assert_eq!(
        verify(&alice(now - 11), &users, now, 10),
        Err(LoginRefused::Skew {
            user: "alice".into(),
            skew_s: 11,
            threshold_s: 10
        })
    );
    let mut c = alice(now);
    c.password = "wrong".into();
    assert_eq!(
        verify(&c, &users, now, 10),
        Err(LoginRefused::WrongPassword("alice".into()))
    );
    c.user = "mallory".into();
    assert_eq!(
        verify(&c, &users, now, 10),
        Err(LoginRefused::UnknownUser("mallory".into()))
    );
    // Bob's password is not Alice's.
    let mut b = alice(now);
    b.user = "bob".into();
    assert_eq!(
        verify(&b, &users, now, 10),
        Err(LoginRefused::WrongPassword("bob".into()))
    );
    // A hash written in capitals still matches.
    let upper = parse_users(&format!(
        "alice,{}",
        password_hash("alice", "s3cret").to_uppercase()
    ));
    assert_eq!(verify(&alice(now), &upper, now, 10), Ok(()));
}

#[test]
fn key_files_of_the_wrong_kind_are_named() {
    let e = public_key_from_pem(&fixture("private.pem")).unwrap_err();
    assert!(e.to_string().contains("private key"), "{e}");
    let e = private_key_from_pem(&fixture("public.pem")).unwrap_err();
    assert!(e.to_string().contains("BEGIN PRIVATE KEY"), "{e}");
    let e = public_key_from_pem("garbage").unwrap_err();
    assert!(e.to_string().contains("-pubout"), "{e}");
    let e = private_key_from_pem("-----BEGIN ENCRYPTED PRIVATE KEY-----\n").unwrap_err();
    assert!(e.to_string().contains("passphrase"), "{e}");
}
