//! The benchmark's command line: each figure's size, and which sections run (`--only`).

pub(crate) struct Options {
    pub(crate) cycles: usize,
    pub(crate) concurrency: usize,
    pub(crate) waiters: usize,
    pub(crate) runs: usize,
    pub(crate) pending: usize,
    pub(crate) rules: usize,
    /// Rules of `--only approvals`.
    pub(crate) approval_rules: usize,
    /// Keys of no rule put in the side with none (`--only approvals`), a control for the
    /// keyspace's size.
    pub(crate) approval_ballast: usize,
    /// Failover runs of `--only cluster`.
    pub(crate) failovers: usize,
    /// MCP sessions opened by `--only mcp`.
    pub(crate) sessions: usize,
    /// Questions per platform of `--only chat`, and how many pending meanwhile.
    pub(crate) rounds: usize,
    pub(crate) chat_pending: usize,
    /// Questions of `--only email` (a round takes about a second: most of it is Dovecot's).
    pub(crate) mail_rounds: usize,
    /// Questions pending in `--only million`.
    pub(crate) million: usize,
    pub(crate) only: Vec<String>,
}

pub(crate) fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let number =
        |name: &str, default: usize| value(name).and_then(|v| v.parse().ok()).unwrap_or(default);
    Options {
        cycles: number("--cycles", 20_000),
        concurrency: number("--concurrency", 16),
        waiters: number("--waiters", 1_000),
        runs: number("--runs", 2_000),
        pending: number("--pending", 100_000),
        rules: number("--rules", 10_000),
        approval_rules: number("--approval-rules", 100_000),
        approval_ballast: number("--approval-ballast", 0),
        failovers: number("--failovers", 1),
        sessions: number("--sessions", 10_000),
        rounds: number("--rounds", 1_000),
        chat_pending: number("--chat-pending", 1_000),
        mail_rounds: number("--mail-rounds", 100),
        million: number("--million", 1_000_000),
        only: value("--only")
            .map(|v| v.split(',').map(str::to_owned).collect())
            .unwrap_or_default(),
    }
}

impl Options {
    pub(crate) fn wants(&self, section: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|s| s == section)
    }
}
