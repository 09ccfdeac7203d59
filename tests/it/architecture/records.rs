//! How the bridge treats its records: a Telegram tap reads its question once before claiming,
//! and a corrupt record met by a flow fails its run with a message instead of being replayed.

use super::*;

/// The questions role of a memory store, logging the question reads and claims made through it
/// (given to the bridge with `BridgeBuilder::questions`; the other roles stay the store's).
struct CountingQuestions {
    inner: Arc<MemoryStore>,
    log: Mutex<Vec<String>>,
}

impl CountingQuestions {
    fn note(&self, entry: String) {
        self.log.lock().unwrap().push(entry);
    }

    fn take_log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }
}

#[async_trait]
impl Questions for CountingQuestions {
    async fn insert(&self, question: &Question) -> Result<Inserted> {
        self.inner.insert(question).await
    }
    async fn get(&self, id: &QuestionId) -> Result<Option<Question>> {
        self.note(format!("get {id}"));
        self.inner.get(id).await
    }
    async fn claim(
        &self,
        snapshot: &Question,
        claim: &Claim,
        options: ClaimOptions<'_>,
    ) -> Result<Option<Claimed>> {
        self.note(format!("claim {}", snapshot.id));
        self.inner.claim(snapshot, claim, options).await
    }
    fn claims_ahead(&self) -> bool {
        self.inner.claims_ahead()
    }
    async fn list(&self, filter: &ListFilter) -> Result<Vec<Question>> {
        let found = self.inner.list(filter).await?;
        let ids: Vec<String> = found.iter().map(|q| q.id.to_string()).collect();
        self.note(format!("list {}", ids.join(" ")));
        Ok(found)
    }
    async fn counts(&self, since: Millis) -> Result<Counts> {
        self.inner.counts(since).await
    }
}

/// A Telegram tap on a question this process asked reads nothing before its claim: the toast
/// and the claim are read against the copy remembered as asked (`bridge/recent.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_tap_on_a_question_asked_here_claims_without_a_read() {
    let memory = Arc::new(MemoryStore::default());
    let store = Arc::new(CountingQuestions {
        inner: memory.clone(),
        log: Mutex::default(),
    });
    let s = setup_over(memory, store.clone()).await;
    let q = s
        .ask(ask_body(&[&format!("telegram:{GROUP}")], &["telegram:7"]))
        .await;
    let id = q["id"].as_str().unwrap().to_owned();
    let message = s.shown(GROUP, &id).await;
    // Let the delivery's own bookkeeping finish before counting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    store.take_log();
    s.fake
        .tap(GROUP, message.id, &alice(), &message.payload("3. luxon"));
    s.wait_for_text(
        GROUP,
        message.id,
        "✅ Answered: luxon, by @alice via telegram",
    )
    .await;
    let log = store.take_log();
    let claim = log
        .iter()
        .position(|entry| *entry == format!("claim {id}"))
        .unwrap_or_else(|| panic!("no claim in {log:?}"));
    let reads: Vec<&String> = log[..claim]
        .iter()
        .filter(|entry| entry.contains(&id))
        .collect();
    assert!(
        reads.is_empty(),
        "reads of the question before its claim: {log:?}"
    );
    assert_eq!(
        log.iter().filter(|e| e.starts_with("claim")).count(),
        1,
        "{log:?}"
    );
}

/// A corrupt record met inside a flow ends its run with a message, instead of the run being
/// replayed after every lease for ever (as a store outage is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_record_met_by_a_flow_fails_its_run_with_a_message() {
    let fixture = redis_store_with(StoreOptions::default()).await;
    let store = fixture.store.clone();
    let flows = Flows::new()
        .flow("ask", "asks one thing", |ctx| async move {
            let answer = ctx.ask(NewQuestion::ask("Go on?")).await?;
            Ok(format!("got {answer}"))
        })
        .unwrap();
    let builder = Bridge::builder(store.clone())
        .options(BridgeOptions {
            run_lease: Duration::from_millis(300),
            ..BridgeOptions::default()
        })
        .runner(Arc::new(flows));
    // A run whose process died after creating its first question and before parking: the
    // replay meets that question again, and its record is corrupt.
    let origin = crate::support::api_origin();
    let run = Run::new("ask", "", origin, "dead-process", Millis(1), Millis(2));
    assert_eq!(store.insert_run(&run).await.unwrap(), Inserted::Created);
    plant_corrupt_question(&fixture.server, &run.question_id(0)).await;
    let bridge = builder.start().await.unwrap();
    let failed = eventually_some(Duration::from_secs(10), "the run to fail", || {
        let (store, id) = (store.clone(), run.id.clone());
        async move {
            let run = store.get_run(&id).await.unwrap()?;
            (run.state == RunState::Failed).then_some(run)
        }
    })
    .await;
    let message = failed.result.unwrap();
    assert!(message.starts_with("corrupt record:"), "{message}");
    assert!(failed.reported, "a run without a chat is reported at once");
    bridge.shutdown();
    // And the HTTP API says so for the record itself.
    let base = serve_api(bridge.clone()).await;
    let response = http()
        .get(format!("{base}/api/questions/{}", run.question_id(0)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 500);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("corrupt record:"),
        "{body}"
    );
}

async fn plant_corrupt_question(server: &RedisServer, id: &QuestionId) {
    let mut connection = server.connection().await;
    let key = askbridge::store::redis::question_key("askbridge", id);
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg("q")
        .arg("{not json")
        .arg("status")
        .arg("pending")
        .arg("exp")
        .arg(u64::MAX / 2)
        .query_async(&mut connection)
        .await
        .unwrap();
}
