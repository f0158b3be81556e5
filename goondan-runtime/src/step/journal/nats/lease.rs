//! [`Lease`]: one host's hold on an instance, a key in a JetStream key-value bucket whose
//! entries expire (`max_age`), so that two hosts never run one instance at once.
//!
//! Taking it is the bucket's `create` (refused while the key is there); keeping it is an
//! `update` against the revision this host last wrote, every third of the TTL, in a task of its
//! own; letting go deletes it. A host that dies stops renewing: its entry expires after the
//! TTL, and another host can take the lease.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::kv::{self, CreateErrorKind, DeleteErrorKind, UpdateErrorKind};

use super::super::JournalError;
use crate::lock;

/// A held lease on one key of a lease bucket. Renewed in the background while it lives;
/// [`release`](Self::release) lets go at once, dropping it lets go in the background (when
/// the async runtime is still running), and a process killed without either lets go after the
/// TTL.
///
/// ```no_run
/// use std::time::Duration;
/// use goondan_runtime::step::journal::Lease;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = async_nats::connect("nats://127.0.0.1:4222").await?;
/// let jetstream = async_nats::jetstream::new(client);
/// let store = Lease::bucket(&jetstream, "goondan_leases", Duration::from_secs(10)).await?;
/// let lease = Lease::acquire(&store, "helper.default", "host-a", Duration::ZERO).await?;
/// // A second holder is refused while the first renews its lease.
/// assert!(Lease::acquire(&store, "helper.default", "host-b", Duration::ZERO).await.is_err());
/// lease.release().await?;
/// # Ok(())
/// # }
/// ```
pub struct Lease {
    shared: Arc<Shared>,
    renewer: tokio::task::JoinHandle<()>,
}

struct Shared {
    store: kv::Store,
    key: String,
    holder: String,
    ttl: Duration,
    state: Mutex<State>,
}

struct State {
    /// The revision this holder last wrote.
    revision: u64,
    /// When the server last confirmed the lease.
    renewed: Instant,
    /// Why the lease is no longer held, once it is not.
    lost: Option<String>,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("key", &self.shared.key)
            .field("holder", &self.shared.holder)
            .field("ttl", &self.shared.ttl)
            .finish_non_exhaustive()
    }
}

impl Lease {
    /// The lease bucket `name`, created (file storage, entries expiring after `ttl`) when there
    /// is none. An existing bucket keeps its own TTL, which the leases on it then use; a
    /// bucket whose entries never expire is refused, since a dead host would hold its leases
    /// for ever.
    pub async fn bucket(
        jetstream: &async_nats::jetstream::Context,
        name: &str,
        ttl: Duration,
    ) -> Result<kv::Store, JournalError> {
        let place = format!("key-value bucket {name}");
        let store = crate::kv::bucket(
            jetstream,
            name,
            "goondan: which host runs each agent instance",
            Some(ttl),
        )
        .await
        .map_err(|source| JournalError::storage(&place, source))?;
        let status = store
            .status()
            .await
            .map_err(|e| JournalError::storage(&place, e))?;
        if status.max_age().is_zero() {
            return Err(JournalError::storage(
                place,
                "its entries never expire (no max age), so a lease of a host that died would \
                 never end: give the leases a bucket with a max age",
            ));
        }
        Ok(store)
    }

