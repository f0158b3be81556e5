//! Where an agent process of `goondan run` or `goondan agent-host` keeps its run journal: a
//! SQLite file in the state directory (`journal/{agent}.{instanceKey}.sqlite3`), or, with
//! `--journal nats://...`, JetStream on that NATS server, so that another host can take the
//! instance over when this one dies (its lease in the key-value bucket says who holds it).
//! The bundle's `policy.journal` says the same for a bundle; the command line wins over it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use goondan_runtime::bundle::JournalSetting;
use goondan_runtime::step::journal::{
    Durability, Journal, NatsJournal, NatsJournalOptions, SqliteJournal,
};

use super::link::{ENV_JOURNAL, ENV_JOURNAL_LEASE, ENV_STATE};

/// How long a starting agent process waits for the journal of the process it replaces (a
/// restart, a respawn after a crash) to be let go of.
const SQLITE_WAIT: Duration = Duration::from_secs(10);

/// How long a host's hold on an instance lasts without renewal, by default: after a host dies,
/// another takes its instances over after at most this long.
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// The run journal of instance `instance_key` of `agent`, where this process's environment
/// says ([`ENV_JOURNAL`]: the command line), else where the bundle's `policy.journal`
/// (`bundle`) says, else in the state directory ([`ENV_STATE`]); `None` without any, and,
/// with the reason logged, when it cannot be opened (another process holds the instance, a
/// newer goondan wrote it): the agent then runs without one.
pub(super) fn open_from_env(
    agent: &str,
    instance_key: &str,
    bundle: Option<&JournalSetting>,
) -> Option<Arc<dyn Journal>> {
    let opened = match (nats_url(bundle), std::env::var_os(ENV_STATE)) {
        (Some(url), _) => {
            let lease = std::env::var(ENV_JOURNAL_LEASE)
                .ok()
                .and_then(|ms| ms.parse().ok())
                .map(Duration::from_millis)
                .or_else(|| bundle.and_then(|b| b.lease))
                .unwrap_or(DEFAULT_LEASE);
            open_nats(&url, lease, agent, instance_key)
        }
        (None, Some(state)) => {
            let durability = if bundle.is_some_and(|b| b.full) {
                Durability::Full
            } else {
                Durability::Normal
            };
            open_sqlite(Path::new(&state), agent, instance_key, durability)
        }
        (None, None) => return None,
    };
    opened
        .map_err(|e| {
            tracing::error!(target: "goondan::run", error = %e, "the run journal cannot be opened; this agent's turns are not kept");
        })
        .ok()
}

/// The NATS server of the journals, if they are on JetStream: the command line's
/// ([`ENV_JOURNAL`]), else the bundle's `policy.journal.nats`.
pub(super) fn nats_url(bundle: Option<&JournalSetting>) -> Option<String> {
    std::env::var(ENV_JOURNAL)
        .ok()
        .or_else(|| bundle.and_then(|b| b.nats.clone()))
}

fn open_sqlite(
    state: &Path,
    agent: &str,
    instance_key: &str,
    durability: Durability,
) -> Result<Arc<dyn Journal>, String> {
    let file = SqliteJournal::file_in(state, agent, instance_key);
    SqliteJournal::open_waiting(&file, durability, SQLITE_WAIT)
        .map(|j| Arc::new(j) as Arc<dyn Journal>)
        .map_err(|e| e.to_string())
}

/// Opens the journal on JetStream, waiting for a dead holder's lease to expire. The
/// connection takes credentials from the environment (`GOONDAN_NATS_TOKEN`, ...).
fn open_nats(
    url: &str,
    lease: Duration,
    agent: &str,
    instance_key: &str,
) -> Result<Arc<dyn Journal>, String> {
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| "the journal is opened inside the agent process's runtime".to_owned())?;
    let options = crate::cli::NatsConnection::default().options(url);
    let journal_options = NatsJournalOptions::default()
        .lease_ttl(lease)
        .wait(lease + Duration::from_secs(5));
    runtime.block_on(async {
        let client = options
            .connect("goondan-journal")
            .await
            .map_err(|e| e.to_string())?;
        let jetstream = async_nats::jetstream::new(client);
        NatsJournal::open(&jetstream, agent, instance_key, &journal_options)
            .await
            .map(|j| Arc::new(j) as Arc<dyn Journal>)
            .map_err(|e| e.to_string())
    })
}
