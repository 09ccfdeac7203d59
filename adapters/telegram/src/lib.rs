//! Telegram adapter (built in the Telegram issue).
