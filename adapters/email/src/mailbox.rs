//! One read of the selected mailbox: each mail askbridge has not read is fetched, handed over,
//! flagged, and — when it was sent to a reply address — moved to the processed folder, in that
//! order, so that a crash anywhere loses nothing and answers nothing twice.
//!
//! - Each mail of the last day without the `$AskbridgeRead` keyword (seen by a person or not) is
//!   fetched with `BODY.PEEK[]` (which leaves `\Seen` alone), unless larger than the bound.
//! - [`Email::receive`] hands it to the bridge and returns once the bridge's answer is recorded
//!   (and the confirmation mailed).
//! - Only then is it flagged: `$AskbridgeRead`, and for a mail sent to a reply address (a reply,
//!   whatever became of it) `\Seen` and `$AskbridgeReply` too. Other mail (in a person's own
//!   mailbox, theirs) keeps its `\Seen` and its place. A crash before the flag reads the mail
//!   again after the restart. The bridge drops a second delivery of one `Message-ID` as a
//!   duplicate, so a mail whose answer was recorded before the crash counts once and is
//!   confirmed once; one whose answer was not is answered then.
//! - Last, every `$AskbridgeReply` mail still in the mailbox is moved (`UID MOVE`, RFC 6851) to
//!   the processed folder, created if missing: a crash between flagging and moving leaves flagged
//!   mail, which the next read moves. Nothing is deleted or expunged other than by that move. A
//!   server without MOVE leaves read mail where it is, flagged.
//!
//! `ASKBRIDGE_EMAIL_TEST_HOLD=<fetched|handled|flagged>:<file>` is for the crash tests alone: at that
//! point of the first mail read, the reader writes the mail's UID into `<file>` and waits
//! forever, so a test can SIGKILL askbridge exactly there.

use crate::inbound::to_a_reply_address;
use crate::{Email, Ignored, Received};
use askbridge_core::Inbox;
use futures_util::TryStreamExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use tokio::io::{AsyncRead, AsyncWrite};

/// The keyword set on every mail askbridge has read.
pub(crate) const READ_KEYWORD: &str = "$AskbridgeRead";
/// The keyword set on the mails sent to a reply address, which are moved.
const REPLY_KEYWORD: &str = "$AskbridgeReply";

/// What the server can do, asked once per connection.
pub(crate) struct Abilities {
    /// RFC 6851 `MOVE`.
    pub(crate) moves: bool,
    /// The processed folder was created (or found) on this connection.
    pub(crate) folder_made: bool,
}

/// The mailbox read and the folder read replies are moved to (from the IMAP URL).
pub(crate) struct Folders<'a> {
    /// The mailbox watched.
    pub(crate) watched: &'a str,
    /// Where read replies are moved.
    pub(crate) processed: &'a str,
}

/// Reads, hands over, flags and moves every mail not read yet; returns how many were read.
pub(crate) async fn read_new<T>(
    email: &Email,
    folders: &Folders<'_>,
    inbox: &dyn Inbox,
    session: &mut async_imap::Session<T>,
    abilities: &mut Abilities,
) -> Result<usize, String>
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    // Not `UNSEEN`: a person reading the mailbox may open a reply before askbridge polls. Mail
    // older than a day before now is left alone, so a mailbox with a past is not replayed.
    let since = imap_date(askbridge_core::Millis::now().0 / 1000 - 86_400);
    let mut uids: Vec<u32> = search(session, &format!("UNKEYWORD {READ_KEYWORD} SINCE {since}"))
        .await?
        .into_iter()
        .collect();
    uids.sort_unstable();
    for uid in &uids {
        let mut reply = false;
        if let Some(raw) = fetch(email, session, *uid).await? {
            hold(Point::Fetched, *uid).await;
            let received = email.receive(&raw, inbox).await;
            tracing::debug!(uid, ?received, "mail handled");
            reply = match received {
                Received::Handled { .. } => true,
                Received::Ignored(Ignored::NotForUs) => false,
                Received::Ignored(_) => to_a_reply_address(&raw, &email.policy.addresses),
            };
        }
        hold(Point::Handled, *uid).await;
        let flags = if reply {
            format!("\\Seen {READ_KEYWORD} {REPLY_KEYWORD}")
        } else {
            READ_KEYWORD.to_owned()
        };
        let _: Vec<_> = session
            .uid_store(uid.to_string(), format!("+FLAGS ({flags})"))
            .await
            .map_err(|error| format!("cannot flag a read mail: {error}"))?
            .try_collect()
            .await
            .map_err(|error| format!("cannot flag a read mail: {error}"))?;
        hold(Point::Flagged, *uid).await;
    }
    move_read(folders, session, abilities).await?;
    Ok(uids.len())
}

