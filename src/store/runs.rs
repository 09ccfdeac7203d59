//! What writing a run did: saved, lost to another holder, or parked on a question whose id is
//! taken.

/// What saving a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    /// Another process holds the run now; nothing was written.
    Lost,
    /// Written.
    Written,
    /// Written as waiting, but the question it waits on was resolved meanwhile (its resume found
    /// the run still busy): take the run up again.
    WaitsOnResolved,
}

/// What parking a run on a new question did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parked {
    /// The question was stored, and the run saved as this says ([`Saved::Lost`]: the run is
    /// held by another, and nothing at all was written).
    Saved(Saved),
    /// A question with its id exists already (a replay after a crash, or an approval stored
    /// when asked): nothing was written; check it and save the run on its own.
    QuestionTaken,
}
