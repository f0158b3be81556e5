//! The run journal on JetStream, on a real `nats-server -js` per test: what the
//! crash matrix of `journal.rs` does not show. Records come back as written; a torn last
//! write is left out with a warning and damage before the end is an error; a newer format is
//! refused; a write the server cannot take is refused whole; and a lease keeps a second host
//! out, from opening and from writing, until the first lets go or dies and its lease expires.

use std::path::Path;
use std::time::{Duration, Instant};

use goondan_runtime::Message;
use goondan_runtime::step::TurnEnd;
use goondan_runtime::step::journal::{
    FORMAT_VERSION, Journal, JournalError, Lease, NatsJournal, Record,
};
use goondan_test_peers::nats::NatsServer;

use crate::journal::{LEASE_TTL, agent_on, instance_of, lines, open_nats, run_and_kill};

fn imported(text: &str) -> Record {
    Record::Imported {
        messages: vec![Message::assistant("m1", Some(text.into()), Vec::new())],
    }
}

fn started(call: &str) -> Record {
    Record::CallStarted {
        turn_id: "t1".into(),
        message_id: "m1".into(),
        call_id: call.into(),
    }
}

/// Publishes a message to the journal's subject of `state` as another writer would, with the
/// format header `format` when given.
async fn publish_raw(url: &str, state: &Path, format: Option<&str>, payload: &'static [u8]) {
    let client = async_nats::connect(url).await.unwrap();
    let jetstream = async_nats::jetstream::new(client);
    let subject = format!("goondan.journal.payer.{}", escaped(&instance_of(state)));
    let mut headers = async_nats::HeaderMap::new();
    if let Some(format) = format {
        headers.insert("Goondan-Journal-Format", format);
    }
    jetstream
        .publish_with_headers(subject, headers, payload.into())
        .await
        .unwrap()
        .await
        .unwrap();
}

/// A temporary directory's name as a subject token (`.tmpXYZ` -> `=2EtmpXYZ`).
fn escaped(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                char::from(b).to_string()
            } else {
                format!("={b:02X}")
            }
        })
        .collect()
}

async fn open(url: &str, state: &Path, holder: &str) -> NatsJournal {
    open_nats(url, state, holder, Duration::ZERO).await.unwrap()
}

#[tokio::test]
async fn records_written_to_jetstream_come_back_in_order_from_another_connection() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let journal = open(&server.url, state.path(), "host-a").await;
    assert!(journal.read().await.unwrap().records.is_empty());
    let writes = [
        vec![imported("one")],
        vec![started("c1"), started("c2")],
        vec![],
    ];
    for write in &writes {
        journal.append(write).await.unwrap();
    }
    journal.release().await.unwrap();
    drop(journal);

    let again = open(&server.url, state.path(), "host-b").await;
    let read = again.read().await.unwrap();
    assert_eq!(read.records, writes.concat());
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    // Another instance on the same stream has a journal of its own.
    let other = tempfile::tempdir().unwrap();
    let empty = open(&server.url, other.path(), "host-b").await;
    assert!(empty.read().await.unwrap().records.is_empty());
}

#[tokio::test]
async fn a_torn_last_message_recovers_to_the_last_complete_write_with_a_warning() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let kept = imported("kept");
    let journal = open(&server.url, state.path(), "host-a").await;
    journal.append(std::slice::from_ref(&kept)).await.unwrap();
    journal.release().await.unwrap();
    drop(journal);
    // A write cut in the middle of its JSON.
    publish_raw(
        &server.url,
        state.path(),
        Some("1"),
        br#"[{"type":"callStarted","tu"#,
    )
    .await;

    let journal = open(&server.url, state.path(), "host-b").await;
    let read = journal.read().await.unwrap();
    assert_eq!(read.records, std::slice::from_ref(&kept));
    assert!(
        read.warnings.len() == 1 && read.warnings[0].contains("torn write"),
        "{:?}",
        read.warnings
    );
    // The journal goes on after its last complete write: the next write skips the torn one,
    // which every later read leaves out as such, not as damage.
    journal.append(&[started("c1")]).await.unwrap();
    let read = journal.read().await.unwrap();
    assert_eq!(read.records, [kept.clone(), started("c1")]);
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    journal.release().await.unwrap();
    let again = open(&server.url, state.path(), "host-c").await;
    assert_eq!(again.read().await.unwrap().records, [kept, started("c1")]);
}

