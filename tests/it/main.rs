#![allow(unreachable_pub, missing_debug_implementations, clippy::unwrap_used)]

//! askbridge's integration tests: one test binary (link time on 2 cores), one module per area.
//! Redis tests start their own `redis-server` on a free loopback port in a temp dir; browser tests
//! start their own headless Chromium; chat adapters talk to fakes on loopback.

mod cdp;
mod fakes;
mod mail_servers;
mod mails;
mod redis_cluster;
mod redis_server;
mod replicas;
mod support;

mod approvals;
mod approvals_edit;
mod architecture;
mod batches;
mod batches_telegram;
mod bridge;
mod claim_race;
mod cli;
mod cli_batch;
mod cluster;
mod command_budget;
mod connections;
mod console;
mod demo;
mod discord;
mod discord_batch;
mod email;
mod email_batch;
mod email_crash;
mod email_decisions;
mod email_life;
mod email_links;
mod exec;
mod faults;
mod flows;
mod forms;
mod hardening;
mod http_api;
mod idempotency;
mod mcp;
mod mcp_batch;
mod nudges;
mod own_events;
mod python_client;
mod quorum;
mod replica_wait;
mod restart;
mod rules;
mod runs_crash;
mod settings;
mod slack;
mod slack_batch;
mod slack_bench;
mod slack_modals;
mod slack_socket;
mod store_conformance;
mod telegram;
mod text_policy;
mod web;
mod web_floor;
