//! Slack's limits and the action ids of the modal openers, which the message's blocks
//! (`blocks.rs`) and a batch's blocks (`batch.rs`) share. A leaf: it imports nothing of the
//! crate.

/// Slack's limit on a button's text, in characters.
pub const BUTTON_TEXT_CHARS: usize = 75;
/// Slack's limit on the elements of one actions block.
pub const ACTIONS_ELEMENTS: usize = 25;
/// The action id of "Reject with a reason…".
pub const REASON_ACTION: &str = "askbridge-modal-reason";
/// The action id of an approval's Edit button when its arguments are edited in a modal.
pub const EDIT_ACTION: &str = "askbridge-modal-edit";