#[tokio::test]
async fn an_unreadable_message_before_the_end_is_corrupt_naming_its_position() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let journal = open(&server.url, state.path(), "host-a").await;
    journal
        .append(&[imported("one"), started("c1")])
        .await
        .unwrap();
    journal.release().await.unwrap();
    drop(journal);
    // A message of the wrong type, then a whole write after it.
    publish_raw(&server.url, state.path(), Some("1"), br#"[{"type":42}]"#).await;
    publish_raw(
        &server.url,
        state.path(),
        Some("1"),
        br#"[{"type":"callStarted","turnId":"t1","messageId":"m1","callId":"c2"}]"#,
    )
    .await;

    let journal = open(&server.url, state.path(), "host-b").await;
    let read = journal.read().await;
    let message = read
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        matches!(read, Err(JournalError::Corrupt { position: 3, .. })),
        "{message}"
    );
    assert!(message.contains("write 2"), "{message}");
}

#[tokio::test]
async fn a_journal_whose_writes_have_a_newer_format_is_refused() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    open(&server.url, state.path(), "host-a")
        .await
        .release()
        .await
        .unwrap();
    publish_raw(&server.url, state.path(), Some("99"), b"[]").await;
    let refused = open_nats(&server.url, state.path(), "host-a", Duration::ZERO)
        .await
        .map(|_| ());
    assert!(
        matches!(
            refused,
            Err(JournalError::NewerFormat {
                found: 99,
                supported: FORMAT_VERSION,
                ..
            })
        ),
        "{refused:?}"
    );
    let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("upgrade goondan"), "{message}");
}

#[tokio::test]
async fn a_write_larger_than_the_servers_max_payload_is_refused_whole() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let small = imported("small");
    let journal = open(&server.url, state.path(), "host-a").await;
    journal.append(std::slice::from_ref(&small)).await.unwrap();
    // The server's default limit is 1 MiB.
    let huge = imported(&"x".repeat(2 << 20));
    let refused = journal.append(&[started("c1"), huge]).await;
    assert!(
        matches!(
            refused,
            Err(JournalError::TooLarge {
                what: "write",
                limit: 1_048_576,
                ..
            })
        ),
        "{refused:?}"
    );
    // Nothing of it was written, and the journal goes on.
    journal.append(&[started("c2")]).await.unwrap();
    let read = journal.read().await.unwrap();
    assert_eq!(read.records, [small, started("c2")]);
}

#[tokio::test]
async fn a_second_host_cannot_open_or_write_while_the_first_holds_the_lease() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let first = open(&server.url, state.path(), "host-a").await;
    first.append(&[imported("one")]).await.unwrap();

    // Held past its TTL: renewed in the background, so still refused to another host.
    tokio::time::sleep(LEASE_TTL * 2).await;
    let second = open_nats(&server.url, state.path(), "host-b", Duration::ZERO)
        .await
        .map(|_| ());
    let message = second
        .as_ref()
        .err()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        matches!(&second, Err(JournalError::Held { holder, .. }) if holder == "host-a"),
        "{second:?}"
    );
    assert!(message.contains("host-a"), "{message}");
    first.append(&[started("c1")]).await.unwrap();

    // A writer that is not the last one (a stale host) is refused, not interleaved.
    publish_raw(
        &server.url,
        state.path(),
        Some("1"),
        br#"[{"type":"callStarted","turnId":"t1","messageId":"m1","callId":"stale"}]"#,
    )
    .await;
    let stale = first.append(&[started("c2")]).await;
    assert!(
        matches!(&stale, Err(JournalError::Lost { reason, .. }) if reason.contains("another writer")),
        "{stale:?}"
    );

    // Let go: the second host opens at once, and the first writes nothing more.
    first.release().await.unwrap();
    let second = open(&server.url, state.path(), "host-b").await;
    assert_eq!(second.read().await.unwrap().records.len(), 3);
    let late = first.append(&[started("c3")]).await;
    assert!(matches!(late, Err(JournalError::Lost { .. })), "{late:?}");
}

