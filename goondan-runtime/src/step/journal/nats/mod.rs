//! [`NatsJournal`]: the run journal on JetStream (feature `nats`), for agents whose hosts come
//! and go across machines.
//!
//! One stream (file storage) holds every journal, one subject per instance
//! (`goondan.journal.{agent}.{instanceKey}`, names escaped into subject tokens). A write is
//! one message: its records as a JSON array, the format version in a header, published with
//! `Nats-Expected-Last-Subject-Sequence` set to the journal's last write, so the server refuses
//! a write from a host that is not the last writer instead of interleaving two. Reading takes
//! every message of the subject in order with an ordered consumer.
//!
//! A last write that does not parse (torn: its writer died before it was whole) is left out
//! with a warning. It stays in the stream (deleting the last message of a subject confuses
//! servers before 2.10 about the subject's last sequence); the next write names it in its
//! `Goondan-Journal-Skips` header, so later reads know it was left out on purpose, while a
//! message that does not parse and that no write skipped is damage.
//!
//! Opening takes the instance's [`Lease`] (a key in a key-value bucket whose entries expire),
//! so that two hosts never resume one Turn; the journal renews it while it lives, and a host
//! that dies lets go of it when its TTL passes.

mod lease;
mod message;
mod subject;

use std::sync::Mutex;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;

pub use self::lease::Lease;
use self::message::{Decoded, FORMAT_HEADER, SKIPS_HEADER};
use self::subject::Place;
use super::record::FORMAT_VERSION;
use super::{Journal, JournalError, JournalFuture, Record, Recovered};
use crate::lock;

/// How long a read waits for the next message of a journal before it gives up.
const READ_WAIT: Duration = Duration::from_secs(10);

/// Where journals go on a NATS server, and how an instance is held.
///
/// ```
/// use std::time::Duration;
/// use goondan_runtime::step::journal::NatsJournalOptions;
///
/// let options = NatsJournalOptions::default()
///     .holder("host-a")
///     .lease_ttl(Duration::from_secs(5))
///     .wait(Duration::from_secs(10));
/// assert_eq!(options.stream, "GOONDAN_JOURNAL");
/// assert_eq!(options.lease_bucket, "goondan_leases");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsJournalOptions {
    /// The stream of the journals, created when missing; default `GOONDAN_JOURNAL`.
    pub stream: String,
    /// The subjects' prefix: the stream takes `{prefix}.>`; default `goondan.journal`.
    pub subject_prefix: String,
    /// The key-value bucket of the leases, created when missing; default `goondan_leases`.
    pub lease_bucket: String,
    /// How long a lease lasts without renewal, when the bucket is created here (an existing
    /// bucket keeps its own); default 30 s. A host that dies holds its instances this long.
    pub lease_ttl: Duration,
    /// This host's name in the leases; default `{hostname}:{pid}`.
    pub holder: String,
    /// How long opening waits for another holder to let go; default not at all.
    pub wait: Duration,
}

impl Default for NatsJournalOptions {
    fn default() -> Self {
        Self {
            stream: "GOONDAN_JOURNAL".to_owned(),
            subject_prefix: "goondan.journal".to_owned(),
            lease_bucket: "goondan_leases".to_owned(),
            lease_ttl: Duration::from_secs(30),
            holder: default_holder(),
            wait: Duration::ZERO,
        }
    }
}

impl NatsJournalOptions {
    /// With the stream `name`.
    #[must_use]
    pub fn stream(mut self, name: impl Into<String>) -> Self {
        self.stream = name.into();
        self
    }

    /// With the lease bucket `name`.
    #[must_use]
    pub fn lease_bucket(mut self, name: impl Into<String>) -> Self {
        self.lease_bucket = name.into();
        self
    }

    /// With leases lasting `ttl` without renewal (for a bucket created here).
    #[must_use]
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// With this host named `holder` in the leases.
    #[must_use]
    pub fn holder(mut self, holder: impl Into<String>) -> Self {
        self.holder = holder.into();
        self
    }

    /// Waiting up to `wait` for another holder to let go: what a host taking over from one
    /// that died does.
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }
}

/// A run journal on JetStream: one subject of a stream per instance, held by one host at a
/// time through a [`Lease`].
///
/// ```no_run
/// use goondan_runtime::step::journal::{Journal, NatsJournal, NatsJournalOptions, Record};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = async_nats::connect("nats://127.0.0.1:4222").await?;
/// let jetstream = async_nats::jetstream::new(client);
/// let options = NatsJournalOptions::default().holder("host-a");
/// let journal = NatsJournal::open(&jetstream, "helper", "default", &options).await?;
/// journal.append(&[Record::Imported { messages: Vec::new() }]).await?;
/// assert_eq!(journal.read().await?.records.len(), 1);
///
/// // Another host is refused while this one holds the instance.
/// let other = NatsJournalOptions::default().holder("host-b");
/// assert!(NatsJournal::open(&jetstream, "helper", "default", &other).await.is_err());
/// journal.release().await?;
/// # Ok(())
/// # }
/// ```
pub struct NatsJournal {
    place: String,
    subject: String,
    jetstream: jetstream::Context,
    stream: stream::Stream,
    max_payload: usize,
    /// What the next write follows.
    last: tokio::sync::Mutex<Last>,
    lease: Mutex<Option<Lease>>,
}

