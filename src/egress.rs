//! Where askbridge may send requests that a caller names: callback URLs.
//!
//! Whoever can ask a question can name a callback URL, and askbridge POSTs the signed resolution
//! there. Left open, that lets any caller make askbridge talk to what only it can reach: Redis on
//! 127.0.0.1, a cloud metadata endpoint, the office network. So a callback may go only to public
//! addresses, unless [`Egress::allow`] names the host or its network (`ASKBRIDGE_CALLBACK_ALLOW`).
//!
//! The check runs twice: when the question is created (so the caller hears why, as a 422), and
//! when the callback connects — the client's resolver drops forbidden addresses — because a name
//! can resolve to a public address at the first look and a private one at the second (DNS
//! rebinding). Redirects are not followed (a 307 would re-POST the signed body elsewhere), and
//! URLs with user-info are refused (they would be sent as Basic credentials).
//!
//! What counts as internal is decided in `egress/addresses.rs`, by class; an IPv6 address that
//! carries an IPv4 address (NAT64, 6to4, IPv4-compatible) is judged by that IPv4 address.

mod addresses;

use addresses::Class;
use futures_util::future::BoxFuture;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Looks names up: the system's resolver, or a test's.
pub trait Lookup: Send + Sync {
    /// The addresses of `host`.
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system's resolver.
#[derive(Debug, Default)]
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(found.map(|a| a.ip()).collect())
        })
    }
}

/// One allow-list entry: a host name, an address, or a network.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Allowed {
    Name(String),
    Net(IpAddr, u8),
}

/// The policy for callback URLs.
#[derive(Clone)]
pub struct Egress {
    allowed: Arc<Vec<Allowed>>,
    lookup: Arc<dyn Lookup>,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress")
            .field("allowed", &self.allowed)
            .finish()
    }
}

impl Default for Egress {
    fn default() -> Self {
        Egress {
            allowed: Arc::default(),
            lookup: Arc::new(SystemLookup),
        }
    }
}

impl Egress {
    /// Public addresses only.
    pub fn public_only() -> Self {
        Egress::default()
    }

    /// Also these hosts, addresses or networks (`internal.example`, `127.0.0.1`,
    /// `10.0.0.0/8`, `::1`). An entry that is none of these is an error naming it.
    pub fn allow<I, S>(mut self, entries: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut allowed = (*self.allowed).clone();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            allowed.push(parse_entry(entry)?);
        }
        self.allowed = Arc::new(allowed);
        Ok(self)
    }

    /// Looks names up through `lookup` (tests map names to addresses without DNS).
    pub fn with_lookup(mut self, lookup: Arc<dyn Lookup>) -> Self {
        self.lookup = lookup;
        self
    }

    /// Why `url` may not be called back, if it may not. Resolves its host.
    pub async fn refusal(&self, url: &str) -> Option<String> {
        let parsed = match self.shape(url) {
            Ok(parsed) => parsed,
            Err(why) => return Some(why),
        };
        // The parser has already read `127.1`, `2130706433` and `0x7f.1` as 127.0.0.1.
        let host = parsed.host_str().unwrap_or_default().to_owned();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = literal.parse::<IpAddr>() {
            return self.address_refusal(literal, ip);
        }
        if self.names_allowed(&host) {
            return None;
        }
        match self.lookup.lookup(&host).await {
            Ok(addresses) if addresses.is_empty() => Some(format!("`{host}` does not resolve")),
            Ok(addresses) => addresses
                .iter()
                .find_map(|ip| self.address_refusal(&host, *ip)),
            Err(error) => Some(format!("`{host}` does not resolve: {error}")),
        }
    }

    /// The checks that need no lookup: scheme, host, user-info.
    fn shape(&self, url: &str) -> Result<Url, String> {
        let parsed = Url::parse(url).map_err(|e| format!("is not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("must be an http:// or https:// URL".into());
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err("may not carry a user name or password".into());
        }
        match parsed.host_str() {
            None | Some("") => Err("has no host".into()),
            Some(_) => Ok(parsed),
        }
    }

    fn names_allowed(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed
            .iter()
            .any(|entry| matches!(entry, Allowed::Name(name) if *name == host))
    }

    fn address_refusal(&self, host: &str, ip: IpAddr) -> Option<String> {
        let ip = canonical(ip);
        let carried = match addresses::class(ip) {
            Class::Carries(v4) => Some(IpAddr::V4(v4)),
            Class::Public | Class::Internal => None,
        };
        if !addresses::is_internal(ip)
            || self.ip_allowed(ip)
            || carried.is_some_and(|v4| self.ip_allowed(v4))
        {
            return None;
        }
        let shown = if host == ip.to_string() {
            format!("`{ip}`")
        } else {
            format!("`{host}` ({ip})")
        };
        let what = "a loopback, private, link-local or otherwise internal address";
        let allow = "ASKBRIDGE_CALLBACK_ALLOW can allow it";
        Some(match carried {
            Some(v4) => format!("{shown} carries the IPv4 address {v4}, {what}; {allow}"),
            None => format!("{shown} is {what}; {allow}"),
        })
    }

    fn ip_allowed(&self, ip: IpAddr) -> bool {
        self.allowed.iter().any(|entry| match entry {
            Allowed::Net(net, bits) => in_net(ip, *net, *bits),
            Allowed::Name(_) => false,
        })
    }

    /// An HTTP client for callbacks: it connects only where this policy allows, follows no
    /// redirect, and gives up after `timeout`.
    pub fn client(&self, timeout: Duration) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(self.clone()))
            .build()
            .expect("the callback client builds")
    }
}