#[tokio::test]
async fn a_lease_cannot_be_taken_twice_and_is_free_once_released() {
    let server = NatsServer::start_jetstream();
    let client = async_nats::connect(server.url.as_str()).await.unwrap();
    let jetstream = async_nats::jetstream::new(client);
    let store = Lease::bucket(&jetstream, "leases", LEASE_TTL)
        .await
        .unwrap();
    let lease = Lease::acquire(&store, "a.b", "host-a", Duration::ZERO)
        .await
        .unwrap();
    assert_eq!((lease.holder(), lease.ttl()), ("host-a", LEASE_TTL));
    let twice = Lease::acquire(&store, "a.b", "host-b", Duration::ZERO).await;
    assert!(matches!(twice, Err(JournalError::Held { .. })), "{twice:?}");
    lease.renew().await.unwrap();
    lease.release().await.unwrap();
    let taken = Lease::acquire(&store, "a.b", "host-b", Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(taken.holder(), "host-b");
    // A lease dropped lets go in the background.
    drop(taken);
    let again = Lease::acquire(&store, "a.b", "host-c", Duration::from_secs(1)).await;
    assert!(again.is_ok(), "{again:?}");
}

/// A host killed (SIGKILL) in the middle of a Turn holds its instance until its lease expires;
/// then another host takes it and resumes the Turn, without paying twice.
#[test]
fn after_the_holder_is_killed_its_lease_expires_and_another_host_resumes_the_turn() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    run_and_kill(state.path(), Some(&server.url), "after-result:1");
    crate::journal::block_on(async {
        let killed_at = Instant::now();
        let held = open_nats(&server.url, state.path(), "host-b", Duration::ZERO)
            .await
            .map(|_| ());
        assert!(
            matches!(&held, Err(JournalError::Held { holder, .. }) if holder.starts_with("child-")),
            "the dead host's lease is still there: {held:?}"
        );
        let journal = open_nats(&server.url, state.path(), "host-b", Duration::from_secs(30))
            .await
            .unwrap();
        let waited = killed_at.elapsed();
        assert!(
            waited >= LEASE_TTL / 2 && waited < LEASE_TTL * 10,
            "the lease expired after {waited:?}"
        );
        let journal = std::sync::Arc::new(journal);
        let agent = agent_on(state.path(), journal.clone()).unwrap();
        let turn = agent
            .resume()
            .await
            .unwrap()
            .expect("the Turn was unfinished");
        assert_eq!(turn.end, TurnEnd::Answered);
        assert_eq!(turn.answer(), Some("done"));
        assert_eq!(
            (
                lines(state.path(), "paid.txt"),
                lines(state.path(), "marked.txt")
            ),
            (1, 1),
            "the payment's result was written: it is not paid again"
        );
        journal.release().await.unwrap();
    });
}

/// A host whose lease was taken from it (its key removed by hand, then another host opened the
/// journal) learns it at its next renewal and writes nothing more; the new holder writes.
#[tokio::test]
async fn a_host_whose_lease_was_taken_stops_writing_and_the_new_holder_goes_on() {
    let server = NatsServer::start_jetstream();
    let state = tempfile::tempdir().unwrap();
    let first = open(&server.url, state.path(), "host-a").await;
    first.append(&[started("c1")]).await.unwrap();

    let client = async_nats::connect(server.url.as_str()).await.unwrap();
    let leases = async_nats::jetstream::new(client)
        .get_key_value("goondan_leases")
        .await
        .unwrap();
    let key = format!("payer.{}", escaped(&instance_of(state.path())));
    leases.delete(&key).await.unwrap();
    let second = open(&server.url, state.path(), "host-b").await;

    // The first host's next renewal (every third of the TTL) finds the lease taken.
    tokio::time::sleep(LEASE_TTL / 3 + Duration::from_millis(700)).await;
    let refused = first.append(&[started("c2")]).await;
    assert!(
        matches!(&refused, Err(JournalError::Lost { reason, .. }) if reason.contains("another host took it")),
        "{refused:?}"
    );
    second.append(&[started("c3")]).await.unwrap();
    let read = second.read().await.unwrap();
    assert_eq!(read.records, [started("c1"), started("c3")]);
}

