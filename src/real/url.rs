//! Redis URLs (`redis[s]://[[user]:password@]host[:port][/db]` or a bare `host[:port]`),
//! parsed apart from resolving the host: a host that does not resolve is then one
//! unreachable node of several (Redlock goes on with a majority), not an invalid
//! argument. A URL is only ever shown with its password masked, in errors too.

use std::net::SocketAddr;

use super::{RedisConnector, Tls};

/// The default Redis port, for an address or URL that names none.
pub(super) const DEFAULT_PORT: u16 = 6379;

/// What a Redis URL says, its host not yet resolved. Shown (`Display`) as written, with
/// the password masked: `redis://:****@host:6379`.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    /// `host`, `host:port`, `[v6]` or `[v6]:port`, as written.
    pub host_port: String,
    /// The ACL user (`AUTH user password`); none for the default user (`AUTH password`).
    pub user: Option<String>,
    /// The password; without one, no `AUTH` is sent.
    pub password: Option<String>,
    /// The database number; 0 sends no `SELECT`.
    pub db: u32,
    /// `rediss://`: TLS.
    pub tls: bool,
    /// The URL as written, its password masked.
    shown: String,
}

impl std::fmt::Display for RedisUrl {
    /// The URL as written, its password masked (it ends up in logs and error messages).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Debug for RedisUrl {
    /// As `Display`: never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisUrl({})", self.shown)
    }
}

/// What a password is shown as, in URLs and anywhere else a message would show it.
pub(super) const MASKED_PASSWORD: &str = "****";

/// `text` with the password of a URL's user part masked (`redis://app:****@host`), for
/// every message that names a Redis URL: also a URL too malformed to parse.
pub fn redact(text: &str) -> String {
    let (scheme, rest) = match text.find("://") {
        Some(at) => text.split_at(at + 3),
        None => ("", text),
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}{user}:{MASKED_PASSWORD}@{host}"),
            None => text.to_string(),
        },
        None => text.to_string(),
    }
}

impl RedisUrl {
    /// Parses `redis[s]://[[user]:password@]host[:port][/db]` or a bare `host[:port]`,
    /// without resolving the host. Percent-escapes (`%40` for `@`) are decoded in the user
    /// and password. Errors name the URL with its password masked.
    pub fn parse(text: &str) -> Result<RedisUrl, String> {
        let shown = redact(text);
        let (rest, tls) = if let Some(rest) = text.strip_prefix("redis://") {
            (rest, false)
        } else if let Some(rest) = text.strip_prefix("rediss://") {
            (rest, true)
        } else if text.contains("://") {
            return Err(format!("`{shown}`: the scheme must be redis:// or rediss://"));
        } else {
            (text, false)
        };
        let (userinfo, host_db) = match rest.rsplit_once('@') {
            Some((userinfo, host_db)) => (Some(userinfo), host_db),
            None => (None, rest),
        };
        let (host_port, db) = match host_db.split_once('/') {
            Some((host_port, "")) => (host_port, 0),
            Some((host_port, db)) => {
                let db = db
                    .parse()
                    .map_err(|_| format!("`{shown}`: the database must be a number (redis://host:port/0)"))?;
                (host_port, db)
            }
            None => (host_db, 0),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(userinfo) => {
                let (user, password) = match userinfo.split_once(':') {
                    Some((user, password)) => (user, Some(percent_decode(password, &shown)?)),
                    None => (userinfo, None),
                };
                let user = (!user.is_empty())
                    .then(|| percent_decode(user, &shown))
                    .transpose()?;
                (user, password)
            }
        };
        let host = host_of(host_port);
        if host.is_empty() {
            return Err(format!("`{shown}`: no host (expected HOST:PORT)"));
        }
        if let Some(port) = port_of(host_port) {
            port.parse::<u16>()
                .map_err(|_| format!("`{shown}`: the port must be a number up to 65535"))?;
        }
        if tls {
            rustls::pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| format!("`{shown}`: `{host}` cannot be a TLS server name: {e}"))?;
        }
        Ok(RedisUrl {
            host_port: host_port.to_string(),
            user,
            password,
            db,
            tls,
            shown,
        })
    }

    /// A connector to the node: resolves the host now (port 6379 when none is given). An
    /// error (a host that does not resolve) names the URL with its password masked.
    pub fn connector(&self) -> Result<RedisConnector, String> {
        let addr = self.resolve().map_err(|reason| format!("`{self}`: {reason}"))?;
        self.connector_at(addr)
    }

    /// The host's address, resolved now (port 6379 when none is given); the error says
    /// which host did not resolve (never the password).
    pub fn resolve(&self) -> Result<SocketAddr, String> {
        resolve(&self.host_port)
    }

    /// A connector to the node at `addr`, the address its host resolved to.
    pub fn connector_at(&self, addr: SocketAddr) -> Result<RedisConnector, String> {
        let tls = self
            .tls
            .then(|| Tls::to(host_of(&self.host_port)))
            .transpose()
            .map_err(|reason| format!("`{self}`: {reason}"))?;
        Ok(RedisConnector {
            addr,
            user: self.user.clone(),
            password: self.password.clone(),
            db: self.db,
            tls,
        })
    }
}

/// The host of `host`, `host:port`, `[v6]` or `[v6]:port`.
fn host_of(host_port: &str) -> &str {
    if let Some(rest) = host_port.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host_port.split(':').next().unwrap_or(host_port)
}

