//! Discord adapter (built in the Discord issue).
