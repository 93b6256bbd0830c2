//! `locksim lock` against a real redis-server: the command runs under the lock, its
//! status comes back, each way of not holding the lock has its own exit, and no message
//! shows a password. (That the command never outlives locksim or the lock is
//! tests/real/real_lock_process.rs.) Every process a test starts is stopped by it.

use crate::support;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use locksim::client::Conn;
use locksim::real::{HostClock, TcpConnector};
use locksim::redis::cmd::Del;
use support::lock_cli::{lock_command, locksim_lock, other_client, run_timed, until_exit};
use support::{RedisServer, runtime, until_key_exists};

/// `server`, once its default user needs the password `right` and an ACL user `app` can log
/// in with `apppw`. (Set after the start: the test support's readiness check does not log in.)
fn with_password(server: RedisServer) -> RedisServer {
    let mut admin = support::resp::RespClient::connect(server.addr);
    for command in [
        "ACL SETUSER app on >apppw ~* +@all",
        "CONFIG SET requirepass right",
    ] {
        let words = command
            .split(' ')
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>();
        assert_eq!(
            admin.request(&words),
            support::resp::Value::Simple("OK".into()),
            "{command}"
        );
    }
    server
}

/// A loopback port nothing listens on.
fn refused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_command_runs_under_the_renewed_lock_and_its_status_is_returned() {
    let server = RedisServer::start(&[]);
    // The TTL is half the command's run: only renewal keeps the lock. The command leaves
    // `done` behind as it ends; locksim releases after that.
    let done = std::env::temp_dir().join(format!("locksim-cli-done-{}", std::process::id()));
    let _ = std::fs::remove_file(&done);
    let script = "sleep 1.8; : > \"$1\"; exit 3";
    let child = locksim_lock(
        &server,
        "cli",
        &[
            "--ttl",
            "900ms",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            done.to_str().unwrap(),
        ],
    );
    let (output, grants) = runtime().block_on(async {
        let mut other = other_client(&server, 10_000);
        until_key_exists(server.addr, b"cli").await; // locksim has acquired
        let mut grants = 0;
        let output = until_exit(child, async || {
            if let Some(lease) = other.try_acquire(b"cli").await.unwrap() {
                // Ours while the command still ran: two holders. (Once it has ended,
                // locksim releases before it exits, and a grant then is no overlap.)
                if !done.exists() {
                    grants += 1;
                }
                other.release(&lease).await.unwrap();
            }
        })
        .await;
        let free = other.try_acquire(b"cli").await.unwrap().is_some();
        assert!(free, "released when the command ended");
        (output, grants)
    });
    let ended = done.exists();
    let _ = std::fs::remove_file(&done);
    assert!(ended, "the command ran to its end");
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(grants, 0, "nobody else held the lock while the command ran");
}

#[test]
fn a_lock_held_elsewhere_past_the_wait_exits_75() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut holder = other_client(&server, 10_000);
        holder.try_acquire(b"busy").await.unwrap().expect("granted");
        let started = Instant::now();
        let output = locksim_lock(&server, "busy", &["--wait", "300ms", "--", "true"])
            .wait_with_output()
            .unwrap();
        assert_eq!(output.status.code(), Some(75));
        assert!(String::from_utf8_lossy(&output.stderr).contains("could not acquire lock `busy`"));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    });
}

