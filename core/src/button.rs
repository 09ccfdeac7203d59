//! A button: a label, and the plain-text command tapping it sends. A leaf module, so that the
//! question's own buttons ([`crate::render`]) and a form's field buttons ([`crate::fill`]) are
//! made the same way.

/// What a button does, so that adapters can colour it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ButtonRole {
    /// Chooses an option or toggles it (`selected` for a chosen toggle).
    Choice {
        /// The toggle is on.
        selected: bool,
    },
    /// Yes, Submit, Allow.
    Accept,
    /// No, Decline, Reject.
    Refuse,
}

/// One button: a label and the command it sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Button {
    /// What the button says (full length; adapters shorten it to their platform's limit).
    pub label: String,
    /// The plain-text command tapping it sends.
    pub payload: String,
    /// What it does.
    pub role: ButtonRole,
    /// The option it chooses or toggles (1-based), for choice buttons.
    pub number: Option<usize>,
}

impl Button {
    pub(crate) fn new(label: impl Into<String>, payload: impl ToString, role: ButtonRole) -> Self {
        Button {
            label: label.into(),
            payload: payload.to_string(),
            role,
            number: None,
        }
    }

    pub(crate) fn for_option(mut self, number: usize) -> Self {
        self.number = Some(number);
        self
    }
}
