//! The examples `askbridge demo` runs: a function asking a choice, a confirm, a multi-select and a
//! free-text question on the console (answerable over HTTP from another terminal too), and the
//! `release` flow, a follow-up run started from a chat message.

use crate::console::Console;
use crate::{AskError, Error, Flows, NoAnswer, Session};
use askbridge_core::{Answer, Millis, NewQuestion};
use std::time::Duration;

/// How long each demo question waits.
const DEMO_TIMEOUT: Duration = Duration::from_secs(300);

fn describe(result: &Result<Answer, AskError>) -> String {
    match result {
        Ok(answer) => format!("got {answer}"),
        Err(AskError::NoAnswer(NoAnswer::Declined {
            message: Some(message),
        })) => format!("declined: {message}"),
        Err(AskError::NoAnswer(NoAnswer::Declined { message: None })) => "declined".to_owned(),
        Err(AskError::NoAnswer(NoAnswer::Timeout { .. })) => "nobody answered in time".to_owned(),
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

/// `flows` with the example flows: `/release [version]` asks three questions, then "publishes"
/// in a step (which runs once however many times the run is replayed).
pub fn with_example_flows(flows: Flows) -> Result<Flows, Error> {
    flows.flow(
        "release",
        "asks three questions, then publishes a release",
        |ctx| async move {
            let version = match ctx.input() {
                "" => "1.0.0".to_owned(),
                given => given.to_owned(),
            };
            let channel = ctx
                .ask(
                    NewQuestion::ask(format!("Release {version} on which channel?"))
                        .options(["stable", "beta", "nightly"]),
                )
                .await?;
            let notes = ctx
                .ask(NewQuestion::ask("One line for the release notes?"))
                .await?;
            let go = ctx
                .confirm(NewQuestion::confirm(format!(
                    "Publish {version} on {channel}?"
                )))
                .await?;
            if !go {
                return Ok(format!("{version} was not published."));
            }
            let published = ctx
                .step("publish", async move {
                    format!("{version} on {channel} at {}", Millis::now())
                })
                .await?;
            Ok(format!("Published {published}. Notes: {notes}"))
        },
    )
}