/// The resolver the callback client connects through: addresses this policy refuses are dropped.
impl Resolve for Egress {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses = policy.lookup.lookup(&host).await?;
            let named = policy.names_allowed(&host);
            let kept: Vec<SocketAddr> = addresses
                .into_iter()
                .filter(|ip| named || policy.address_refusal(&host, *ip).is_none())
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if kept.is_empty() {
                let why = format!("callback host `{host}` resolves only to internal addresses");
                return Err(why.into());
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

fn parse_entry(entry: &str) -> Result<Allowed, String> {
    let bad = || format!("`{entry}` is not a host name, an address or a network like 10.0.0.0/8");
    if let Some((net, bits)) = entry.split_once('/') {
        let net: IpAddr = net.parse().map_err(|_| bad())?;
        let bits: u8 = bits.parse().map_err(|_| bad())?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        return if bits <= max {
            Ok(Allowed::Net(canonical(net), bits))
        } else {
            Err(bad())
        };
    }
    let literal = entry.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = literal.parse::<IpAddr>() {
        let ip = canonical(ip);
        return Ok(Allowed::Net(ip, if ip.is_ipv4() { 32 } else { 128 }));
    }
    let name = entry.trim_end_matches('.').to_ascii_lowercase();
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    if valid {
        Ok(Allowed::Name(name))
    } else {
        Err(bad())
    }
}

/// IPv4-mapped IPv6 addresses are their IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<IpAddr>);

    impl Lookup for Fixed {
        fn lookup(&self, _: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
            let found = self.0.clone();
            Box::pin(async move { Ok(found) })
        }
    }

    fn resolving_to(ip: &str) -> Egress {
        Egress::public_only().with_lookup(Arc::new(Fixed(vec![ip.parse().unwrap()])))
    }

    #[tokio::test]
    async fn internal_literals_are_refused_in_every_spelling() {
        let policy = resolving_to("93.184.216.34");
        for url in [
            "http://127.0.0.1:6379/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://0.0.0.0/",
            "http://[fd00:ec2::254]/",
            "http://user:pw@example.com/",
            "http://",
            "ftp://example.com/",
        ] {
            assert!(policy.refusal(url).await.is_some(), "{url} passed");
        }
        assert_eq!(policy.refusal("https://example.com/cb").await, None);
        assert_eq!(policy.refusal("http://93.184.216.34/cb").await, None);
    }

    #[tokio::test]
    async fn names_are_judged_by_what_they_resolve_to() {
        let why = resolving_to("10.0.0.7")
            .refusal("https://internal.test/cb")
            .await
            .unwrap();
        assert!(
            why.contains("internal.test") && why.contains("10.0.0.7"),
            "{why}"
        );
        assert!(
            resolving_to("10.0.0.7")
                .allow(["internal.test"])
                .unwrap()
                .refusal("https://internal.test/cb")
                .await
                .is_none()
        );
        assert!(
            resolving_to("10.0.0.7")
                .allow(["10.0.0.0/8"])
                .unwrap()
                .refusal("https://internal.test/cb")
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn the_connecting_resolver_drops_internal_addresses() {
        // Rebinding: public when the question was created, private when the callback connects.
        let policy = resolving_to("127.0.0.1");
        let name: Name = "rebound.test".parse().unwrap();
        let error = match policy.resolve(name).await {
            Ok(_) => panic!("a loopback address got through"),
            Err(error) => error.to_string(),
        };
        assert!(error.contains("internal"), "{error}");
        let allowed = resolving_to("127.0.0.1").allow(["127.0.0.0/8"]).unwrap();
        let found: Vec<_> = allowed
            .resolve("rebound.test".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn allow_entries_are_checked() {
        assert!(Egress::public_only().allow(["10.0.0.0/33"]).is_err());
        assert!(Egress::public_only().allow(["not a host"]).is_err());
        assert!(
            Egress::public_only()
                .allow(["::1", "[::1]", "a.example", " "])
                .is_ok()
        );
    }
}
