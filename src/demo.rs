//! The example function `askbridge demo` runs: a choice, a confirm, a multi-select and a free-text
//! question, each shown on the console (and answerable over HTTP from another terminal).

use crate::console::Console;
use crate::{Error, Session};
use askbridge_core::{Answer, NewQuestion};
use std::time::Duration;

/// How long each demo question waits.
const DEMO_TIMEOUT: Duration = Duration::from_secs(300);

fn describe(result: &Result<Answer, Error>) -> String {
    match result {
        Ok(answer) => format!("got {answer}"),
        Err(Error::Declined {
            message: Some(message),
        }) => format!("declined: {message}"),
        Err(Error::Declined { message: None }) => "declined".to_owned(),
        Err(Error::Timeout { .. }) => "nobody answered in time".to_owned(),
        Err(other) => format!("failed: {other}"),
    }
}

/// Runs the example function in `session`, narrating on `console`.
pub async fn run(session: &Session, console: &Console) {
    let library = session
        .ask(
            NewQuestion::ask("Which library for date formatting?")
                .detail("The function is about to add date handling to the project.")
                .options(["dayjs", "date-fns", "luxon"])
                .allow_custom()
                .timeout(DEMO_TIMEOUT),
        )
        .await;
    console.print(&format!("→ library: {}", describe(&library)));

    let archive = session
        .confirm(
            NewQuestion::confirm("Archive all 87 emails older than a year?")
                .detail("They stay searchable in the archive folder.")
                .timeout(DEMO_TIMEOUT)
                .default_answer(Answer::Bool(false)),
        )
        .await;
    console.print(&format!(
        "→ archive: {}",
        if archive { "yes" } else { "no" }
    ));

    let features = session
        .ask(
            NewQuestion::ask("Which features should ship first?")
                .options(["dark mode", "offline mode", "CSV export", "sync"])
                .multi()
                .timeout(DEMO_TIMEOUT),
        )
        .await;
    console.print(&format!("→ features: {}", describe(&features)));

    let name = session
        .ask(NewQuestion::ask("What should the release be called?").timeout(DEMO_TIMEOUT))
        .await;
    console.print(&format!("→ release name: {}", describe(&name)));
    console.print("The demo function is done.");
}