#[test]
fn a_lost_lock_signals_the_command_and_exits_70_with_a_message() {
    let server = RedisServer::start(&[]);
    let child = locksim_lock(&server, "lost", &["--ttl", "600ms", "--", "sleep", "30"]);
    let started = Instant::now();
    let output = runtime().block_on(async {
        until_key_exists(server.addr, b"lost").await; // locksim has acquired
        let mut admin = Conn::new(TcpConnector(server.addr), HostClock::new(), 1000);
        let del = Del {
            keys: vec![b"lost".to_vec()],
        };
        admin.request(&del.into_frame()).await.unwrap();
        until_exit(child, async || {}).await
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(70), "{stderr}");
    assert!(
        stderr.contains("lock lost") && stderr.contains("SIGTERM"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 30 s command was stopped"
    );
}

#[test]
fn several_addresses_lock_with_redlock() {
    let servers: Vec<RedisServer> = (0..3).map(|_| RedisServer::start(&[])).collect();
    let addresses: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "lock",
            "--redis",
            &addresses.join(","),
            "--key",
            "many",
            "--",
            "sh",
            "-c",
            "exit 4",
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut servers = servers;
    drop(servers.drain(..2)); // two of three dead: no majority
    let (code, stderr, took) = run_timed(&mut lock_command(
        &addresses.join(","),
        "many",
        &["--wait", "30s", "--", "true"],
    ));
    assert_eq!(code, Some(69), "{stderr}");
    assert!(
        stderr.contains(&addresses[0]) && stderr.contains(&addresses[1]),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&addresses[2]),
        "the live node is not blamed: {stderr}"
    );
    assert!(
        took < Duration::from_secs(5),
        "at once, not after --wait: {took:?}"
    );
}

#[test]
fn a_wrong_or_missing_password_fails_at_once_with_77_and_says_why() {
    let server = with_password(RedisServer::start(&[]));
    let port = server.addr.port();
    for (redis, said) in [
        (format!("redis://:wrong@127.0.0.1:{port}"), "WRONGPASS"),
        (format!("127.0.0.1:{port}"), "NOAUTH"),
    ] {
        let (code, stderr, took) = run_timed(&mut lock_command(&redis, "auth", &["--", "true"]));
        assert_eq!(code, Some(77), "{redis}: {stderr}");
        assert!(
            stderr.contains("refused the login") && stderr.contains(said),
            "{stderr}"
        );
        assert!(!stderr.contains("wrong"), "the password is never shown: {stderr}");
        assert!(
            took < Duration::from_secs(5),
            "at once, not after --wait: {took:?}"
        );
    }
}

#[test]
fn the_password_comes_from_the_url_the_environment_or_a_file_and_users_log_in_by_acl() {
    let server = with_password(RedisServer::start(&[]));
    let port = server.addr.port();
    let file = support::cli::scratch("password").join("password");
    std::fs::write(&file, "apppw\n").unwrap();
    let url = format!("redis://:right@127.0.0.1:{port}");
    let (code, stderr, _) = run_timed(&mut lock_command(&url, "pw", &["--", "true"]));
    assert_eq!(code, Some(0), "password in the URL: {stderr}");
    let bare = format!("127.0.0.1:{port}");
    let mut from_env = lock_command(&bare, "pw", &["--", "true"]);
    from_env.env("LOCKSIM_REDIS_PASSWORD", "right");
    let (code, stderr, _) = run_timed(&mut from_env);
    assert_eq!(code, Some(0), "password from LOCKSIM_REDIS_PASSWORD: {stderr}");
    let user = format!("redis://app@127.0.0.1:{port}");
    let args = ["--password-file", file.to_str().unwrap(), "--", "true"];
    let (code, stderr, _) = run_timed(&mut lock_command(&user, "pw", &args));
    assert_eq!(code, Some(0), "user app, password from --password-file: {stderr}");
    let (code, stderr, _) = run_timed(&mut lock_command(&user, "pw", &["--", "true"]));
    assert_eq!(code, Some(2), "a user without a password anywhere: {stderr}");
    assert!(stderr.contains("LOCKSIM_REDIS_PASSWORD"), "{stderr}");
}

#[test]
fn the_database_in_the_url_holds_the_lock_apart_from_database_0() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut holder = other_client(&server, 10_000);
        holder
            .try_acquire(b"db")
            .await
            .unwrap()
            .expect("granted in database 0");
        let db3 = format!("redis://127.0.0.1:{}/3", server.addr.port());
        let (code, stderr, _) = run_timed(&mut lock_command(&db3, "db", &["--wait", "0", "--", "true"]));
        assert_eq!(code, Some(0), "free in database 3: {stderr}");
        let db0 = format!("redis://127.0.0.1:{}/0", server.addr.port());
        let (code, stderr, _) = run_timed(&mut lock_command(&db0, "db", &["--wait", "0", "--", "true"]));
        assert_eq!(code, Some(75), "held in database 0: {stderr}");
        let db99 = format!("redis://127.0.0.1:{}/99", server.addr.port());
        let (code, stderr, _) = run_timed(&mut lock_command(&db99, "db", &["--", "true"]));
        assert_eq!(code, Some(77), "no database 99: {stderr}");
        assert!(stderr.contains("SELECT"), "{stderr}");
    });
}

