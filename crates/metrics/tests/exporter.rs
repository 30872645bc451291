//! The exporter over a real loopback socket: what a scraper gets while the
//! engine's events come in through the observer.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use peakhour_engine::{Event, Observer, Outcome, RunClock, SelfSample};
use peakhour_metrics::{Exporter, RunPhase};
use peakhour_workload::ActionKind;
use tokio::time::Instant;

fn get(address: SocketAddr, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head");
    (head.to_owned(), body.to_owned())
}

fn scrape(address: SocketAddr, accept: &str) -> (String, String) {
    get(
        address,
        &format!("GET /metrics HTTP/1.1\r\nHost: test\r\nAccept: {accept}\r\n\r\n"),
    )
}

fn action(kind: ActionKind, at: Instant, outcome: Outcome) -> Event {
    Event::Action {
        kind,
        intended: at,
        started: at,
        finished: at + Duration::from_millis(40),
        outcome,
    }
}

#[test]
fn a_scrape_sees_the_events_so_far_in_the_format_it_asks_for() {
    let exporter = Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Duration::ZERO)
        .expect("binds a free port");
    let address = exporter.address().expect("listening");
    assert_ne!(address.port(), 0);
    let mut observer = exporter.observer();

    // A run whose steady phase has started 10 s ago.
    let now = Instant::now();
    let clock = RunClock {
        t0: now - Duration::from_secs(20),
        steady_start: now - Duration::from_secs(10),
        steady_end: now + Duration::from_secs(60),
    };
    let logon = clock.t0 + Duration::from_secs(1);
    observer.event(&clock, logon, &Event::LoggedOn(1));
    observer.event(
        &clock,
        logon,
        &action(ActionKind::CheckInbox, logon, Outcome::Ok),
    );
    observer.event(
        &clock,
        now,
        &action(ActionKind::CheckInbox, now, Outcome::Ok),
    );
    let failed = Outcome::Error("imap:timeout".into());
    observer.event(&clock, now, &action(ActionKind::CheckInbox, now, failed));
    observer.tick(
        &clock,
        now,
        SelfSample {
            cpu_percent: 150.0,
            max_lag: Duration::from_millis(3),
        },
    );
    assert_eq!(exporter.snapshot().phase(), RunPhase::Steady);

    let (head, body) = scrape(
        address,
        "application/openmetrics-text;version=1.0.0,*/*;q=0.1",
    );
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    for line in [
        "peakhour_actions_total{action=\"check_inbox\",phase=\"logon\",outcome=\"ok\"} 1\n",
        "peakhour_actions_total{action=\"check_inbox\",phase=\"steady\",outcome=\"ok\"} 1\n",
        "peakhour_actions_total{action=\"check_inbox\",phase=\"steady\",outcome=\"error\"} 1\n",
        "peakhour_errors_total{action=\"check_inbox\",phase=\"steady\",kind=\"imap:timeout\"} 1\n",
        "peakhour_users_logged_on 1\n",
        "peakhour_generator_cpu_ratio 1.5\n",
        "peakhour_scheduling_lag_max_seconds 0.003\n",
        "peakhour_run_elapsed_seconds 20\n",
        "peakhour_phase{peakhour_phase=\"steady\"} 1\n",
        "# TYPE peakhour_generator_cpu_seconds counter\n",
    ] {
        assert!(body.contains(line), "missing {line:?} in\n{body}");
    }
    assert!(body.ends_with("# EOF\n"));

    let (head, body) = scrape(address, "text/plain;version=0.0.4");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(body.contains("# TYPE peakhour_actions_total counter\n"));
    assert!(!body.contains("# EOF"));

    let (head, body) = get(address, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 200 OK") && body.is_empty(),
        "{head}"
    );
    let (head, _) = get(address, "GET /other HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = get(address, "DELETE /metrics HTTP/1.1\r\n\r\n");
    assert!(
        head.starts_with("HTTP/1.1 405") && head.contains("Allow: GET, HEAD"),
        "{head}"
    );
    let (head, _) = get(address, "\x16\x03\x01 not http\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");

    exporter.finish();
    assert!(
        TcpStream::connect(address).is_err(),
        "the port is closed once the exporter has finished"
    );
}

#[test]
fn without_an_address_nothing_is_served_or_counted() {
    let exporter = Exporter::start(None, Duration::ZERO).expect("nothing to bind");
    assert_eq!(exporter.address(), None);
    let mut observer = exporter.observer();
    let now = Instant::now();
    let clock = RunClock {
        t0: now,
        steady_start: now,
        steady_end: now + Duration::from_secs(1),
    };
    observer.event(&clock, now, &Event::LoggedOn(5));
    assert_eq!(exporter.snapshot().users_logged_on(), 0);
}

#[test]
fn an_address_in_use_is_an_error_that_names_it() {
    let first = Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Duration::ZERO).unwrap();
    let taken = first.address().unwrap();
    let error = Exporter::start(Some(taken), Duration::ZERO).unwrap_err();
    assert!(error.to_string().contains(&taken.to_string()), "{error}");
    let too_long = Exporter::start(None, Duration::from_secs(3600)).unwrap_err();
    assert!(
        too_long.to_string().contains("--metrics-linger"),
        "{too_long}"
    );
}