/// Approval questions on JetStream: kept once per call, answered once
/// from another connection (another host), and bad answers refused without changing anything.
#[tokio::test]
async fn approval_questions_on_jetstream_are_kept_once_and_answered_once_from_anywhere() {
    use goondan_runtime::calls::approval::{
        AnswerOutcome, Decision, Listing, NatsQuestions, Question, QuestionError, QuestionStore,
    };
    let server = NatsServer::start_jetstream();
    let connect = || async {
        let client = async_nats::connect(&server.url).await.unwrap();
        let jetstream = async_nats::jetstream::new(client);
        NatsQuestions::open(&jetstream, NatsQuestions::DEFAULT_BUCKET)
            .await
            .unwrap()
    };
    let (asker, answerer) = (connect().await, connect().await);
    let question = |call: &str, asked_at_ms: u64, expires_at_ms: Option<u64>| Question {
        id: Question::id_for("coder", "default", "turn-1", call),
        agent: "coder".into(),
        instance_key: "default".into(),
        turn_id: "turn-1".into(),
        tool_call_id: call.into(),
        tool_name: "bash__exec".into(),
        args: serde_json::Map::new(),
        why: "the tool is marked destructive".into(),
        asked_at_ms,
        expires_at_ms,
        answer: None,
    };
    let first = question("c1", 10, None);
    asker.ask(first.clone()).await.unwrap();
    asker.ask(question("c2", 20, Some(25))).await.unwrap();
    // Asking again for the same call finds the question; another call under its id is refused.
    assert_eq!(asker.ask(first.clone()).await.unwrap(), first);
    let mut clash = question("c9", 30, None);
    clash.id = first.id.clone();
    assert!(matches!(
        asker.ask(clash).await,
        Err(QuestionError::Mismatch { .. })
    ));
    let waiting = answerer.list(Listing::Waiting).await.unwrap();
    let ids: Vec<&str> = waiting.iter().map(|q| q.tool_call_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"], "oldest first");

    // Bad answers change nothing.
    for (id, agent) in [
        ("000000000000", None),
        ("no such/key!", None),
        (first.id.as_str(), Some("writer")),
    ] {
        let refused = answerer
            .answer(id, agent, Decision::Approve, "cli", 40)
            .await;
        assert!(
            matches!(
                refused,
                Err(QuestionError::Unknown { .. } | QuestionError::OtherAgent { .. })
            ),
            "{id}: {refused:?}"
        );
    }
    // The first answer stands, from whichever process gives it.
    let approved = answerer
        .answer(&first.id, Some("coder"), Decision::Approve, "cli", 50)
        .await
        .unwrap();
    assert!(matches!(approved, AnswerOutcome::Recorded(_)));
    let deny = Decision::Deny {
        reason: "too late".into(),
    };
    let second = asker
        .answer(&first.id, None, deny, "terminal", 60)
        .await
        .unwrap();
    assert!(matches!(second, AnswerOutcome::AlreadyAnswered(_)));
    assert_eq!(second.decision(), Some(&Decision::Approve));
    let kept = asker.get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        kept.answer.map(|a| (a.by, a.at_ms)),
        Some(("cli".to_owned(), 50))
    );
    // A question past its expiry is denied when next answered.
    let c2 = Question::id_for("coder", "default", "turn-1", "c2");
    let late = answerer
        .answer(&c2, None, Decision::Approve, "cli", 70)
        .await
        .unwrap();
    assert!(matches!(late, AnswerOutcome::Expired(_)), "{late:?}");
    assert!(asker.list(Listing::Waiting).await.unwrap().is_empty());
    assert_eq!(asker.list(Listing::All).await.unwrap().len(), 2);

    // A damaged entry is left out of the list, and is an error when asked for by id.
    let client = async_nats::connect(&server.url).await.unwrap();
    let kv = async_nats::jetstream::new(client)
        .get_key_value(NatsQuestions::DEFAULT_BUCKET)
        .await
        .unwrap();
    kv.put("0123456789ab", "{not json".into()).await.unwrap();
    assert_eq!(asker.list(Listing::All).await.unwrap().len(), 2);
    assert!(matches!(
        asker.get("0123456789ab").await,
        Err(QuestionError::Corrupt { .. })
    ));
}