#[test]
fn a_refused_port_fails_in_under_a_second_with_69() {
    let redis = format!("127.0.0.1:{}", refused_port());
    let (code, stderr, took) = run_timed(&mut lock_command(
        &redis,
        "nobody",
        &["--wait", "30s", "--", "true"],
    ));
    assert_eq!(code, Some(69), "{stderr}");
    assert!(
        stderr.contains("cannot reach Redis") && stderr.contains(&redis),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[test]
fn a_lock_held_elsewhere_with_wait_0_exits_75_after_one_try() {
    let server = RedisServer::start(&[]);
    runtime().block_on(async {
        let mut holder = other_client(&server, 10_000);
        holder.try_acquire(b"busy").await.unwrap().expect("granted");
        let redis = server.addr.to_string();
        let (code, stderr, took) =
            run_timed(&mut lock_command(&redis, "busy", &["--wait", "0", "--", "true"]));
        assert_eq!(code, Some(75), "{stderr}");
        assert!(stderr.contains("held by another client"), "{stderr}");
        assert!(took < Duration::from_secs(1), "{took:?}");
    });
}

#[test]
fn a_server_that_never_answers_exits_124_when_the_wait_runs_out() {
    let server = RedisServer::start(&[]);
    server.freeze();
    let redis = server.addr.to_string();
    let args = ["--wait", "1.5s", "--node-timeout", "200ms", "--", "true"];
    let (code, stderr, took) = run_timed(&mut lock_command(&redis, "frozen", &args));
    server.thaw();
    assert_eq!(code, Some(124), "{stderr}");
    assert!(
        stderr.contains("no usable answer") && stderr.contains("no reply within 200 ms"),
        "{stderr}"
    );
    assert!(took >= Duration::from_millis(1500), "it waited: {took:?}");
}

#[test]
fn the_command_learns_its_key_token_and_fencing_token() {
    let server = RedisServer::start(&[]);
    let redis = server.addr.to_string();
    let print = "echo \"$LOCKSIM_LOCK_KEY ${#LOCKSIM_LOCK_TOKEN} ${LOCKSIM_FENCING_TOKEN-none}\"";
    let run = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["--", "sh", "-c", print]);
        let output = lock_command(&redis, "env", &args).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(run(&[]), "env 40 none\n", "no fencing token without a counter");
    let counter = ["--fence-counter", redis.as_str()];
    assert_eq!(run(&counter), "env 40 1\n");
    assert_eq!(run(&counter), "env 40 2\n", "each holder's token is larger");
}

#[test]
fn concurrent_invocations_never_overlap() {
    let server = RedisServer::start(&[]);
    let journal = support::cli::scratch("overlap").join("journal");
    let script =
        "echo \"start $LOCKSIM_LOCK_TOKEN\" >> \"$1\"; sleep 0.2; echo \"end $LOCKSIM_LOCK_TOKEN\" >> \"$1\"";
    const RUNS: usize = 4;
    let children: Vec<Child> = (0..RUNS)
        .map(|_| {
            let args = [
                "--ttl",
                "1s",
                "--",
                "sh",
                "-c",
                script,
                "sh",
                journal.to_str().unwrap(),
            ];
            locksim_lock(&server, "shared", &args)
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * RUNS, "{text}");
    for pair in lines.chunks(2) {
        let token = pair[0].strip_prefix("start ").expect("a start first");
        assert_eq!(
            pair[1],
            format!("end {token}"),
            "another holder started in between:\n{text}"
        );
    }
}

/// A CA and a certificate it signed for 127.0.0.1 and localhost, made with openssl in
/// `dir`: (ca.pem, server.pem, server.key).
fn test_certificates(dir: &std::path::Path) -> [std::path::PathBuf; 3] {
    let script = "set -e
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
            -subj /CN=locksim-test-ca -keyout ca.key -out ca.pem
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -subj /CN=localhost -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile ext -out server.pem";
    let output = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    ["ca.pem", "server.pem", "server.key"].map(|name| dir.join(name))
}

#[test]
fn rediss_speaks_tls_and_checks_the_servers_certificate() {
    let dir = support::cli::scratch("tls");
    let [ca, cert, key] = test_certificates(&dir);
    // A fresh TLS port at each attempt: another process may take one before the bind.
    let server = RedisServer::start_fresh(|| {
        let tls_port = refused_port().to_string();
        let files = [
            ("--tls-cert-file", &cert),
            ("--tls-key-file", &key),
            ("--tls-ca-cert-file", &ca),
        ];
        let mut args = vec!["--tls-port".to_string(), tls_port];
        for (flag, file) in files {
            args.extend([flag.to_string(), file.display().to_string()]);
        }
        args.extend(["--tls-auth-clients".to_string(), "no".to_string()]);
        args
    });
    let tls_port = server.arg_after("--tls-port").unwrap().to_string();
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let ca_arg = ["--tls-ca", ca.to_str().unwrap()];
    let print = "echo $LOCKSIM_LOCK_KEY";
    let mut trusted = lock_command(&url, "tls", &[&ca_arg[..], &["--", "sh", "-c", print]].concat());
    let output = trusted.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout), "tls\n");
    let (code, stderr, _) = run_timed(&mut lock_command(&url, "tls", &["--", "true"]));
    assert_eq!(code, Some(69), "a certificate no public root signed: {stderr}");
    assert!(
        stderr.contains("TLS") && stderr.contains("certificate"),
        "{stderr}"
    );
    let plain = format!("redis://127.0.0.1:{tls_port}");
    let (code, stderr, _) = run_timed(&mut lock_command(&plain, "tls", &["--", "true"]));
    assert_eq!(code, Some(69), "plain TCP to the TLS port: {stderr}");
    drop(server);
}

