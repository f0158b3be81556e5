//! One write of a journal on JetStream as a message: its records as a JSON array, and the
//! format version in the [`FORMAT_HEADER`] header.

use bytes::Bytes;

use super::super::JournalError;
use super::super::record::{FORMAT_VERSION, MAX_RECORD_BYTES, Record};

/// The header that carries a write's format version.
pub(super) const FORMAT_HEADER: &str = "Goondan-Journal-Format";

/// The header of the first write after a torn one: the stream sequence of the torn message,
/// which the journal leaves out.
pub(super) const SKIPS_HEADER: &str = "Goondan-Journal-Skips";

/// What a message read back holds.
#[derive(Debug, PartialEq)]
pub(super) enum Decoded {
    /// The records of one write.
    Records(Vec<Record>),
    /// Not a write this build can read, and why: torn when it is the last message, damage
    /// before the end.
    Unreadable(String),
}

/// The payload of a write of `records` to the journal at `place`. A record larger than
/// [`MAX_RECORD_BYTES`], or a write larger than `max_payload` (the server's limit of a
/// message), is [`JournalError::TooLarge`].
pub(super) fn encode(
    records: &[Record],
    place: &str,
    max_payload: usize,
) -> Result<Bytes, JournalError> {
    let too_large = |what, bytes, limit| JournalError::TooLarge {
        place: place.to_owned(),
        what,
        bytes,
        limit,
    };
    let mut payload = Vec::with_capacity(256 * records.len() + 2);
    payload.push(b'[');
    for (i, record) in records.iter().enumerate() {
        if i > 0 {
            payload.push(b',');
        }
        let start = payload.len();
        serde_json::to_writer(&mut payload, record).map_err(|e| JournalError::storage(place, e))?;
        let bytes = payload.len() - start;
        if bytes > MAX_RECORD_BYTES {
            return Err(too_large("record", bytes, MAX_RECORD_BYTES));
        }
    }
    payload.push(b']');
    if payload.len() > max_payload {
        return Err(too_large("write", payload.len(), max_payload));
    }
    Ok(Bytes::from(payload))
}

/// Reads a message with the format header `format` and `payload`. A format newer than
/// [`FORMAT_VERSION`] is [`JournalError::NewerFormat`]; anything else that is not a write is
/// [`Decoded::Unreadable`].
pub(super) fn decode(
    format: Option<&str>,
    payload: &[u8],
    place: &str,
) -> Result<Decoded, JournalError> {
    let Some(format) = format else {
        return Ok(Decoded::Unreadable(format!(
            "no `{FORMAT_HEADER}` header: not a write of a goondan journal"
        )));
    };
    let Ok(found) = format.trim().parse::<u32>() else {
        return Ok(Decoded::Unreadable(format!(
            "the format `{format}` is not a number"
        )));
    };
    if found > FORMAT_VERSION {
        return Err(JournalError::NewerFormat {
            place: place.to_owned(),
            found,
            supported: FORMAT_VERSION,
        });
    }
    Ok(match serde_json::from_slice::<Vec<Record>>(payload) {
        Ok(records) => Decoded::Records(records),
        Err(e) => Decoded::Unreadable(format!(
            "not a write of records ({} bytes): {e}",
            payload.len()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(call: &str) -> Record {
        Record::CallStarted {
            turn_id: "t1".into(),
            message_id: "m1".into(),
            call_id: call.into(),
        }
    }

    #[test]
    fn a_write_comes_back_as_its_records() {
        let written = [started("c1"), started("c2")];
        let payload = encode(&written, "j", 1 << 20).unwrap_or_default();
        let format = FORMAT_VERSION.to_string();
        let read = decode(Some(&format), &payload, "j").ok();
        assert_eq!(read, Some(Decoded::Records(written.to_vec())));
    }

    #[test]
    fn a_newer_format_is_refused_and_an_older_one_read() {
        let payload = encode(&[started("c1")], "j", 1 << 20).unwrap_or_default();
        let newer = decode(Some("99"), &payload, "j");
        assert!(
            matches!(
                newer,
                Err(JournalError::NewerFormat {
                    found: 99,
                    supported: FORMAT_VERSION,
                    ..
                })
            ),
            "{newer:?}"
        );
        assert!(matches!(
            decode(Some("0"), &payload, "j"),
            Ok(Decoded::Records(_))
        ));
    }

    #[test]
    fn a_message_without_a_format_a_wrong_type_or_cut_json_is_unreadable_with_the_reason() {
        let unreadable = |format: Option<&str>, payload: &[u8]| match decode(format, payload, "j") {
            Ok(Decoded::Unreadable(reason)) => reason,
            other => panic!("{other:?}"),
        };
        assert!(unreadable(None, b"[]").contains("no `Goondan-Journal-Format` header"));
        assert!(unreadable(Some("one"), b"[]").contains("not a number"));
        let wrong_type = unreadable(Some("1"), br#"[{"type":"callExploded","turnId":"t"}]"#);
        assert!(wrong_type.contains("callExploded"), "{wrong_type}");
        assert!(unreadable(Some("1"), br#"{"type":"callStarted"}"#).contains("not a write"));
        let full = encode(&[started("c1")], "j", 1 << 20).unwrap_or_default();
        let cut = unreadable(Some("1"), &full[..full.len() / 2]);
        assert!(cut.contains("EOF"), "{cut}");
    }

    #[test]
    fn a_write_over_the_servers_limit_or_a_huge_record_is_too_large() {
        let big = Record::Imported {
            messages: vec![crate::tools::context::Message::assistant(
                "m1",
                Some("x".repeat(2000)),
                Vec::new(),
            )],
        };
        let err = encode(&[big.clone(), big], "j", 1000);
        assert!(
            matches!(
                err,
                Err(JournalError::TooLarge {
                    what: "write",
                    limit: 1000,
                    ..
                })
            ),
            "{err:?}"
        );
        let huge = Record::Imported {
            messages: vec![crate::tools::context::Message::assistant(
                "m1",
                Some("x".repeat(MAX_RECORD_BYTES)),
                Vec::new(),
            )],
        };
        let err = encode(&[huge], "j", usize::MAX);
        let message = err.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("record") && message.contains("67108864"),
            "{message}"
        );
    }
}