    /// Takes the lease on `key` in `store` for `holder` (a name of this host), waiting up to
    /// `wait` for another holder to let go or for its lease to expire. Refused with
    /// [`JournalError::Held`] (naming the holder) when it is still held after `wait`.
    pub async fn acquire(
        store: &kv::Store,
        key: &str,
        holder: &str,
        wait: Duration,
    ) -> Result<Self, JournalError> {
        let place = format!("lease {key}");
        let ttl = store
            .status()
            .await
            .map_err(|e| JournalError::storage(&place, e))?
            .max_age();
        let deadline = Instant::now() + wait;
        let revision = loop {
            match store
                .create(key, holder.to_owned().into_bytes().into())
                .await
            {
                Ok(revision) => break revision,
                Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                    if Instant::now() >= deadline {
                        let holder = match store.get(key).await {
                            Ok(Some(value)) => String::from_utf8_lossy(&value).into_owned(),
                            _ => "another host".to_owned(),
                        };
                        return Err(JournalError::Held { place, holder, ttl });
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(JournalError::storage(&place, e)),
            }
        };
        let shared = Arc::new(Shared {
            store: store.clone(),
            key: key.to_owned(),
            holder: holder.to_owned(),
            ttl,
            state: Mutex::new(State {
                revision,
                renewed: Instant::now(),
                lost: None,
            }),
        });
        let renewer = tokio::spawn(renew_every(Arc::clone(&shared), ttl / 3));
        Ok(Self { shared, renewer })
    }

    /// The key.
    pub fn key(&self) -> &str {
        &self.shared.key
    }

    /// Who holds it: this host's name as given to [`acquire`](Self::acquire).
    pub fn holder(&self) -> &str {
        &self.shared.holder
    }

    /// How long the lease lasts without a renewal: the bucket's max age.
    pub fn ttl(&self) -> Duration {
        self.shared.ttl
    }

    /// `Ok` while the lease is held: renewed within its TTL, and not taken by another holder.
    /// Otherwise why not.
    pub fn check(&self) -> Result<(), String> {
        self.shared.check()
    }

    /// Renews the lease now (the background task does it every third of the TTL).
    pub async fn renew(&self) -> Result<(), JournalError> {
        self.shared.renew().await;
        self.check().map_err(|reason| JournalError::Lost {
            place: format!("lease {}", self.shared.key),
            reason,
        })
    }

    /// Lets go of the lease: another host can take it at once.
    pub async fn release(self) -> Result<(), JournalError> {
        self.renewer.abort();
        self.shared.release().await
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
        if lock(&self.shared.state).lost.is_some() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = Arc::clone(&self.shared);
            runtime.spawn(async move {
                let _ = shared.release().await;
            });
        }
    }
}

impl Shared {
    fn check(&self) -> Result<(), String> {
        let state = lock(&self.state);
        if let Some(lost) = &state.lost {
            return Err(lost.clone());
        }
        if state.renewed.elapsed() >= self.ttl {
            return Err(format!(
                "it was not renewed within its {:?}, so another host may have taken it",
                self.ttl
            ));
        }
        Ok(())
    }

    async fn renew(&self) {
        let revision = {
            let state = lock(&self.state);
            if state.lost.is_some() {
                return;
            }
            state.revision
        };
        let asked = Instant::now();
        let value = self.holder.clone().into_bytes().into();
        match self.store.update(&self.key, value, revision).await {
            Ok(revision) => {
                let mut state = lock(&self.state);
                state.revision = revision;
                state.renewed = asked;
            }
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                lock(&self.state).lost = Some(
                    "another host took it after it expired (this host did not renew it in time)"
                        .to_owned(),
                );
            }
            Err(e) => {
                tracing::warn!(target: "goondan::journal", lease = %self.key,
                               "cannot renew the lease: {e}");
            }
        }
    }

    async fn release(&self) -> Result<(), JournalError> {
        let mut revision = {
            let mut state = lock(&self.state);
            if state.lost.is_some() {
                return Ok(());
            }
            state.lost = Some("this host let go of it".to_owned());
            state.revision
        };
        let place = format!("lease {}", self.key);
        for _ in 0..3 {
            match self
                .store
                .delete_expect_revision(&self.key, Some(revision))
                .await
            {
                Ok(()) => return Ok(()),
                // A renewal the release cut short may have reached the server: the entry is
                // still this host's at a later revision, so let go of that one.
                Err(e) if e.kind() == DeleteErrorKind::WrongLastRevision => {
                    match self.store.entry(&self.key).await {
                        Ok(Some(entry))
                            if entry.operation == kv::Operation::Put
                                && *entry.value == *self.holder.as_bytes() =>
                        {
                            revision = entry.revision;
                        }
                        // Another host's now, or gone: nothing of this host's to let go of.
                        Ok(_) => return Ok(()),
                        Err(e) => return Err(JournalError::storage(&place, e)),
                    }
                }
                Err(e) => return Err(JournalError::storage(&place, e)),
            }
        }
        Err(JournalError::storage(
            place,
            "the lease kept changing while it was let go of",
        ))
    }
}

async fn renew_every(shared: Arc<Shared>, period: Duration) {
    let period = period.max(Duration::from_millis(10));
    loop {
        tokio::time::sleep(period).await;
        shared.renew().await;
        if lock(&shared.state).lost.is_some() {
            return;
        }
    }
}
