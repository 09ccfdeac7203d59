//! The command line: what each subcommand takes, parsed by clap.
//!
//! Two kinds of commands: those that run askbridge (`serve`, `demo`: see [`server`]) and those
//! that talk to a running one over its HTTP API (`pending`, `audit`, `ask`, `confirm`, `approve`,
//! `exec`: see [`client`], [`ask`], [`exec`]). The second kind reads only `ASKBRIDGE_URL`,
//! `ASKBRIDGE_API_TOKEN` and `ASKBRIDGE_SESSION`, so a script needs nothing else.
//!
//! Exit codes of `ask`, `confirm` and `approve` are an interface, listed in [`ExitCode`]'s
//! constants and the README.

/// `println!` for every line the command line prints that may hold text from the server (a
/// question, an answer, an audit record, a refusal that repeats what it refused): escaped as the
/// console escapes ([`askbridge_core::text::printable`]), so no stored or echoed text can drive
/// the terminal. (`--json` output is JSON, which escapes control characters itself.)
macro_rules! say {
    ($($arg:tt)*) => {
        println!("{}", askbridge_core::text::printable(&format!($($arg)*)))
    };
}

/// [`say!`] on standard error.
macro_rules! tell {
    ($($arg:tt)*) => {
        eprintln!("{}", askbridge_core::text::printable(&format!($($arg)*)))
    };
}

pub(crate) mod actions;
pub(crate) mod ask;
mod chats;
pub(crate) mod client;
pub(crate) mod exec;
mod late;
pub(crate) mod mcp;
pub(crate) mod server;

use clap::{Args, Parser, Subcommand};

/// Ask people questions on the chat channels they already use.
#[derive(Debug, Parser)]
#[command(name = "askbridge", version, about, long_about = None)]
#[command(
    after_help = "Settings of `serve` and `demo` come from the environment and a .env file: \
see `askbridge serve --help` and .env.example."
)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run the demo: HTTP API, console, and an example function asking questions.
    Demo(ServeArgs),
    /// Run the bridge with the configured store and channels.
    #[command(after_help = server::SETTINGS_HELP.as_str())]
    Serve(ServeArgs),
    /// List the pending questions of a running askbridge.
    Pending(PendingArgs),
    /// The audit trail: resolutions, refusals, rules.
    Audit(AuditArgs),
    /// Ask a question and print the answer (exit 0 answered, 2 error, 3 declined, 4 timed out,
    /// 5 cancelled, 130 interrupted).
    Ask(AskArgs),
    /// Ask yes or no: exit 0 for yes, 1 for no (for `if askbridge confirm ...; then`).
    Confirm(ConfirmArgs),
    /// Ask for approval of an action: exit 0 allowed (prints once or always), 3 rejected. With
    /// --actions FILE, several actions: one line per decision, exit 0 all may run, 3 none, 7 some.
    Approve(ApproveArgs),
    /// Run a command whose questions belong to one session, cancelled when it ends.
    Exec(ExecArgs),
    /// Serve MCP over stdio (what an agent client launches), asking through a running askbridge.
    Mcp(McpArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `serve` and `demo`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Keep questions in memory only (nothing survives a restart).
    #[arg(long)]
    pub(crate) ephemeral: bool,
}

/// Where a running askbridge is.
#[derive(Debug, Clone, Args)]
pub(crate) struct Remote {
    /// Base URL of a running askbridge (default: http://ASKBRIDGE_HTTP_ADDR, http://127.0.0.1:8080).
    #[arg(long, env = "ASKBRIDGE_URL", global = true)]
    pub(crate) url: Option<String>,
}

/// `pending`.
#[derive(Debug, Args)]
pub(crate) struct PendingArgs {
    /// Only this session's.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// The questions as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) remote: Remote,
}

/// `audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Only this session's.
    #[arg(long)]
    pub(crate) session: Option<String>,
    /// Since an RFC 3339 time or a span back from now (90s, 30m, 2h, 7d).
    #[arg(long)]
    pub(crate) since: Option<String>,
    /// The records as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) remote: Remote,
}

/// What every question asked from the shell may say.
#[derive(Debug, Clone, Args)]
pub(crate) struct Common {
    /// Where to show it, comma-separated (telegram:-100123, discord:456, console).
    #[arg(long = "to", value_delimiter = ',')]
    pub(crate) targets: Vec<String>,
    /// Who may answer, comma-separated (telegram:42, discord:7, api).
    #[arg(long, value_delimiter = ',')]
    pub(crate) answerers: Vec<String>,
    /// How long to wait: 90s, 10m, 2h, 1d or seconds (default: the server's).
    #[arg(long, value_parser = parse_duration)]
    pub(crate) timeout: Option<f64>,
    /// More text under the question.
    #[arg(long)]
    pub(crate) detail: Option<String>,
    /// Re-announce it after this long unanswered: 10m, 1h ... (at least ASKBRIDGE_REMINDER_GAP_S).
    #[arg(long, value_parser = parse_duration)]
    pub(crate) remind_after: Option<f64>,
    /// How many reminders at most (1 to 3; default 1).
    #[arg(long, requires = "remind_after")]
    pub(crate) reminders: Option<u32>,
    /// Needs this many of --answerers to agree (each votes once).
    #[arg(long, requires = "answerers")]
    pub(crate) quorum: Option<u32>,
    /// The session (default: ASKBRIDGE_SESSION, else a new one).
    #[arg(long, env = "ASKBRIDGE_SESSION")]
    pub(crate) session: Option<String>,
    /// Print the whole question with its resolution as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) remote: Remote,
}

