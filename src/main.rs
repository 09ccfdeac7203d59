//! The `askbridge` command. What each subcommand takes is in `cli/mod.rs`; `serve` and `demo`
//! in `cli/server.rs`; the commands that talk to a running askbridge in the other `cli/` files.

mod cli;

use clap::{CommandFactory, Parser};
use cli::{Cli, Command};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Err(error) = dotenvy::dotenv()
        && !error.not_found()
    {
        eprintln!("askbridge: cannot read .env: {error}");
        return std::process::ExitCode::from(cli::ExitCode::ERROR);
    }
    let threads = match askbridge::config::worker_threads(|name| std::env::var(name).ok()) {
        Ok(threads) => threads,
        Err(error) => {
            eprintln!("askbridge: {error}");
            return std::process::ExitCode::from(cli::ExitCode::ERROR);
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = threads {
        builder.worker_threads(threads);
    }
    let runtime = match builder
        .enable_all()
        // The embedded store reads on blocking threads; a thousand waiters each reading once
        // would otherwise grow the pool to hundreds of threads. Reads queue for a free one.
        .max_blocking_threads(16)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("askbridge: cannot start the async runtime: {error}");
            return std::process::ExitCode::from(cli::ExitCode::ERROR);
        }
    };
    let code = runtime.block_on(run(cli.command));
    // The console reads stdin on a blocking thread that never returns on its own; do not wait
    // for it once the work is done.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    std::process::ExitCode::from(code)
}

/// Runs a command; its exit code.
async fn run(command: Command) -> u8 {
    let result = match command {
        Command::Demo(args) => cli::server::demo(args).await.map(|()| 0),
        Command::Serve(args) => cli::server::serve(args).await.map(|()| 0),
        Command::Pending(args) => cli::client::pending(args).await.map(|()| 0),
        Command::Audit(args) => cli::client::audit(args).await.map(|()| 0),
        Command::Ask(args) => return cli::ask::ask(args).await,
        Command::Confirm(args) => return cli::ask::confirm(args).await,
        Command::Approve(args) => {
            return match args.actions.clone() {
                Some(file) => cli::actions::approve_actions(args, &file).await,
                None => cli::ask::approve(args).await,
            };
        }
        Command::Exec(args) => return cli::exec::exec(args).await,
        Command::Mcp(args) => cli::mcp::mcp(args).await.map(|()| 0),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "askbridge",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
    };
    result.unwrap_or_else(|error| {
        // The chain, each cause once (a store error's cause is its source, not in its words).
        // Escaped as the console escapes: a refusal may repeat what the server was sent.
        let chain = askbridge_core::error::Chain(&*error).to_string();
        eprintln!("askbridge: {}", askbridge_core::text::printable(&chain));
        cli::ExitCode::ERROR
    })
}
