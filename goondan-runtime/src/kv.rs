//! JetStream key-value buckets (feature `nats`), opened or created the same way by every part
//! that keeps state on NATS: the run journal's leases and the approval questions.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};

/// The bucket `name`, created with file storage when there is none; `max_age` expires its
/// entries (`None`: never). The bucket's stream is made here rather than by
/// `create_key_value`, which first asks for the account's details in a shape older servers
/// (nats-server 2.9) do not send. Another process may create it meanwhile: then it is there
/// to get.
pub(crate) async fn bucket(
    jetstream: &jetstream::Context,
    name: &str,
    description: &str,
    max_age: Option<Duration>,
) -> Result<kv::Store, Box<dyn std::error::Error + Send + Sync>> {
    if let Ok(store) = jetstream.get_key_value(name).await {
        return Ok(store);
    }
    let max_age = max_age.unwrap_or_default();
    let config = stream::Config {
        name: format!("KV_{name}"),
        description: Some(description.to_owned()),
        subjects: vec![format!("$KV.{name}.>")],
        max_messages_per_subject: 1,
        max_age,
        duplicate_window: if max_age.is_zero() {
            Duration::from_secs(120)
        } else {
            max_age.min(Duration::from_secs(120))
        },
        max_bytes: -1,
        max_message_size: -1,
        storage: stream::StorageType::File,
        num_replicas: 1,
        allow_rollup: true,
        deny_delete: true,
        allow_direct: true,
        discard: stream::DiscardPolicy::New,
        ..stream::Config::default()
    };
    let created = jetstream.create_stream(config).await.err();
    jetstream
        .get_key_value(name)
        .await
        .map_err(|e| match created {
            Some(created) => created.into(),
            None => e.into(),
        })
}
