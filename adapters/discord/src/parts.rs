//! The plain parts of a Discord message's components and Discord's limits on them: what
//! [`crate::layout`] and [`crate::batch`] decide, kept as values so that both can be tested
//! without serenity's builders (which expose nothing). A leaf: it imports nothing of the crate.

/// Discord's limit on message content, in characters.
pub(crate) const CONTENT_CHARS: usize = 2000;
/// Discord's limit on a button label, in characters.
pub(crate) const BUTTON_LABEL_CHARS: usize = 80;
/// Discord's limit on a select option's label, in characters.
pub(crate) const OPTION_LABEL_CHARS: usize = 100;
/// Buttons in one action row.
pub(crate) const BUTTONS_PER_ROW: usize = 5;
/// Action rows in one message.
pub(crate) const ROWS: usize = 5;
/// The most options shown as buttons: with Decline they fill the 5 rows of 5.
pub(crate) const MAX_OPTION_BUTTONS: usize = BUTTONS_PER_ROW * ROWS - 1;

/// One component, as decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// A button: label (already shortened), custom_id, style.
    Button {
        label: String,
        custom_id: String,
        style: Style,
    },
    /// A string select menu.
    Select {
        custom_id: String,
        placeholder: String,
        /// (label, value) pairs; values are option numbers.
        options: Vec<(String, String)>,
        min: u8,
        max: u8,
    },
}

/// A button's colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Primary,
    Secondary,
    Success,
    Danger,
}
