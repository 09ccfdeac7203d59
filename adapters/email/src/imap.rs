//! Receiving: watching a mailbox over IMAP (async-imap) for mail askbridge has not read. What
//! one read does with each mail (fetch, hand over, flag, move) is in `mailbox.rs`.
//!
//! With a server that has IDLE (RFC 2177; Dovecot, Gmail, Fastmail, Exchange do), one connection
//! stays open: read what is new, then IDLE until the server says something arrived (or
//! [`IDLE_RENEW`] passes), and read again. A reply is
//! so read within moments of its delivery, not at the next poll. A server without IDLE is polled
//! every [`POLL_EVERY`], a connection each time. A dropped connection (a restarted server) is
//! opened again after a pause that doubles while it fails.

use crate::mailbox::{Abilities, Folders, read_new};
use crate::{Email, Error, masked_url, percent_decode};
use askbridge_core::{Inbox, Secret};
use async_imap::extensions::idle::IdleResponse;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Time between polls, for a server without IDLE.
const POLL_EVERY: Duration = Duration::from_secs(5);
/// An IDLE is ended and the mailbox read again this often, even when the server said nothing:
/// a connection a restarted or unplugged server left half open is found out this soon (RFC 2177
/// allows up to 29 minutes; a DONE and a SEARCH a minute cost nothing).
const IDLE_RENEW: Duration = Duration::from_secs(30);
/// Ending an IDLE gives up after this (a dead connection).
const IDLE_DONE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait after failed polls.
const MAX_BACKOFF: Duration = Duration::from_secs(120);
/// Connecting and each IMAP command give up after this.
const IMAP_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the mailbox is.
#[derive(Clone, Debug)]
pub struct ImapOptions {
    /// `imaps://` (implicit TLS); `imap://` is plain and meant for loopback.
    pub tls: bool,
    /// Server host.
    pub host: String,
    /// Server port (993 / 143 when the URL has none).
    pub port: u16,
    /// Login name.
    pub user: String,
    /// Password (an app password for most providers).
    pub password: Secret,
    /// The mailbox watched (`INBOX` when the URL has no path).
    pub mailbox: String,
    /// Where read mail is moved (`?processed=<folder>`; [`PROCESSED`] without).
    pub processed: String,
}

/// The folder read mail is moved to when the URL names none.
pub const PROCESSED: &str = "Askbridge";

impl ImapOptions {
    /// Reads `imap[s]://user:password@host[:port][/mailbox][?processed=<folder>]`.
    pub fn parse(url: &str) -> Result<Self, Error> {
        let bad = |reason: &str| Error::BadImapUrl {
            url: masked_url(url),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("not a URL"))?;
        let tls = match scheme {
            "imaps" => true,
            "imap" => false,
            _ => return Err(bad("the scheme must be imaps:// or imap://")),
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut processed = PROCESSED.to_owned();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some(("processed", folder)) if !folder.is_empty() => {
                    processed = percent_decode(folder);
                }
                _ => return Err(bad("the only query parameter is processed=<folder>")),
            }
        }
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (userinfo, hostport) = authority
            .rsplit_once('@')
            .ok_or_else(|| bad("it needs user:password@ before the host"))?;
        let (user, password) = userinfo
            .split_once(':')
            .ok_or_else(|| bad("it needs user:password@ before the host"))?;
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) => (
                host,
                port.parse().map_err(|_| bad("the port is not a number"))?,
            ),
            None => (hostport, if tls { 993 } else { 143 }),
        };
        if host.is_empty() {
            return Err(bad("it has no host"));
        }
        let mailbox = percent_decode(path.trim_start_matches('/'));
        Ok(ImapOptions {
            tls,
            host: host.to_owned(),
            port,
            user: percent_decode(user),
            password: Secret::new(percent_decode(password)),
            mailbox: if mailbox.is_empty() {
                "INBOX".to_owned()
            } else {
                mailbox
            },
            processed,
        })
    }
}

/// An IMAP failure, its text cleaned of the password.
#[derive(Debug, thiserror::Error)]
#[error("IMAP {host}: {message}")]
pub struct ImapError {
    host: String,
    message: String,
}

/// What one connection to the mailbox came to.
enum Outcome {
    /// One read (`poll_once`): how many mails were read.
    Read(usize),
    /// `shutdown` turned true while watching.
    Stopped,
    /// The server has no IDLE: the mailbox was read once, and is polled.
    Polled,
}

