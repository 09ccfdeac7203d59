//! The key layout (see the table in [`super`]). Every key name is built here, so the layout can be
//! read, and changed, in one place.

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "askbridge";

/// Key names under one prefix.
#[derive(Clone, Debug)]
pub(super) struct Keys {
    prefix: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_owned(),
        }
    }

    pub(super) fn question(&self, id: &str) -> String {
        format!("{}:{{{id}}}:q", self.prefix)
    }
    pub(super) fn shown(&self, id: &str) -> String {
        format!("{}:{{{id}}}:shown", self.prefix)
    }
    pub(super) fn effects(&self, id: &str) -> String {
        format!("{}:{{{id}}}:fx", self.prefix)
    }
    pub(super) fn open(&self) -> String {
        format!("{}:open", self.prefix)
    }
    pub(super) fn all(&self) -> String {
        format!("{}:all", self.prefix)
    }
    pub(super) fn session(&self, session: &str) -> String {
        format!("{}:session:{session}", self.prefix)
    }
    pub(super) fn target(&self, target: &str) -> String {
        format!("{}:target:{target}", self.prefix)
    }
    pub(super) fn run(&self, id: &str) -> String {
        format!("{}:{{{id}}}:run", self.prefix)
    }
    pub(super) fn run_leases(&self) -> String {
        format!("{}:runs:leases", self.prefix)
    }
    pub(super) fn rules(&self) -> String {
        format!("{}:rules", self.prefix)
    }
    pub(super) fn audit(&self) -> String {
        format!("{}:audit", self.prefix)
    }
    pub(super) fn seen(&self, key: &str) -> String {
        format!("{}:seen:{key}", self.prefix)
    }
    pub(super) fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_one_question_share_a_hash_tag() {
        let keys = Keys::new(DEFAULT_PREFIX);
        assert_eq!(keys.question("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:q");
        assert_eq!(keys.shown("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:shown");
        assert_eq!(keys.effects("k3f9x2m8qa"), "askbridge:{k3f9x2m8qa}:fx");
    }
}