/// The port of `host:port` or `[v6]:port`, if one is written.
fn port_of(host_port: &str) -> Option<&str> {
    match host_port.rfind(']') {
        Some(bracket) => host_port[bracket..].split_once(':').map(|(_, port)| port),
        None => host_port.split_once(':').map(|(_, port)| port),
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`, resolved (port 6379 when none is given).
fn resolve(host_port: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let with_port = if port_of(host_port).is_some() {
        host_port.to_string()
    } else {
        format!("{host_port}:{DEFAULT_PORT}")
    };
    match with_port.to_socket_addrs().map(|mut addrs| addrs.next()) {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) | Err(_) => Err(format!("cannot resolve `{host_port}`")),
    }
}

/// Decodes `%XX` escapes, as URLs write reserved characters in a user or password.
fn percent_decode(part: &str, shown: &str) -> Result<String, String> {
    let bad = || format!("`{shown}`: bad percent-escape in the user or password");
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = part.get(i + 1..i + 3).ok_or_else(bad)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> RedisConnector {
        RedisConnector::from_url(text).unwrap()
    }

    #[test]
    fn a_url_gives_user_password_and_database() {
        let node = url("redis://app:s3cret@127.0.0.1:7000/2");
        assert_eq!(node.addr, SocketAddr::from(([127, 0, 0, 1], 7000)));
        assert_eq!(node.user.as_deref(), Some("app"));
        assert_eq!(node.password.as_deref(), Some("s3cret"));
        assert_eq!(node.db, 2);
    }

    #[test]
    fn a_password_without_user_logs_in_as_the_default_user() {
        let node = url("redis://:pw@127.0.0.1:7000");
        assert_eq!(
            (node.user, node.password.as_deref(), node.db),
            (None, Some("pw"), 0)
        );
    }

    #[test]
    fn a_user_without_password_leaves_the_password_to_be_given_elsewhere() {
        let node = url("redis://app@127.0.0.1:7000/");
        assert_eq!((node.user.as_deref(), node.password), (Some("app"), None));
    }

    #[test]
    fn percent_escapes_in_the_password_are_decoded() {
        assert_eq!(
            url("redis://:p%40ss%3Aw@127.0.0.1:1").password.as_deref(),
            Some("p@ss:w")
        );
        assert!(RedisConnector::from_url("redis://:p%4@127.0.0.1:1").is_err());
    }

    #[test]
    fn bare_addresses_and_urls_without_port_default_to_6379() {
        assert_eq!(url("127.0.0.1:7001").addr.port(), 7001);
        assert_eq!(url("redis://127.0.0.1").addr.port(), DEFAULT_PORT);
        assert_eq!(url("redis://[::1]").addr, "[::1]:6379".parse().unwrap());
        assert_eq!(url("[::1]:7002").addr.port(), 7002);
    }

    #[test]
    fn other_schemes_bad_databases_and_unknown_hosts_are_refused_with_a_reason() {
        let error = |text| RedisConnector::from_url(text).unwrap_err();
        assert!(
            RedisConnector::from_url("rediss://127.0.0.1:1")
                .unwrap()
                .tls
                .is_some()
        );
        assert!(error("http://127.0.0.1:1").contains("scheme"));
        assert!(error("redis://127.0.0.1:1/x").contains("database"));
        assert!(error("redis://127.0.0.1:99999").contains("port"));
        assert!(error("redis://:pw@").contains("no host"));
        assert!(error("redis://no-such-host.invalid:1").contains("cannot resolve"));
    }

    #[test]
    fn an_unknown_host_parses_and_fails_only_when_resolved() {
        let parsed = RedisUrl::parse("redis://:pw@no-such-host.invalid:1").unwrap();
        let error = parsed.connector().unwrap_err();
        assert!(
            error.contains("cannot resolve") && !error.contains("pw@"),
            "{error}"
        );
    }

    #[test]
    fn rediss_checks_the_certificate_against_the_host_the_url_names() {
        let name = |text| url(text).tls.map(|tls| tls.server_name.to_str().into_owned());
        assert_eq!(name("rediss://localhost:7000/1").as_deref(), Some("localhost"));
        assert_eq!(name("rediss://app:pw@127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(name("rediss://[::1]:7000").as_deref(), Some("::1"));
        assert_eq!(name("redis://localhost:7000"), None);
    }

    #[test]
    fn a_url_is_shown_with_its_password_masked_even_when_malformed() {
        assert_eq!(redact("redis://:s3cret@h:6379"), "redis://:****@h:6379");
        assert_eq!(redact("rediss://app:s3cret@h/2"), "rediss://app:****@h/2");
        assert_eq!(redact("app:s3cret@h:1"), "app:****@h:1");
        assert_eq!(redact("redis://app@h"), "redis://app@h");
        assert_eq!(redact("h:6379"), "h:6379");
        let shown = RedisUrl::parse("redis://app:s3cret@127.0.0.1:7000").unwrap();
        assert_eq!(shown.to_string(), "redis://app:****@127.0.0.1:7000");
        assert!(!format!("{shown:?}").contains("s3cret"));
        for bad in [
            "redis://:s3cret@127.0.0.1:1/x",
            "redis://:s3/cret@127.0.0.1:1/x",
            "http://:s3cret@127.0.0.1:1",
            "redis://:s3cret%4@127.0.0.1:1",
            "redis://:s3cret@no-such-host.invalid:1",
            "redis://:s3cret@127.0.0.1:99999",
        ] {
            let error = RedisConnector::from_url(bad).unwrap_err();
            assert!(!error.contains("s3") && error.contains("****"), "{error}");
        }
    }
}
