//! What this process has recently seen, so the hot path need not read it back from the store.
//!
//! - Questions as asked (every process sees every `question.asked` event): a question's asked
//!   fields never change, so checking an answer against a remembered copy is as good as against
//!   a fresh read; whether it is still pending is the claim's to find out, atomically, in the
//!   store. An answer to a recent question is then one store command: its claim. Once resolved
//!   (a claim won here, or its event), the copy is the resolved question, which never changes
//!   again: a late answer is refused from it, with the winner, as a read would refuse it.
//! - The latest news of runs (parked, ended, or taken up here): a client waiting for a run's
//!   next question is answered from it without a read when it already says enough.
//!
//! Both are bounded (the oldest entries go first) and only ever spare a read: a miss reads the
//! store as before.

use super::waiters::RunNews;
use askbridge_core::{Question, QuestionId, RunId};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Mutex;

/// How many questions are remembered (about 1 KB each).
const QUESTIONS: usize = 10_000;
/// How many runs' news are remembered.
const RUNS: usize = 10_000;

/// A map that forgets its oldest entries beyond a capacity.
#[derive(Debug)]
struct Bounded<K, V> {
    map: HashMap<K, V>,
    order: VecDeque<K>,
    capacity: usize,
}

impl<K: Clone + Eq + Hash, V: Clone> Bounded<K, V> {
    fn new(capacity: usize) -> Self {
        Bounded {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity,
        }
    }

    /// Adds or replaces `key`'s value (a replaced entry keeps its place in the order).
    fn put(&mut self, key: K, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
            while self.order.len() > self.capacity {
                if let Some(oldest) = self.order.pop_front() {
                    self.map.remove(&oldest);
                }
            }
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        self.map.get(key).cloned()
    }

    fn get_ref(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(super) struct Recent {
    questions: Mutex<Bounded<QuestionId, Question>>,
    runs: Mutex<Bounded<RunId, RunNews>>,
}

impl Default for Recent {
    fn default() -> Self {
        Recent {
            questions: Mutex::new(Bounded::new(QUESTIONS)),
            runs: Mutex::new(Bounded::new(RUNS)),
        }
    }
}

impl Recent {
    /// Remembers a question as asked (its status and resolution are not kept: they change),
    /// unless it is remembered already: as asked (its asked fields never change, and a question
    /// asked here is heard of twice, from its ask and from its event), or resolved (its event
    /// may come after the resolution).
    pub(super) fn asked(&self, question: &Question) {
        let mut questions = self.questions.lock().unwrap_or_else(|p| p.into_inner());
        if questions.get_ref(&question.id).is_none() {
            let asked = Question {
                status: askbridge_core::Status::Pending,
                resolution: None,
                ..question.clone()
            };
            questions.put(question.id.clone(), asked);
        }
    }

    /// Remembers a question resolved, unless it is remembered resolved already: a resolution is
    /// final, and one won here is heard of twice (from the claim and from its event).
    pub(super) fn resolved(&self, question: &Question) {
        if question.is_pending() {
            return;
        }
        let mut questions = self.questions.lock().unwrap_or_else(|p| p.into_inner());
        if questions
            .get_ref(&question.id)
            .is_none_or(Question::is_pending)
        {
            questions.put(question.id.clone(), question.clone());
        }
    }

    /// The question as remembered when that copy is as good as a read to claim it with: not a
    /// batch or a quorum's question, whose decisions and votes change it while it is pending
    /// (a claim writes the resolution with those it read, and "all" means the actions
    /// undecided as stored).
    pub(super) fn claimable(&self, id: &QuestionId) -> Option<Question> {
        self.question(id)
            .filter(|q| !q.is_batch() && q.quorum.is_none())
    }

    /// The question as asked, if remembered.
    pub(super) fn question(&self, id: &QuestionId) -> Option<Question> {
        self.questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
    }

    /// Remembers the latest news of a run, unless what is remembered is newer: news comes both
    /// from this process and, later, from the store's events, so a run that parked here on its
    /// third question may then hear from the stream that it parked on its second. False when
    /// `news` is such stale news (nobody should act on it).
    pub(super) fn run_news(&self, news: &RunNews) -> bool {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs
            .get(&news.run.id)
            .is_some_and(|known| progress(&known.run) > progress(&news.run))
        {
            return false;
        }
        runs.put(news.run.id.clone(), news.clone());
        true
    }

    /// True when `run` is exactly the latest news remembered of it: the echo, from the store's
    /// events, of news this process already had (and woke its waiters with).
    pub(super) fn knows_run(&self, run: &askbridge_core::run::Run) -> bool {
        self.run_with(&run.id, |known| *known.run == *run)
            .unwrap_or(false)
    }

    /// The latest news of a run, if remembered.
    pub(super) fn run(&self, id: &RunId) -> Option<RunNews> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner()).get(id)
    }

