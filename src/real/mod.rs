//! The real side of the seam: the host's clock and tokio TCP, for running the same lock
//! client and fake node outside the simulator (against real redis-server, or on a real
//! port). Never used inside a simulated run: only there would the host clock break
//! determinism.
//!
//! Also what runs a command under a lock on real Redis (`locksim lock`): [`lock`], and the
//! process groups and guardians it (and live mode) keeps commands in: [`process`].

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::platform::{Clock, Connect, Listener};
use crate::redis::Frame;
use crate::redis::connection::{Connection, ConnectionError};
use crate::redis::request::build as request;

pub mod lock;
pub mod process;
mod url;

pub use url::{RedisUrl, redact};

/// The host's clocks: `SystemTime` for the wall clock, tokio's `Instant` for monotonic
/// time and sleeps.
#[derive(Debug, Clone)]
pub struct HostClock {
    origin: tokio::time::Instant,
}

impl HostClock {
    pub fn new() -> Self {
        HostClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for HostClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for HostClock {
    fn wall_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }

    fn monotonic_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn sleep_until_monotonic(&self, deadline_ms: u64) -> impl Future<Output = ()> + Send {
        tokio::time::sleep_until(self.origin + Duration::from_millis(deadline_ms))
    }
}

/// Opens tokio TCP connections to one address.
#[derive(Debug, Clone)]
pub struct TcpConnector(pub SocketAddr);

impl Connect for TcpConnector {
    type Stream = tokio::net::TcpStream;

    async fn connect(&self) -> io::Result<Self::Stream> {
        let stream = tokio::net::TcpStream::connect(self.0).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}

/// A Redis node as a `redis://` or `rediss://` URL names it: where it is, whether to speak
/// TLS, who to log in as and which database to use. Each new connection does the TLS
/// handshake, logs in (`AUTH`) and selects the database (`SELECT`) before the lock client
/// sees it, so every reconnection does too.
#[derive(Clone)]
pub struct RedisConnector {
    pub addr: SocketAddr,
    /// The ACL user (`AUTH user password`); none for the default user (`AUTH password`).
    pub user: Option<String>,
    /// The password; without one, no `AUTH` is sent.
    pub password: Option<String>,
    /// The database number; 0 sends no `SELECT`.
    pub db: u32,
    /// TLS (`rediss://`), or plain TCP.
    pub tls: Option<Tls>,
}

/// TLS to one node, through rustls: the name the node's certificate must carry, and
/// the roots that certificate must chain to.
#[derive(Clone)]
pub struct Tls {
    /// The host as the URL names it (a DNS name or an IP address).
    pub server_name: rustls::pki_types::ServerName<'static>,
    pub config: Arc<rustls::ClientConfig>,
}

impl Tls {
    /// TLS to `host`, trusting the public web's roots (webpki-roots).
    fn to(host: &str) -> Result<Tls, String> {
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| format!("`{host}` cannot be a TLS server name: {e}"))?;
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        Ok(Tls {
            server_name,
            config: client_config(roots)?,
        })
    }

    /// The same, trusting only the certificates (PEM) in `ca_file`: a private CA.
    pub fn trusting(self, ca_file: &std::path::Path) -> Result<Tls, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let unreadable = |e: &dyn std::fmt::Display| format!("{}: {e}", ca_file.display());
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca_file).map_err(|e| unreadable(&e))? {
            roots
                .add(cert.map_err(|e| unreadable(&e))?)
                .map_err(|e| unreadable(&e))?;
        }
        if roots.is_empty() {
            return Err(unreadable(&"no certificate in the file"));
        }
        Ok(Tls {
            config: client_config(roots)?,
            ..self
        })
    }
}

/// A rustls client configuration on the ring provider, trusting `roots`.
fn client_config(roots: rustls::RootCertStore) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

impl std::fmt::Debug for RedisConnector {
    /// Never shows the password (it ends up in logs and error messages): masked as in URLs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnector")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| url::MASKED_PASSWORD))
            .field("db", &self.db)
            .field("tls", &self.tls.as_ref().map(|tls| tls.server_name.to_str()))
            .finish()
    }
}

impl RedisConnector {
    /// Parses `redis[s]://[[user]:password@]host[:port][/db]` or a bare `host[:port]`
    /// ([`RedisUrl::parse`]), and resolves the host. `rediss://` means TLS, checked against
    /// the public web's roots. Errors show the URL with its password masked.
    pub fn from_url(text: &str) -> Result<RedisConnector, String> {
        RedisUrl::parse(text)?.connector()
    }
}