#[test]
fn a_host_that_does_not_resolve_is_one_unreachable_node_and_redlock_goes_on_with_the_others() {
    let unresolvable = "redis://:s3cret-pw@no-such-host.invalid:6379";
    let (code, stderr, took) = run_timed(&mut lock_command(
        unresolvable,
        "dns",
        &["--wait", "30s", "--", "true"],
    ));
    assert_eq!(code, Some(69), "{stderr}");
    assert!(
        stderr.contains("cannot reach Redis")
            && stderr.contains("redis://:****@no-such-host.invalid:6379")
            && stderr.contains("cannot resolve"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret"),
        "the password is never shown: {stderr}"
    );
    assert!(
        took < Duration::from_secs(5),
        "at once, not after --wait: {took:?}"
    );
    let servers: Vec<RedisServer> = (0..2).map(|_| RedisServer::start(&[])).collect();
    let mut nodes: Vec<String> = servers.iter().map(|s| s.addr.to_string()).collect();
    nodes.insert(1, "no-such-host.invalid:6379".into());
    let (code, stderr, _) = run_timed(&mut lock_command(
        &nodes.join(","),
        "dns",
        &["--wait", "10s", "--", "sh", "-c", "exit 4"],
    ));
    assert_eq!(code, Some(4), "two of three nodes are a majority: {stderr}");
    drop(servers);
}

#[test]
fn no_message_shows_a_password() {
    let server = with_password(RedisServer::start(&[]));
    let port = server.addr.port();
    let refused = refused_port();
    let cases: [(String, &[&str], i32); 5] = [
        (format!("redis://:s3cret-pw@127.0.0.1:{port}/x"), &[], 2),
        (format!("redis://app:s3cret-pw@127.0.0.1:{port}:1"), &[], 2),
        (format!("redis://:s3cret-pw@127.0.0.1:{refused}"), &[], 69),
        (
            format!("redis://:s3cret-pw@127.0.0.1:{port}"),
            &["--fence-counter", "redis://:s3cret-pw@127.0.0.1:1/x"],
            2,
        ),
        (format!("redis://app:s3cret-pw@127.0.0.1:{port}"), &[], 77),
    ];
    for (redis, extra, expected) in cases {
        let args = [extra, &["--wait", "0", "--", "true"]].concat();
        let (code, stderr, _) = run_timed(&mut lock_command(&redis, "secret", &args));
        assert_eq!(code, Some(expected), "{stderr}");
        assert!(
            !stderr.contains("s3cret"),
            "{redis}: the password is shown: {stderr}"
        );
    }
    let (_, stderr, _) = run_timed(&mut lock_command(
        &format!("redis://:s3cret-pw@127.0.0.1:{refused}"),
        "secret",
        &["--", "true"],
    ));
    assert!(
        stderr.contains(&format!("redis://:****@127.0.0.1:{refused}")),
        "the node is named, its password masked: {stderr}"
    );
}