    /// What `look` finds in the latest news of a run, if remembered, without copying the run
    /// (every event of a run asks this; most need a field or two).
    pub(super) fn run_with<R>(&self, id: &RunId, look: impl FnOnce(&RunNews) -> R) -> Option<R> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_ref(id)
            .map(look)
    }
}

/// How far a run has come: the answers in its journal, then whether it ended. It never goes
/// back over a run's life. Within one step a run is parked, then taken up (the same journal):
/// news of either may replace the other, which at worst makes a waiter read the store; what
/// must never happen — a run seen parked on an earlier question after a later one — cannot.
fn progress(run: &askbridge_core::run::Run) -> (usize, bool) {
    (run.journal.len(), run.state.is_final())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_oldest_entries_go_first() {
        let mut bounded = Bounded::new(2);
        bounded.put(1, "a");
        bounded.put(2, "b");
        bounded.put(1, "a again");
        bounded.put(3, "c");
        assert_eq!(bounded.get(&1), None);
        assert_eq!(bounded.get(&2), Some("b"));
        assert_eq!(bounded.get(&3), Some("c"));
    }

    #[test]
    fn a_question_heard_of_twice_keeps_its_first_copy_and_its_resolution() {
        use askbridge_core::{Actor, Answer, Claim, Millis, NewQuestion, Transition};
        let asked = NewQuestion::ask("Which library?")
            .options(["dayjs", "luxon"])
            .session("s")
            .into_question(QuestionId::random(), Millis(1_000), Duration::from_secs(60))
            .unwrap();
        let resolved_by = |answer: &str| {
            let mut question = asked.clone();
            let value = Answer::Text(answer.into());
            let claim = Claim::new(Transition::Answer { value }, Actor::api(), Millis(2_000));
            question.apply(&claim);
            question
        };
        let recent = Recent::default();
        recent.asked(&asked);
        // Its event: the same question, nothing to replace (a changed copy would show).
        let mut echoed = asked.clone();
        echoed.prompt = "not what was asked".into();
        recent.asked(&echoed);
        assert_eq!(recent.question(&asked.id).unwrap().prompt, asked.prompt);
        // Resolved, then the claim's event: the first resolution stays, and a late `asked`
        // does not make it pending again.
        recent.resolved(&resolved_by("dayjs"));
        recent.resolved(&resolved_by("luxon"));
        recent.asked(&asked);
        let remembered = recent.question(&asked.id).unwrap();
        assert_eq!(remembered.resolution, resolved_by("dayjs").resolution);
        // A pending copy is never taken for a resolution.
        let other = NewQuestion::ask("Another?")
            .session("s")
            .into_question(QuestionId::random(), Millis(1_000), Duration::from_secs(60))
            .unwrap();
        recent.resolved(&other);
        assert!(recent.question(&other.id).is_none());
    }

    #[test]
    fn news_of_an_earlier_step_does_not_replace_a_later_one() {
        use askbridge_core::run::{JournalEntry, Origin, Run, RunState};
        use askbridge_core::{Identity, Millis};
        let origin = Origin {
            chat: None,
            user: Identity::new("api"),
            user_name: None,
        };
        let mut first = Run::new("f", "", origin, "p", Millis(1), Millis(2));
        first.state = RunState::Waiting;
        first.waiting_on = Some(first.question_id(0));
        let mut second = first.clone();
        second.journal.push(JournalEntry::Step {
            name: "answer".into(),
            value: serde_json::json!(1),
        });
        second.waiting_on = Some(first.question_id(1));
        let news = |run: &Run| RunNews {
            run: std::sync::Arc::new(run.clone()),
            question: None,
        };
        let recent = Recent::default();
        assert!(recent.run_news(&news(&first)));
        assert!(recent.run_news(&news(&second)));
        // The stream's copy of the first park arrives late: ignored.
        assert!(!recent.run_news(&news(&first)));
        assert_eq!(
            recent.run(&first.id).unwrap().run.waiting_on,
            second.waiting_on
        );
        // Taken up within the same step: accepted; then ended: nothing earlier replaces it.
        let mut taken = second.clone();
        taken.state = RunState::Running;
        assert!(recent.run_news(&news(&taken)));
        let mut done = taken.clone();
        done.state = RunState::Done;
        assert!(recent.run_news(&news(&done)));
        assert!(!recent.run_news(&news(&taken)));
        // The echo of the latest news is known; any change to it is not.
        assert!(recent.knows_run(&done));
        assert!(!recent.knows_run(&taken));
        let mut later = done.clone();
        later.reported = true;
        assert!(!recent.knows_run(&later));
        assert!(!Recent::default().knows_run(&done));
    }
}
