//! `policy.journal`: where a bundle's agents keep their run journal
//! (the step loop's `journal`).

use std::time::Duration;

use serde_json::Value;

/// Where an Agent keeps its run journal: `policy.journal` of the Agent, else of a Swarm that
/// lists it ([`Bundle::journal`](super::Bundle::journal)). A program's own flags
/// (`goondan run --journal`, `--journal-lease`) win over it.
///
/// ```yaml
/// policy:
///   journal:
///     nats: nats://127.0.0.1:4222   # on JetStream; without it, SQLite in the state directory
///     lease: 10s                    # JetStream: a host's hold on an instance, unrenewed
///     durability: full              # SQLite: `normal` (the default) or `full`
/// ```
///
/// ```
/// use goondan_runtime::bundle::Bundle;
///
/// let yaml = r#"
/// apiVersion: goondan.ai/v1
/// kind: Agent
/// metadata: {name: helper}
/// spec:
///   policy:
///     journal: {nats: "nats://127.0.0.1:4222", lease: 30s}
/// "#;
/// let bundle = Bundle::from_yaml(yaml, "goondan.yaml");
/// let journal = bundle.journal("helper").unwrap_or_default();
/// assert_eq!(journal.nats.as_deref(), Some("nats://127.0.0.1:4222"));
/// assert_eq!(journal.lease, Some(std::time::Duration::from_secs(30)));
/// assert!(!journal.full);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct JournalSetting {
    /// `nats`: keep the journal on JetStream at this NATS server (`nats://`, `tls://`,
    /// `ws://` or `wss://`); `None`: a SQLite file in the state directory.
    pub nats: Option<String>,
    /// `lease`: on JetStream, how long a host's hold on an instance lasts without renewal.
    pub lease: Option<Duration>,
    /// `durability: full`: in SQLite, every write is flushed to the disk (survives a power
    /// loss, at a disk flush per write); `normal`, the default, survives the process dying.
    pub full: bool,
}

/// What is wrong with a `policy.journal`: the JSON pointer under it, and why.
pub(crate) type SettingError = (&'static str, String);

const SCHEMES: [&str; 4] = ["nats://", "tls://", "ws://", "wss://"];

impl JournalSetting {
    /// Reads a `policy.journal` mapping.
    pub(crate) fn parse(value: &Value) -> Result<Self, SettingError> {
        let Some(map) = value.as_object() else {
            return Err((
                "",
                "`policy.journal` must be a mapping: `{nats: URL, lease: 10s}` or `{durability: full}`"
                    .to_owned(),
            ));
        };
        let mut setting = Self::default();
        for (key, v) in map {
            match key.as_str() {
                "nats" => {
                    let url = v
                        .as_str()
                        .filter(|u| SCHEMES.iter().any(|s| u.starts_with(s)));
                    let why = format!(
                        "`policy.journal.nats` must be a NATS server URL (`nats://host:port`), not {v}"
                    );
                    setting.nats = Some(url.ok_or(("/nats", why))?.to_owned());
                }
                "lease" => {
                    let parsed = v
                        .as_str()
                        .and_then(|t| humantime::parse_duration(t).ok())
                        .filter(|d| !d.is_zero());
                    let why =
                        format!("`policy.journal.lease` must be a duration such as `10s`, not {v}");
                    setting.lease = Some(parsed.ok_or(("/lease", why))?);
                }
                "durability" => match v.as_str() {
                    Some("normal") => setting.full = false,
                    Some("full") => setting.full = true,
                    _ => {
                        return Err((
                            "/durability",
                            format!("`policy.journal.durability` is `normal` or `full`, not {v}"),
                        ));
                    }
                },
                other => {
                    return Err((
                        "",
                        format!(
                            "`policy.journal` has no setting `{other}` (it takes `nats`, `lease` and `durability`)"
                        ),
                    ));
                }
            }
        }
        if setting.lease.is_some() && setting.nats.is_none() {
            return Err((
                "/lease",
                "`policy.journal.lease` applies to a journal on JetStream: set `nats` too"
                    .to_owned(),
            ));
        }
        if setting.full && setting.nats.is_some() {
            return Err((
                "/durability",
                "`policy.journal.durability` applies to the SQLite journal, not to one on JetStream"
                    .to_owned(),
            ));
        }
        Ok(setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_settings_name_their_place_and_good_ones_parse() {
        let parse = |v: Value| JournalSetting::parse(&v).map_err(|(at, _)| at);
        assert_eq!(parse(json!("nats")), Err(""));
        assert_eq!(parse(json!({"nats": "http://x"})), Err("/nats"));
        assert_eq!(
            parse(json!({"nats": "nats://x", "lease": "soon"})),
            Err("/lease")
        );
        assert_eq!(
            parse(json!({"nats": "nats://x", "lease": "0s"})),
            Err("/lease")
        );
        assert_eq!(parse(json!({"lease": "5s"})), Err("/lease"));
        assert_eq!(parse(json!({"durability": "maybe"})), Err("/durability"));
        assert_eq!(
            parse(json!({"nats": "nats://x", "durability": "full"})),
            Err("/durability")
        );
        assert_eq!(parse(json!({"nast": "nats://x"})), Err(""));
        assert_eq!(
            parse(json!({"durability": "full"})),
            Ok(JournalSetting {
                full: true,
                ..JournalSetting::default()
            })
        );
        assert_eq!(parse(json!({})), Ok(JournalSetting::default()));
    }
}
