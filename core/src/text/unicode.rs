//! The Unicode properties the text policy is stated in, as tables of code points.
//!
//! Written out by hand rather than pulled from a crate: the standard library already answers
//! general category Cc (`char::is_control`) and White_Space (`char::is_whitespace`); what is
//! left is two small, stable properties and a list of look-alike blanks. The tables are those of
//! Unicode 16.0 (`PropList.txt` for Bidi_Control, `DerivedCoreProperties.txt` for
//! Default_Ignorable_Code_Point); both properties are closed to new direction controls in
//! practice, and a new ignorable code point would only be refused by an all-blank check later.

/// Bidi_Control (Unicode 16.0, `PropList.txt`, 12 code points): ALM, LRM, RLM, the embeddings and
/// overrides LRE, RLE, PDF, LRO, RLO, and the isolates LRI, RLI, FSI, PDI. Each changes the order
/// in which the text around it is shown.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

/// Default_Ignorable_Code_Point (Unicode 16.0, `DerivedCoreProperties.txt`): characters a
/// renderer shows as nothing when it has no glyph for them (soft hyphen, zero-width spaces and
/// joiners, variation selectors, Hangul fillers, tag characters, ...).
pub fn is_default_ignorable(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFF8}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Characters that are neither White_Space nor Default_Ignorable but are drawn as an empty cell
/// by common fonts, and are used for that: BRAILLE PATTERN BLANK, the Hangul fillers (also
/// ignorable; listed so the list reads whole) and MUSICAL SYMBOL NULL NOTEHEAD.
pub fn is_lookalike_blank(c: char) -> bool {
    matches!(
        c,
        '\u{2800}' | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{1D159}'
    )
}

/// Line and paragraph separators (general categories Zl and Zp): line breaks that many surfaces
/// do not show as breaks.
pub fn is_line_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// Shows nothing: White_Space, Default_Ignorable_Code_Point or a look-alike blank.
pub fn is_blank(c: char) -> bool {
    c.is_whitespace() || is_default_ignorable(c) || is_lookalike_blank(c)
}
