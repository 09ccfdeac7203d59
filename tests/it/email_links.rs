//! One-click answer links (`ASKBRIDGE_PUBLIC_URL`; see `adapters/email/src/links.rs` and
//! `page.rs`), from the mail the real mail servers deliver to the click in headless Chromium.
//! Opening a link, as every link scanner does, changes nothing; only the page's button answers,
//! once; a changed, expired or cross-site link answers nothing.

use crate::cdp::Browser;
use crate::email::{ask_body, setup_with};
use crate::mails::ALICE;
use crate::support::http;
use askbridge_core::{Millis, QuestionId, Secret};
use askbridge_email::{Link, OneClick};

/// The `href`s of the links in an HTML mail, unescaped.
fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

/// The link a URL carries.
fn link_of(href: &str) -> Link {
    let url = reqwest::Url::parse(href).unwrap();
    let field = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .unwrap()
    };
    Link {
        q: field("q"),
        c: field("c").parse().unwrap(),
        to: field("to"),
        until: field("until").parse().unwrap(),
        sig: field("sig"),
    }
}

/// POSTs the confirmation form of `href` with `csrf`, from `origin` when given.
async fn post(href: &str, csrf: &str, origin: Option<&str>) -> (u16, String) {
    let mut request = http()
        .post(href)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}"));
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn get(href: &str) -> (u16, String) {
    let response = http().get(href).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailed_link_answers_only_on_its_button_only_once_and_only_as_sent() {
    let s = setup_with(true, false).await;
    let id = s.ask(ask_body(&[&format!("email:{ALICE}")])).await;
    let html = s.wait_for_mails(ALICE, 1).await[0].html().unwrap();
    assert!(
        !html.contains("mailto:"),
        "one-click links replace mailto: {html}"
    );
    let links = hrefs(&html);
    assert_eq!(links.len(), 3, "dayjs, date-fns, decline: {html}");
    let date_fns = &links[1];
    assert!(
        date_fns.starts_with(&format!(
            "{}/email/answer?q={id}&c=1&to=alice%40example.com&until=",
            s.base
        )),
        "{date_fns}"
    );
    // The signer the server uses (the test knows the secret), for the page's CSRF token and for
    // links the mail did not carry.
    let signer = OneClick::new(&s.base, &Secret::new("test-email-secret")).unwrap();
    let csrf = signer.csrf(&link_of(date_fns));

    // A scanner fetches the link, again and again: the page shows the choice, nothing changes.
    for _ in 0..3 {
        let response = http().get(date_fns).send().await.unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'none'"), "{csp}");
        assert!(csp.contains("form-action 'self'"), "{csp}");
        assert_eq!(headers["referrer-policy"], "same-origin");
        assert_eq!(headers["cache-control"], "no-store");
        let page = response.text().await.unwrap();
        assert!(page.contains("Confirm: date-fns"), "{page}");
        assert!(page.contains(&format!("value=\"{csrf}\"")), "{page}");
        assert!(page.contains("Which library for &lt;dates&gt;?"), "{page}");
    }

    // Links that are not as mailed answer nothing.
    let tampered = date_fns.replace("&c=1&", "&c=0&");
    assert_eq!(get(&tampered).await.0, 403);
    assert_eq!(post(&tampered, &csrf, None).await.0, 403);
    let for_bob = date_fns.replace("to=alice%40example.com", "to=bob%40example.org");
    assert_eq!(post(&for_bob, &csrf, None).await.0, 403);
    let question_id = QuestionId::parse(&id).unwrap();
    let expired = signer.href(&question_id, 1, ALICE, Millis(1));
    let (status, page) = get(&expired).await;
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("This link has expired."), "{page}");
    let cut = &date_fns[..date_fns.find("&sig=").unwrap()];
    assert_eq!(get(cut).await.0, 400);
    // The right link, but not from the page: no token, a wrong one, or another site's form.
    assert_eq!(post(date_fns, "", None).await.0, 403);
    assert_eq!(post(date_fns, &link_of(date_fns).sig, None).await.0, 403);
    let (status, page) = post(date_fns, &csrf, Some("https://evil.example")).await;
    assert_eq!(status, 403);
    assert!(page.contains("from another site"), "{page}");
    assert_eq!(s.question(&id).await["status"], "pending");

    // Alice opens the link in her browser and confirms.
    let browser = Browser::launch().await;
    let page = browser.new_page().await;
    page.goto(date_fns).await;
    page.wait_for(
        "the confirmation page",
        "document.querySelector('button') !== null",
    )
    .await;
    page.click("button").await;
    page.wait_for(
        "the answer taken",
        "(document.body ? document.body.innerText : '').includes('✓ Answered: date-fns')",
    )
    .await;
    let question = s.question(&id).await;
    assert_eq!(question["status"], "answered", "{question}");
    assert_eq!(question["resolution"]["value"], "date-fns", "{question}");
    assert_eq!(
        question["resolution"]["by"],
        format!("email:{ALICE}"),
        "{question}"
    );

    // The link has done its work: posting it again, or another choice's, answers nothing more.
    let (status, page) = post(date_fns, &csrf, Some(&s.base)).await;
    assert_eq!(status, 409, "{page}");
    assert!(page.contains("Already answered: date-fns"), "{page}");
    let dayjs = &links[0];
    let (status, _) = post(dayjs, &signer.csrf(&link_of(dayjs)), None).await;
    assert_eq!(status, 409);
    let (status, page) = get(date_fns).await;
    assert_eq!(status, 200);
    assert!(page.contains("Already answered: date-fns"), "{page}");
    assert!(!page.contains("<form"), "{page}");
    assert_eq!(s.question(&id).await["resolution"]["value"], "date-fns");
}