/// A byte stream to a Redis node: plain TCP or TLS over it.
pub trait RedisStream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> RedisStream for S {}

impl Connect for RedisConnector {
    type Stream = Box<dyn RedisStream>;

    /// Connects (and does the TLS handshake), then logs in and selects the database. A
    /// refused login is an error of kind [`io::ErrorKind::PermissionDenied`], a refused
    /// `SELECT` one of kind [`io::ErrorKind::InvalidInput`], so that callers can tell them
    /// from an unreachable node.
    async fn connect(&self) -> io::Result<Self::Stream> {
        let tcp = TcpConnector(self.addr).connect().await?;
        let stream: Box<dyn RedisStream> = match &self.tls {
            None => Box::new(tcp),
            Some(tls) => {
                let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
                let stream = connector
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(|e| io::Error::new(e.kind(), format!("TLS: {e}")))?;
                Box::new(stream)
            }
        };
        if self.password.is_none() && self.db == 0 {
            return Ok(stream);
        }
        let mut connection = Connection::new(stream);
        if let Some(password) = &self.password {
            let mut auth = vec![b"AUTH".to_vec()];
            auth.extend(self.user.iter().map(|user| user.as_bytes().to_vec()));
            auth.push(password.as_bytes().to_vec());
            setup(&mut connection, auth, io::ErrorKind::PermissionDenied).await?;
        }
        if self.db != 0 {
            let select = vec![b"SELECT".to_vec(), self.db.to_string().into_bytes()];
            setup(&mut connection, select, io::ErrorKind::InvalidInput).await?;
        }
        let (stream, unread) = connection.into_parts();
        debug_assert!(unread.is_empty(), "one reply per setup command");
        Ok(stream)
    }
}

/// Sends one setup command and expects `+OK`; an error reply becomes an I/O error of kind
/// `refused`, naming the command (never its arguments: they hold the password).
async fn setup(
    connection: &mut Connection<Box<dyn RedisStream>>,
    words: Vec<Vec<u8>>,
    refused: io::ErrorKind,
) -> io::Result<()> {
    let name = String::from_utf8_lossy(&words[0]).into_owned();
    connection.write_frame(&request(words)).await?;
    match connection.read_frame().await {
        Ok(Some(Frame::SimpleString(ok))) if ok == b"OK" => Ok(()),
        Ok(Some(Frame::Error(reason))) => Err(io::Error::new(refused, format!("{name}: {reason}"))),
        Ok(Some(other)) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{name}: unexpected reply {other:?}"),
        )),
        Ok(None) | Err(ConnectionError::Closed) => Err(io::ErrorKind::UnexpectedEof.into()),
        Err(ConnectionError::Io(e)) => Err(e),
        Err(ConnectionError::Protocol(reason)) => Err(io::Error::new(io::ErrorKind::InvalidData, reason)),
    }
}

/// Opens tokio TCP connections to any address (a replica dialling its master).
#[derive(Debug, Clone, Copy)]
pub struct TcpDialer;

impl crate::redis::replication::Dialer for TcpDialer {
    type Stream = tokio::net::TcpStream;

    async fn dial(&self, addr: SocketAddr) -> io::Result<Self::Stream> {
        TcpConnector(addr).connect().await
    }
}

/// A tokio TCP listening socket.
pub struct TcpListener(pub tokio::net::TcpListener);

impl Listener for TcpListener {
    type Stream = tokio::net::TcpStream;

    async fn accept(&self) -> io::Result<(Self::Stream, SocketAddr)> {
        let (stream, peer) = self.0.accept().await?;
        stream.set_nodelay(true)?;
        Ok((stream, peer))
    }

    fn socket_fd(stream: &Self::Stream) -> Option<std::os::fd::RawFd> {
        Some(std::os::fd::AsRawFd::as_raw_fd(stream))
    }
}

/// Raises this process's soft limit on open files to its hard limit, as redis-server does
/// at start for its `maxclients`: a served node then holds as many client connections as
/// the host allows (1,024 is a common soft default). Returns the limit now in force.
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(limit.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_password() {
        let shown = format!(
            "{:?}",
            RedisConnector::from_url("redis://app:s3cret@127.0.0.1:7000").unwrap()
        );
        assert!(!shown.contains("s3cret") && shown.contains("****"), "{shown}");
    }
}