/// Watches the mailbox (IDLE, or polls) until `shutdown` turns true.
pub(crate) async fn watch(
    email: &Email,
    options: &ImapOptions,
    inbox: Arc<dyn Inbox>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ImapError> {
    let mut pause = POLL_EVERY;
    loop {
        match connected(email, options, inbox.as_ref(), Some(&mut shutdown)).await {
            Ok(Outcome::Stopped) => return Ok(()),
            Ok(_) => pause = POLL_EVERY,
            Err(error) => {
                tracing::warn!(%error, retry_in = ?pause, "cannot read the mailbox");
                pause = (pause * 2).min(MAX_BACKOFF);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.wait_for(|stopped| *stopped) => return Ok(()),
        }
    }
}

/// One poll: every unseen mail read, handed over and flagged. Returns how many were read.
pub(crate) async fn poll_once(
    email: &Email,
    options: &ImapOptions,
    inbox: &dyn Inbox,
) -> Result<usize, ImapError> {
    match connected(email, options, inbox, None).await? {
        Outcome::Read(read) => Ok(read),
        _ => Ok(0),
    }
}

/// Connects, logs in and selects the mailbox; then reads it once (without `shutdown`), or
/// watches it until `shutdown`.
async fn connected(
    email: &Email,
    options: &ImapOptions,
    inbox: &dyn Inbox,
    shutdown: Option<&mut watch::Receiver<bool>>,
) -> Result<Outcome, ImapError> {
    let fail = |message: String| ImapError {
        host: options.host.clone(),
        message: email.clean(&message),
    };
    let tcp = tokio::time::timeout(
        IMAP_TIMEOUT,
        TcpStream::connect((options.host.as_str(), options.port)),
    )
    .await
    .map_err(|_| fail("connecting timed out".into()))?
    .map_err(|error| fail(format!("cannot connect: {error}")))?;
    if options.tls {
        let tls = tls_connect(&options.host, tcp)
            .await
            .map_err(|error| fail(format!("TLS: {error}")))?;
        on_stream(email, options, inbox, tls, shutdown)
            .await
            .map_err(fail)
    } else {
        on_stream(email, options, inbox, tcp, shutdown)
            .await
            .map_err(fail)
    }
}

async fn tls_connect(
    host: &str,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Box<dyn std::error::Error + Send + Sync>> {
    use tokio_rustls::rustls;
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    Ok(connector.connect(name, tcp).await?)
}

async fn on_stream<T>(
    email: &Email,
    options: &ImapOptions,
    inbox: &dyn Inbox,
    stream: T,
    shutdown: Option<&mut watch::Receiver<bool>>,
) -> Result<Outcome, String>
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    let timed = |what: &'static str| move |_| format!("{what} timed out");
    let mut client = async_imap::Client::new(stream);
    tokio::time::timeout(IMAP_TIMEOUT, client.read_response())
        .await
        .map_err(timed("the greeting"))?
        .map_err(|error| format!("no greeting: {error}"))?;
    let mut session = tokio::time::timeout(
        IMAP_TIMEOUT,
        client.login(&options.user, options.password.expose()),
    )
    .await
    .map_err(timed("login"))?
    .map_err(|(error, _)| format!("login as {} refused: {error}", options.user))?;
    session
        .select(&options.mailbox)
        .await
        .map_err(|error| format!("cannot select {}: {error}", options.mailbox))?;
    let capabilities = session
        .capabilities()
        .await
        .map_err(|error| format!("CAPABILITY failed: {error}"))?;
    let idles = capabilities.has_str("IDLE");
    let mut abilities = Abilities {
        moves: capabilities.has_str("MOVE"),
        folder_made: false,
    };
    if !abilities.moves {
        tracing::info!(host = %options.host, "the IMAP server has no MOVE: read mail stays in {}, flagged", options.mailbox);
    }
    let folders = Folders {
        watched: &options.mailbox,
        processed: &options.processed,
    };
    let Some(shutdown) = shutdown else {
        let read = read_new(email, &folders, inbox, &mut session, &mut abilities).await?;
        logout(session).await;
        return Ok(Outcome::Read(read));
    };
    if !idles {
        tracing::info!(host = %options.host, "the IMAP server has no IDLE: polling every {POLL_EVERY:?}");
    }
    loop {
        read_new(email, &folders, inbox, &mut session, &mut abilities).await?;
        if !idles {
            logout(session).await;
            return Ok(Outcome::Polled);
        }
        let mut idle = session.idle();
        idle.init()
            .await
            .map_err(|error| format!("IDLE refused: {error}"))?;
        let (news, _stop) = idle.wait_with_timeout(IDLE_RENEW);
        tokio::select! {
            heard = news => match heard.map_err(|error| format!("IDLE failed: {error}"))? {
                // Not ours (we keep the stop source): the server closed the connection.
                IdleResponse::ManualInterrupt => return Err("the server ended the connection".into()),
                IdleResponse::NewData(_) | IdleResponse::Timeout => {}
            },
            // Nothing is half done while idle: the connection just closes.
            _ = shutdown.wait_for(|stopped| *stopped) => return Ok(Outcome::Stopped),
        }
        session = tokio::time::timeout(IDLE_DONE_TIMEOUT, idle.done())
            .await
            .map_err(|_| "ending IDLE timed out".to_owned())?
            .map_err(|error| format!("cannot end IDLE: {error}"))?;
    }
}

async fn logout<T>(mut session: async_imap::Session<T>)
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    if let Err(error) = session.logout().await {
        tracing::debug!(%error, "IMAP logout failed");
    }
}

impl Email {
    /// Reads the mailbox once (see the module documentation); `Ok(0)` without a mailbox.
    pub async fn poll_once(&self, inbox: &dyn Inbox) -> Result<usize, ImapError> {
        match &self.imap {
            Some(options) => poll_once(self, options, inbox).await,
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imap_urls() {
        let options =
            ImapOptions::parse("imaps://bot%40x.com:p%40ss@imap.x.com/Ask%20Replies").unwrap();
        assert!(options.tls);
        assert_eq!(options.port, 993);
        assert_eq!(options.user, "bot@x.com");
        assert_eq!(options.password.expose(), "p@ss");
        assert_eq!(options.mailbox, "Ask Replies");
        assert_eq!(options.processed, PROCESSED);
        let options =
            ImapOptions::parse("imap://u:p@127.0.0.1:1143?processed=Done%20Mail").unwrap();
        assert_eq!((options.tls, options.port), (false, 1143));
        assert_eq!(options.mailbox, "INBOX");
        assert_eq!(options.processed, "Done Mail");
        assert!(ImapOptions::parse("imap://u:p@h/INBOX?delete=yes").is_err());
        let error = ImapOptions::parse("pop3://u:hunter2@h")
            .unwrap_err()
            .to_string();
        assert!(
            !error.contains("hunter2") && error.contains("EMAIL_IMAP_URL"),
            "{error}"
        );
    }
}