async fn search<T>(
    session: &mut async_imap::Session<T>,
    query: &str,
) -> Result<std::collections::HashSet<u32>, String>
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    session
        .uid_search(query)
        .await
        .map_err(|error| format!("search failed: {error}"))
}

/// The mail's bytes; `None` (logged) for one over the bound or without a body.
async fn fetch<T>(
    email: &Email,
    session: &mut async_imap::Session<T>,
    uid: u32,
) -> Result<Option<Vec<u8>>, String>
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    let mut fetched = async |what: &str| -> Result<Vec<_>, String> {
        session
            .uid_fetch(uid.to_string(), what)
            .await
            .map_err(|error| format!("fetch failed: {error}"))?
            .try_collect()
            .await
            .map_err(|error| format!("fetch failed: {error}"))
    };
    let size = fetched("RFC822.SIZE")
        .await?
        .iter()
        .find_map(|fetch| fetch.size)
        .unwrap_or(0) as usize;
    if size > email.policy.max_bytes {
        tracing::warn!(
            uid,
            size,
            "a mail larger than the bound: flagged and skipped"
        );
        return Ok(None);
    }
    let body = fetched("BODY.PEEK[]")
        .await?
        .iter()
        .find_map(|fetch| fetch.body().map(<[u8]>::to_vec));
    if body.is_none() {
        tracing::warn!(uid, "a mail without a body: flagged and skipped");
    }
    Ok(body)
}

/// Moves every read reply left in the mailbox to the processed folder.
async fn move_read<T>(
    folders: &Folders<'_>,
    session: &mut async_imap::Session<T>,
    abilities: &mut Abilities,
) -> Result<(), String>
where
    T: AsyncRead + AsyncWrite + Unpin + std::fmt::Debug + Send,
{
    if !abilities.moves || folders.processed.eq_ignore_ascii_case(folders.watched) {
        return Ok(());
    }
    let mut read: Vec<u32> = search(session, &format!("KEYWORD {REPLY_KEYWORD}"))
        .await?
        .into_iter()
        .collect();
    if read.is_empty() {
        return Ok(());
    }
    read.sort_unstable();
    if !abilities.folder_made {
        // Fails when the folder exists (Dovecot: NO [ALREADYEXISTS]); the move below says
        // whether it is really missing.
        if let Err(error) = session.create(&folders.processed).await {
            tracing::debug!(%error, folder = %folders.processed, "CREATE of the processed folder");
        }
        abilities.folder_made = true;
    }
    let set = read
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    session
        .uid_mv(&set, &folders.processed)
        .await
        .map_err(|error| format!("cannot move read mail to {}: {error}", folders.processed))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    Fetched,
    Handled,
    Flagged,
}

/// The crash tests' hold (see the module documentation); nothing without the variable.
async fn hold(point: Point, uid: u32) {
    static HOLD: OnceLock<Option<(Point, PathBuf)>> = OnceLock::new();
    let hold = HOLD.get_or_init(|| {
        let value = std::env::var("ASKBRIDGE_EMAIL_TEST_HOLD").ok()?;
        let (point, file) = value.split_once(':')?;
        let point = match point {
            "fetched" => Point::Fetched,
            "handled" => Point::Handled,
            "flagged" => Point::Flagged,
            _ => return None,
        };
        Some((point, PathBuf::from(file)))
    });
    if let Some((at, file)) = hold
        && *at == point
    {
        tracing::warn!(
            uid,
            ?point,
            "ASKBRIDGE_EMAIL_TEST_HOLD: the mailbox reader stops here"
        );
        if let Err(error) = std::fs::write(file, uid.to_string()) {
            tracing::error!(%error, "ASKBRIDGE_EMAIL_TEST_HOLD: cannot write the file");
        }
        std::future::pending::<()>().await;
    }
}

/// `seconds` since the epoch as an IMAP date (`5-Dec-2026`), in UTC.
fn imap_date(seconds: u64) -> String {
    // Howard Hinnant's days-to-civil algorithm.
    let days = (seconds / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!("{day}-{}-{year}", MONTHS[(month - 1) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imap_dates() {
        assert_eq!(imap_date(0), "1-Jan-1970");
        assert_eq!(imap_date(951_782_400), "29-Feb-2000");
        assert_eq!(imap_date(1_796_515_200), "6-Dec-2026");
    }
}
