//! The ops page's token prompt: a wrong token refused, the right one kept.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_prompt_refuses_a_wrong_token_and_keeps_the_right_one() {
    let token = "s3cret-token-9f2c";
    let server = Process::spawn(
        &["serve", "--ephemeral"],
        &[("ASKBRIDGE_API_TOKEN", token.to_owned())],
    );
    let mut api = Api::new(&server.base);
    api.token = Some(token.to_owned());
    let id = api.ask(json!({"prompt": "Behind the token?"})).await;

    let browser = Browser::launch().await;
    let page = browser.new_page().await;
    page.call("Network.enable", json!({})).await;
    let mut events = page.events();
    page.goto(&format!("{}/", server.base)).await;
    let login_shown = "!document.getElementById('login').hidden
        && document.getElementById('board').hidden
        && document.activeElement === document.getElementById('token-input')";
    page.wait_for("the token prompt", login_shown).await;
    assert_eq!(
        page.eval("document.getElementById('login-message').textContent")
            .await,
        "This askbridge needs its API token (ASKBRIDGE_API_TOKEN) to show and answer questions."
    );
    assert_eq!(
        page.eval("document.getElementById('pending').children.length")
            .await,
        0
    );

    // A wrong token: said plainly, and the prompt comes back.
    page.type_into("#token-input", "not-the-token").await;
    page.press("Enter").await;
    page.wait_for(
        "the refusal",
        "document.getElementById('login-message').textContent
            === 'askbridge refused that token (wrong API token). Enter the right one.'",
    )
    .await;
    page.wait_for("the prompt again", login_shown).await;
    assert_eq!(
        page.eval("sessionStorage.length").await,
        0,
        "a refused token is not kept"
    );

    // The right one: the questions appear, and the token is kept for this browser session.
    page.type_into("#token-input", token).await;
    page.press("Enter").await;
    page.wait_for("the question", &pending_card(&id)).await;
    // Reload, holding back the list request that follows the reconnection (for the check that
    // nothing fetched with a forgotten token lands, below).
    page.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/api/questions\\?limit=1000", "requestStage": "Request"}]}),
    )
    .await;
    let mut held = page.events();
    page.goto(&format!("{}/", server.base)).await;
    let list_request = held
        .next("Fetch.requestPaused", Duration::from_secs(10))
        .await;
    page.wait_for(
        "the question after a reload, with no prompt",
        &pending_card(&id),
    )
    .await;
    assert!(
        page.eval("document.getElementById('login').hidden")
            .await
            .as_bool()
            .unwrap()
    );

    // How the token travelled: in a header, never in a URL, never on the console.
    let seen = events.drain();
    let mut authorised_streams = 0;
    for event in &seen {
        let text = event.params.to_string();
        match event.method.as_str() {
            "Network.requestWillBeSent" => {
                let request = &event.params["request"];
                let url = request["url"].as_str().unwrap();
                assert!(!url.contains(token), "the token is in a URL: {url}");
                let authorization = request["headers"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                    .map(|(_, value)| value.clone());
                if url.ends_with("/api/events")
                    && authorization == Some(json!(format!("Bearer {token}")))
                {
                    authorised_streams += 1;
                }
            }
            "Runtime.consoleAPICalled" | "Runtime.exceptionThrown" => {
                assert!(!text.contains(token), "logged: {text}");
            }
            _ => {}
        }
    }
    assert!(
        authorised_streams >= 2,
        "the stream carried the token as a header after login and after the reload"
    );

    // Forgetting it brings the prompt back and clears the board...
    page.click("#forget-token").await;
    page.wait_for("the prompt after forgetting", login_shown)
        .await;
    assert_eq!(page.eval("sessionStorage.length").await, 0);
    let board_is_empty = format!(
        "document.getElementById('pending').children.length === 0
            && document.getElementById('resolved').children.length === 0
            && {} === null",
        pending_card(&id)
    );
    assert_eq!(page.eval(&board_is_empty).await, true);
    // ...and what was asked with the forgotten token and answers only now does not fill it again.
    page.call(
        "Fetch.continueRequest",
        json!({"requestId": list_request["requestId"]}),
    )
    .await;
    page.call("Fetch.disable", json!({})).await;
    let network_id = list_request["networkId"].clone();
    events
        .next_where("Network.loadingFinished", Duration::from_secs(10), |p| {
            p["requestId"] == network_id
        })
        .await;
    // Absence can only be watched for a while: the page handles the body within milliseconds
    // of the network finishing, so a card that was going to come back would within this time.
    let watch_until = std::time::Instant::now() + Duration::from_millis(500);
    while std::time::Instant::now() < watch_until {
        assert_eq!(
            page.eval(&board_is_empty).await,
            true,
            "an answer to the forgotten token's request filled the board"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