/// Where the next write goes.
#[derive(Debug, Clone, Copy, Default)]
struct Last {
    /// The stream sequence of the journal's last message: what the next write expects.
    sequence: u64,
    /// The sequence of a torn last message the next write leaves out.
    torn: Option<u64>,
}

impl std::fmt::Debug for NatsJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsJournal")
            .field("place", &self.place)
            .finish_non_exhaustive()
    }
}

impl NatsJournal {
    /// Opens the journal of `agent`'s instance `instance_key`: creates the stream and the
    /// lease bucket when missing, takes the instance's lease, and leaves out a torn last
    /// write (with a warning [`read`](Journal::read) tells).
    ///
    /// Fails when another host holds the lease after `options.wait`
    /// ([`JournalError::Held`]), when a name cannot be a subject token
    /// ([`JournalError::Name`]), when a newer goondan wrote the journal's last write
    /// ([`JournalError::NewerFormat`]), or when the server refuses (no JetStream, say).
    pub async fn open(
        jetstream: &jetstream::Context,
        agent: &str,
        instance_key: &str,
        options: &NatsJournalOptions,
    ) -> Result<Self, JournalError> {
        let Place { subject, key } = Place::new(&options.subject_prefix, agent, instance_key)?;
        let place = format!("{}/{subject}", options.stream);
        let stream = jetstream
            .get_or_create_stream(stream::Config {
                name: options.stream.clone(),
                description: Some("goondan: the run journals of agent instances".to_owned()),
                subjects: vec![format!("{}.>", options.subject_prefix)],
                storage: stream::StorageType::File,
                allow_direct: true,
                ..stream::Config::default()
            })
            .await
            .map_err(|e| JournalError::storage(&place, e))?;
        let bucket = Lease::bucket(jetstream, &options.lease_bucket, options.lease_ttl).await?;
        let lease = Lease::acquire(&bucket, &key, &options.holder, options.wait).await?;
        let max_payload = jetstream.client().server_info().max_payload;
        let mut journal = Self {
            place,
            subject,
            jetstream: jetstream.clone(),
            stream,
            max_payload,
            last: tokio::sync::Mutex::new(Last::default()),
            lease: Mutex::new(Some(lease)),
        };
        if let Some((sequence, decoded)) = journal.last_message().await? {
            let torn = matches!(decoded, Decoded::Unreadable(_)).then_some(sequence);
            *journal.last.get_mut() = Last { sequence, torn };
        }
        Ok(journal)
    }

    /// `{stream}/{subject}`: where the journal is.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// The journal's subject.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Lets go of the instance's lease at once, so another host can open the journal without
    /// waiting for the lease to expire. The journal writes nothing after
    /// ([`JournalError::Lost`]). Dropping the journal lets go in the background.
    pub async fn release(&self) -> Result<(), JournalError> {
        let lease = lock(&self.lease).take();
        match lease {
            Some(lease) => lease.release().await,
            None => Ok(()),
        }
    }

