//! The store's own error: what kind of failure, and its cause.
//!
//! Callers decide by [`Error::is_retryable`], askbridge's one word for "trying again later may
//! work" (see `askbridge_core::error`): true for [`ErrorKind::Unavailable`] (Redis restarting, a
//! connection dropped, the disk busy), false for [`ErrorKind::Corrupt`], which will fail again the
//! same way (a record that no longer reads), so whatever met it should stop and say so rather than
//! retry for ever. The store never uses the bridge's error type (the store sits below the bridge).
//!
//! As in twilight, the error is a kind and a source: `Display` says the store's part (the kind
//! and the operation or record) and `source()` gives the cause, so what shows the error to a
//! person shows the chain (`askbridge_core::error::Chain`).

use std::fmt;

/// What kind of failure. Whether to retry is [`Error::is_retryable`]'s answer, not a match on
/// this: a kind added later is then retried (or not) by every caller unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The store could not be reached or did not answer; trying again later may work.
    Unavailable,
    /// A stored record does not read (corrupt, or written by an incompatible version).
    Corrupt,
}

/// A store failure. Its message names the operation or record; the cause is kept as the source.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl Error {
    /// A failure of `kind`, described by `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The store did not answer while doing `what`.
    pub fn unavailable(
        what: impl fmt::Display,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::new(ErrorKind::Unavailable, what.to_string()).with_source(source)
    }

    /// `record` does not read.
    pub fn corrupt(record: impl fmt::Display, why: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Corrupt, format!("{record} does not read: {why}"))
    }

    /// Attaches the cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True when trying again later may work (the store did not answer).
    pub fn is_retryable(&self) -> bool {
        match self.kind {
            ErrorKind::Unavailable => true,
            ErrorKind::Corrupt => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Unavailable => write!(f, "store unavailable ({})", self.message),
            ErrorKind::Corrupt => write!(f, "corrupt record: {}", self.message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// The result of a store operation.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    use askbridge_core::error::Chain;
    use std::error::Error as _;

    #[test]
    fn the_kind_shows_and_the_cause_is_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = Error::unavailable("claim", io);
        assert!(error.is_retryable());
        assert_eq!(error.to_string(), "store unavailable (claim)");
        assert_eq!(error.source().unwrap().to_string(), "refused");
        assert_eq!(
            Chain(&error).to_string(),
            "store unavailable (claim): refused"
        );
        let error = Error::corrupt("run rabc", "expected value at line 1");
        assert_eq!(error.kind(), ErrorKind::Corrupt);
        assert!(!error.is_retryable());
        assert!(
            error
                .to_string()
                .starts_with("corrupt record: run rabc does not read")
        );
    }
}
