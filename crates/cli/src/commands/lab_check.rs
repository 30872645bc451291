//! `peakhour lab check`: one message through the lab with peakhour's own
//! clients — SMTP in, IMAP and POP3 out — with the time of every command.
//!
//! It is the quickest way to see that a lab (or a change to the protocol
//! clients) works end to end, and the first thing the demo runs.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail, ensure};
use peakhour_imap::{BodySection, FetchItem, ImapConnection, SearchKey};
use peakhour_lab::{Lab, LabStatus};
use peakhour_net::{Secret, Security, Timed, TlsSettings};
use peakhour_pop3::Pop3Connection;
use peakhour_smtp::{Flavor, SmtpConnection};

use crate::args::LabCheckArgs;

const TIMEOUT: Duration = Duration::from_secs(10);
const HOST: &str = "127.0.0.1";

pub(crate) fn run(args: LabCheckArgs) -> anyhow::Result<ExitCode> {
    let status = Lab::new(&args.dir.dir).status()?;
    ensure!(
        status.healthy,
        "the lab in {} is not healthy; see `peakhour lab status --dir {}`",
        status.dir,
        args.dir.dir.display()
    );
    ensure!(
        (1..=status.users).contains(&args.user),
        "the lab has users 1 to {}; --user {} is not one of them",
        status.users,
        args.user
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(check(&status, args.user, args.starttls))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints one timed step.
fn step<T>(what: &str, timed: Timed<T>) -> T {
    println!("  {:>8.2} ms  {what}", timed.elapsed.as_secs_f64() * 1000.0);
    timed.value
}

fn port(endpoint: &str) -> anyhow::Result<u16> {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .with_context(|| format!("bad endpoint {endpoint}"))
}

async fn check(status: &LabStatus, user: u32, starttls: bool) -> anyhow::Result<()> {
    let tls: Arc<rustls::ClientConfig> = TlsSettings {
        verify: true,
        extra_ca_file: Some(Path::new(&status.ca_file).to_owned()),
        use_system_roots: false,
    }
    .client_config()?;
    let password = Secret::new(status.password.clone());
    let from = status.user(1);
    let to = status.user(user);
    let nonce = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let token = format!("lab-check-{nonce:x}");
    let message = format!(
        "From: {from}\r\nTo: {to}\r\nSubject: peakhour lab check {token}\r\n\
         Message-ID: <{token}@{domain}>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n\
         This message was sent by `peakhour lab check`.\r\n.A line that needs dot-stuffing.\r\n",
        domain = status.domain
    )
    .into_bytes();

    println!("SMTP {} ({from} -> {to})", status.endpoints.smtp);
    let mut smtp = step(
        "connect + greeting",
        SmtpConnection::connect(
            HOST,
            port(&status.endpoints.smtp)?,
            Flavor::Smtp,
            Security::Plain,
            None,
            TIMEOUT,
        )
        .await?,
    );
    step("EHLO", smtp.ehlo("check.bench.test").await?);
    if starttls {
        step(
            "STARTTLS + handshake",
            smtp.starttls(HOST, tls.clone()).await?,
        );
        step("EHLO", smtp.ehlo("check.bench.test").await?);
    }
    step("AUTH", smtp.authenticate(&from, &password).await?);
    let submitted_at = Instant::now();
    let outcome = step(
        "MAIL + RCPT + DATA",
        smtp.send_mail(&from, std::slice::from_ref(&to), &message)
            .await?,
    );
    ensure!(
        outcome.all_delivered(),
        "Postfix did not accept the message: {outcome:?}"
    );
    step("QUIT", smtp.quit().await?);

    println!("IMAP {} ({to})", status.endpoints.imap);
    let mut imap = step(
        "connect + greeting",
        ImapConnection::connect(
            HOST,
            port(&status.endpoints.imap)?,
            Security::Plain,
            None,
            TIMEOUT,
        )
        .await?,
    );
    if starttls {
        step(
            "STARTTLS + handshake",
            imap.starttls(HOST, tls.clone()).await?,
        );
    }
    step("LOGIN", imap.login(&to, &password).await?);
    let search = SearchKey::Header("Message-ID".into(), token.clone());
    let uid = loop {
        imap.select("INBOX").await?;
        if let Some(uid) = imap.search(&search, true).await?.value.last() {
            break *uid;
        }
        if submitted_at.elapsed() > Duration::from_secs(15) {
            bail!("the message did not reach {to}'s INBOX within 15 s; see the lab's postfix.log");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    println!(
        "  {:>8.2} ms  delivered: visible in INBOX after submission",
        submitted_at.elapsed().as_secs_f64() * 1000.0
    );
    let full = [FetchItem::Body {
        section: BodySection::Full,
        peek: true,
    }];
    let fetched = step(
        "UID FETCH BODY.PEEK[]",
        imap.fetch(&uid.to_string(), &full, true).await?,
    );
    let over_imap = fetched
        .first()
        .and_then(|m| m.section(&BodySection::Full))
        .context("the server returned no BODY[]")?
        .to_vec();

    println!("POP3 {} ({to})", status.endpoints.pop3);
    let mut pop3 = step(
        "connect + greeting",
        Pop3Connection::connect(
            HOST,
            port(&status.endpoints.pop3)?,
            Security::Plain,
            None,
            TIMEOUT,
        )
        .await?,
    );
    if starttls {
        step("STLS + handshake", pop3.stls(HOST, tls.clone()).await?);
    }
    step("USER + PASS", pop3.login(&to, &password).await?);
    let count = step("STAT", pop3.stat().await?).count;
    let mut over_pop3 = None;
    for n in (1..=count).rev() {
        let message = step(&format!("RETR {n}"), pop3.retr(n).await?);
        if message.windows(token.len()).any(|w| w == token.as_bytes()) {
            over_pop3 = Some(message);
            break;
        }
    }
    step("QUIT", pop3.quit().await?);
    let over_pop3 = over_pop3.context("the message was not found over POP3")?;
    ensure!(
        over_imap == over_pop3,
        "IMAP and POP3 returned different bytes"
    );
    ensure!(
        over_imap.ends_with(&message[message.len() - 60..]),
        "the delivered body differs from the one submitted"
    );

    // Leave the mailbox as it was, so a later `init` finds what it expects.
    step(
        "UID STORE +FLAGS (\\Deleted)",
        imap.store(
            &uid.to_string(),
            peakhour_imap::StoreMode::Add,
            &["\\Deleted"],
            true,
            true,
        )
        .await?
        .map(|_| ()),
    );
    step(
        "UID EXPUNGE",
        imap.uid_expunge(&uid.to_string()).await?.map(|_| ()),
    );
    step("LOGOUT", imap.logout().await?);
    println!(
        "ok: {} bytes from SMTP arrived identical over IMAP and POP3",
        over_imap.len()
    );
    Ok(())
}
