//! Follow-up runs: a chat message starts a flow, its asks return "pending", the next message
//! resumes it; steps run once; crashes and races resume exactly once; HTTP flows and callbacks.
//!
//! By feature: `chat` (runs started and resumed from chat, declines, errors, blocking mode),
//! `durability` (nothing held in memory, crashes and races resumed once, writes in order),
//! `endpoints` (HTTP flows, callbacks, runs over the API, approvals), `clients` (a client
//! following a run). Here: the flows and helpers they share.

use crate::support::{
    Call, FakeChannel, RedisServer, api_origin, bridge_over, bridge_running, bridge_with,
    eventually, eventually_some, http, memory_bridge, memory_bridge_running, message, serve,
    serve_api,
};
use askbridge::bridge::Attempt;
use askbridge::bridge::{Bridge, Storing};
use askbridge::config::Secret;
use askbridge::flows::FlowContext;
use askbridge::flows::http::HttpFlow;
use askbridge::http::{AppState, app};
use askbridge::signing;
use askbridge::store::memory::MemoryStore;
use askbridge::store::{ListFilter, Store, StoreOptions};
use askbridge::{BridgeOptions, Error, Flows, Interrupt, NoAnswer};
use askbridge_core::run::{Origin, RunState};
use askbridge_core::{Actor, Answer, Inbox, Millis, NewQuestion, Question, Transition};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

mod batch;
mod chat;
mod clients;
mod durability;
mod endpoints;

const WITHIN: Duration = Duration::from_secs(10);

/// Counts how often the flow's code ran, and how often its step's side effect happened.
#[derive(Clone, Default)]
struct Counters {
    executions: Arc<AtomicUsize>,
    side_effects: Arc<AtomicUsize>,
}

/// A flow with three asks and a step: the shape the issue asks to test.
fn trip(counters: &Counters) -> Flows {
    let counters = counters.clone();
    Flows::new()
        .flow("trip", "plans a trip", move |ctx: FlowContext| {
            let counters = counters.clone();
            async move {
                counters.executions.fetch_add(1, Ordering::SeqCst);
                let city = ctx.input().to_owned();
                let transport = ctx
                    .ask(
                        NewQuestion::ask(format!("How do we get to {city}?"))
                            .options(["train", "plane", "car"]),
                    )
                    .await?;
                let nights = match ctx
                    .ask(NewQuestion::ask("How many nights?").options(["1", "2", "3"]))
                    .await
                {
                    Ok(nights) => nights.to_string(),
                    Err(Interrupt::NoAnswer(NoAnswer::Declined { message })) => {
                        format!("unknown ({})", message.unwrap_or_default())
                    }
                    Err(other) => return Err(other),
                };
                let side_effects = counters.side_effects.clone();
                let booking = ctx
                    .step("book", async move {
                        format!(
                            "booking #{}",
                            side_effects.fetch_add(1, Ordering::SeqCst) + 1
                        )
                    })
                    .await?;
                let insure = ctx
                    .confirm(
                        NewQuestion::confirm("Add travel insurance?")
                            .timeout(Duration::from_secs(600)),
                    )
                    .await?;
                Ok(format!(
                    "{city} by {transport}, {nights} nights, {booking}, insurance: {insure}"
                ))
            }
        })
        .unwrap()
}

pub(crate) async fn waiting_question(bridge: &Bridge, chat: &str, prompt_start: &str) -> Question {
    let filter = ListFilter {
        target: Some(chat.into()),
        ..ListFilter::pending()
    };
    eventually_some(WITHIN, prompt_start, || {
        let bridge = bridge.clone();
        let filter = filter.clone();
        async move {
            bridge
                .list(&filter)
                .await
                .unwrap()
                .into_iter()
                .find(|q| q.prompt.starts_with(prompt_start))
        }
    })
    .await
}

fn said(channel: &FakeChannel) -> Vec<String> {
    channel
        .calls()
        .into_iter()
        .filter_map(|c| match c {
            Call::Say { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

async fn wait_said(channel: &Arc<FakeChannel>, needle: &str) -> String {
    eventually_some(WITHIN, needle, || {
        let channel = channel.clone();
        let needle = needle.to_owned();
        async move { said(&channel).into_iter().find(|t| t.contains(&needle)) }
    })
    .await
}
