//! How long each text people read may be, in characters. A leaf (it imports nothing), so that
//! questions and forms, which hold one another, both take their bounds from one place.

/// Longest option label, in characters (buttons show a shortened form); also a form field's
/// title, choice or choice label.
pub const MAX_LABEL_CHARS: usize = 100;
/// Longest prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 1000;
/// Longest detail, in characters (chat messages shorten it and point to `/show`); also the
/// largest `maxLength` a form field may give.
pub const MAX_DETAIL_CHARS: usize = 8000;
/// Longest free-text answer or decline message, in characters; also a form's text answer when
/// its field gives no `maxLength`.
pub const MAX_ANSWER_CHARS: usize = 4000;