/// `ask`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The question.
    pub(crate) prompt: String,
    /// The choices, comma-separated (none: free text).
    #[arg(long, value_delimiter = ',')]
    pub(crate) options: Vec<String>,
    /// Several choices may be picked (printed one per line).
    #[arg(long)]
    pub(crate) multi: bool,
    /// Free text is accepted besides the options.
    #[arg(long)]
    pub(crate) allow_custom: bool,
    /// The answer when nobody answers in time (for --multi, comma-separated).
    #[arg(long)]
    pub(crate) default: Option<String>,
    /// Ask for a form: a JSON file with its fields (`{"type": "object", "properties": ...}`);
    /// the answer is printed as a JSON object.
    #[arg(long, conflicts_with_all = ["options", "multi", "allow_custom"])]
    pub(crate) form: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// `confirm`.
#[derive(Debug, Args)]
pub(crate) struct ConfirmArgs {
    /// The question.
    pub(crate) prompt: String,
    /// The answer when nobody answers in time: yes or no.
    #[arg(long, value_parser = ["yes", "no"])]
    pub(crate) default: Option<String>,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// `approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The tool or action to approve (terraform, deploy, rm).
    #[arg(long, required_unless_present = "actions")]
    pub(crate) tool: Option<String>,
    /// A file holding a JSON array of actions ({"tool", "args", "allowed"?, "args_schema"?}),
    /// decided one by one in one approval; prints one line per decision (`2 edit {...}`,
    /// `3 reject <why>`).
    #[arg(long, conflicts_with_all = ["tool", "allow", "schema"])]
    pub(crate) actions: Option<std::path::PathBuf>,
    /// Its arguments as JSON; the approval is bound to their digest.
    #[arg(long, default_value = "{}")]
    pub(crate) args: String,
    /// The question (default: `Allow <tool>?`).
    #[arg(long)]
    pub(crate) prompt: Option<String>,
    /// The decisions offered, comma-separated among once, always, edit, reject, respond
    /// (default: once,always,reject).
    #[arg(long)]
    pub(crate) allow: Option<String>,
    /// A file holding the JSON Schema edited arguments must fit.
    #[arg(long)]
    pub(crate) schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// `exec`.
#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The session its questions belong to (default: a new one).
    #[arg(long)]
    pub(crate) session: Option<String>,
    #[command(flatten)]
    pub(crate) remote: Remote,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) command: Vec<String>,
}

/// `mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The session the agent's questions belong to (default: ASKBRIDGE_SESSION, else a new one).
    #[arg(long, env = "ASKBRIDGE_SESSION")]
    pub(crate) session: Option<String>,
    /// Seconds between progress notifications while a tool call waits.
    #[arg(long, env = "ASKBRIDGE_MCP_PROGRESS_S", default_value_t = 15.0)]
    pub(crate) progress_s: f64,
    #[command(flatten)]
    pub(crate) remote: Remote,
}

/// `90s`, `10m`, `2h`, `1d` or plain seconds, as seconds.
pub(crate) fn parse_duration(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (number, per) = match text.chars().last() {
        Some('s') => (&text[..text.len() - 1], 1.0),
        Some('m') => (&text[..text.len() - 1], 60.0),
        Some('h') => (&text[..text.len() - 1], 3600.0),
        Some('d') => (&text[..text.len() - 1], 86_400.0),
        _ => (text, 1.0),
    };
    match number.parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(n * per),
        _ => Err(format!(
            "`{text}` is not a duration like 90s, 10m, 2h or 1d"
        )),
    }
}

/// The exit codes of `ask`, `confirm` and `approve`.
pub(crate) struct ExitCode;

impl ExitCode {
    /// Answered (confirm: yes; approve: allowed).
    pub(crate) const ANSWERED: u8 = 0;
    /// confirm: answered no.
    pub(crate) const NO: u8 = 1;
    /// Usage error, or the server failed or could not be reached.
    pub(crate) const ERROR: u8 = 2;
    /// Declined (approve: rejected); the person's message on stderr.
    pub(crate) const DECLINED: u8 = 3;
    /// Timed out with no default.
    pub(crate) const TIMEOUT: u8 = 4;
    /// Cancelled by someone else (the session was cancelled, `exec` ended).
    pub(crate) const CANCELLED: u8 = 5;
    /// approve: the person responded in the tool's place; nothing runs, their text on stdout.
    pub(crate) const RESPONDED: u8 = 6;
    /// approve --actions: some actions may run and some may not; the lines say which.
    pub(crate) const SOME: u8 = 7;
    /// Interrupted (Ctrl-C): the question was cancelled and its buttons withdrawn.
    pub(crate) const INTERRUPTED: u8 = 130;
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m"), Ok(600.0));
        assert_eq!(parse_duration("90"), Ok(90.0));
        assert_eq!(parse_duration("1.5h"), Ok(5400.0));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