    /// The journal's last message, as `(stream sequence, message)`.
    async fn last_message(&self) -> Result<Option<(u64, Decoded)>, JournalError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject)
            .await
        {
            Ok(message) => {
                let format = format_of(message.headers.get(FORMAT_HEADER));
                let decoded = message::decode(format, &message.payload, &self.place)?;
                Ok(Some((message.sequence, decoded)))
            }
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(JournalError::storage(&self.place, e)),
        }
    }

    fn check_lease(&self) -> Result<(), JournalError> {
        let lease = lock(&self.lease);
        let held = match lease.as_ref() {
            Some(lease) => lease.check(),
            None => Err("this host let go of its lease".to_owned()),
        };
        held.map_err(|reason| JournalError::Lost {
            place: self.place.clone(),
            reason: format!("its lease is gone ({reason})"),
        })
    }

    async fn write(&self, records: &[Record]) -> Result<(), JournalError> {
        if records.is_empty() {
            return Ok(());
        }
        self.check_lease()?;
        let payload = message::encode(records, &self.place, self.max_payload)?;
        let bytes = payload.len();
        let mut last = self.last.lock().await;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(FORMAT_HEADER, FORMAT_VERSION.to_string().as_str());
        headers.insert(
            async_nats::header::NATS_EXPECTED_LAST_SUBJECT_SEQUENCE,
            async_nats::HeaderValue::from(last.sequence),
        );
        if let Some(torn) = last.torn {
            headers.insert(SKIPS_HEADER, async_nats::HeaderValue::from(torn));
        }
        let published = async {
            self.jetstream
                .publish_with_headers(self.subject.clone(), headers, payload)
                .await?
                .await
        };
        match published.await {
            Ok(ack) => {
                *last = Last {
                    sequence: ack.sequence,
                    torn: None,
                };
                Ok(())
            }
            Err(e) => Err(self.publish_error(e, last.sequence, bytes)),
        }
    }

    fn publish_error(
        &self,
        e: jetstream::context::PublishError,
        last: u64,
        bytes: usize,
    ) -> JournalError {
        use jetstream::context::PublishErrorKind;
        match e.kind() {
            PublishErrorKind::WrongLastSequence => JournalError::Lost {
                place: self.place.clone(),
                reason: format!(
                    "another writer wrote to it after this host's last write (stream sequence \
                     {last})"
                ),
            },
            PublishErrorKind::MaxPayloadExceeded => JournalError::TooLarge {
                place: self.place.clone(),
                what: "write",
                bytes,
                limit: self.max_payload,
            },
            _ => JournalError::storage(&self.place, e),
        }
    }

    async fn load(&self) -> Result<Recovered, JournalError> {
        let mut warnings = Vec::new();
        let mut records = Vec::new();
        let Some((end, _)) = self.last_message().await? else {
            return Ok(Recovered { records, warnings });
        };
        let consumer = self
            .stream
            .create_consumer(consumer::pull::OrderedConfig {
                filter_subject: self.subject.clone(),
                deliver_policy: consumer::DeliverPolicy::All,
                ..consumer::pull::OrderedConfig::default()
            })
            .await
            .map_err(|e| JournalError::storage(&self.place, e))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| JournalError::storage(&self.place, e))?;
        let mut written = 0u64;
        // A message that did not parse, as (write, stream sequence, why): left out when the
        // next write skips it or when it is the last, damage otherwise.
        let mut unreadable: Option<(u64, u64, String)> = None;
        loop {
            let next = tokio::time::timeout(READ_WAIT, messages.next()).await;
            let message = match next {
                Ok(Some(Ok(message))) => message,
                Ok(Some(Err(e))) => return Err(JournalError::storage(&self.place, e)),
                Ok(None) | Err(_) => {
                    let short = format!(
                        "the server sent the journal only up to write {written} within \
                         {READ_WAIT:?}; its last is at stream sequence {end}"
                    );
                    return Err(JournalError::storage(&self.place, short));
                }
            };
            let sequence = message
                .info()
                .map_err(|source| JournalError::storage(&self.place, source))?
                .stream_sequence;
            written += 1;
            let header = |name| format_of(message.headers.as_ref().and_then(|h| h.get(name)));
            if let Some((write, torn, reason)) = unreadable.take() {
                let skips = header(SKIPS_HEADER).and_then(|s| s.trim().parse::<u64>().ok());
                if skips != Some(torn) {
                    return Err(JournalError::Corrupt {
                        place: self.place.clone(),
                        position: records.len() as u64 + 1,
                        reason: format!("write {write} (stream sequence {torn}): {reason}"),
                    });
                }
            }
            match message::decode(header(FORMAT_HEADER), &message.payload, &self.place)? {
                Decoded::Records(mut write) => records.append(&mut write),
                Decoded::Unreadable(reason) => unreadable = Some((written, sequence, reason)),
            }
            if sequence >= end {
                if let Some((write, torn, reason)) = unreadable {
                    let warning = format!(
                        "the journal `{}` ends in a torn write (write {write}, stream sequence \
                         {torn}: {reason}); it goes on from its last complete write",
                        self.place
                    );
                    tracing::warn!(target: "goondan::journal", journal = %self.place, "{warning}");
                    warnings.push(warning);
                }
                return Ok(Recovered { records, warnings });
            }
        }
    }
}

impl Journal for NatsJournal {
    fn append<'a>(&'a self, records: &'a [Record]) -> JournalFuture<'a, ()> {
        Box::pin(self.write(records))
    }

    fn read(&self) -> JournalFuture<'_, Recovered> {
        Box::pin(self.load())
    }
}

fn format_of(value: Option<&async_nats::HeaderValue>) -> Option<&str> {
    value.map(async_nats::HeaderValue::as_str)
}

/// `{hostname}:{pid}`: unique among the hosts of one server while each has its own name.
fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    format!("{host}:{}", std::process::id())
}
