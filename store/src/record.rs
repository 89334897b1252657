//! The embedded store's record format: the value stored under an account's key.
//!
//! Format 2, little-endian: the format byte `2`; the name (u16 byte length, UTF-8 bytes);
//! x and y (f32 each); the map (u16 byte length, UTF-8 bytes); version (u64); created_ms and
//! updated_ms (i64 each); the order: a byte `0` (none) or `1` followed by the session (u64)
//! and the epoch (u32). Nothing may follow.
//!
//! Format 1 is format 2 without the order (and with the format byte `1`); it is still read,
//! as a character without an order. A new layout takes a new format byte, and decoding
//! keeps reading the old ones.

use crate::{Character, SaveOrder, StoreError};

/// The format byte of the layout before orders.
const FORMAT_V1: u8 = 1;
/// The format byte of the layout this module writes.
const FORMAT_V2: u8 = 2;

/// Encodes `character` (without its account, which is the key).
pub(crate) fn encode(character: &Character) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(1 + 2 + character.name.len() + 8 + 2 + character.map.len() + 37);
    out.push(FORMAT_V2);
    put_text(&mut out, &character.name);
    out.extend_from_slice(&character.pos[0].to_le_bytes());
    out.extend_from_slice(&character.pos[1].to_le_bytes());
    put_text(&mut out, &character.map);
    out.extend_from_slice(&character.version.to_le_bytes());
    out.extend_from_slice(&character.created_ms.to_le_bytes());
    out.extend_from_slice(&character.updated_ms.to_le_bytes());
    match character.order {
        None => out.push(0),
        Some(order) => {
            out.push(1);
            out.extend_from_slice(&order.session.to_le_bytes());
            out.extend_from_slice(&order.epoch.to_le_bytes());
        }
    }
    out
}

/// Decodes the record stored under `account`; any damage is [`StoreError::Corrupt`].
pub(crate) fn decode(account: &str, bytes: &[u8]) -> Result<Character, StoreError> {
    decode_any(account, bytes).map_err(|reason| StoreError::Corrupt {
        account: account.to_owned(),
        reason,
    })
}

fn decode_any(account: &str, bytes: &[u8]) -> Result<Character, String> {
    let mut reader = Reader { bytes };
    let format = match reader.take::<1>()? {
        [format @ (FORMAT_V1 | FORMAT_V2)] => format,
        [other] => return Err(format!("unknown record format {other}")),
    };
    let name = reader.text("name")?;
    let pos = [
        f32::from_le_bytes(reader.take()?),
        f32::from_le_bytes(reader.take()?),
    ];
    let map = reader.text("map")?;
    let version = u64::from_le_bytes(reader.take()?);
    let created_ms = i64::from_le_bytes(reader.take()?);
    let updated_ms = i64::from_le_bytes(reader.take()?);
    let order = match format {
        FORMAT_V1 => None,
        _ => match reader.take::<1>()? {
            [0] => None,
            [1] => Some(SaveOrder {
                session: u64::from_le_bytes(reader.take()?),
                epoch: u32::from_le_bytes(reader.take()?),
            }),
            [other] => return Err(format!("order flag {other} (0 or 1)")),
        },
    };
    if !reader.bytes.is_empty() {
        return Err(format!("{} bytes after the record", reader.bytes.len()));
    }
    if !pos.iter().all(|c| c.is_finite()) {
        return Err(format!("the position {pos:?} is not finite"));
    }
    if version == 0 {
        return Err("version 0 (a written record has version 1 or more)".into());
    }
    Ok(Character {
        account: account.to_owned(),
        name,
        pos,
        map,
        version,
        created_ms,
        updated_ms,
        order,
    })
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    // `validate` bounds every text to `MAX_TEXT_BYTES`, far below u16::MAX.
    let len = u16::try_from(text.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&text.as_bytes()[..usize::from(len)]);
}

/// Reads fields off the front of a record, refusing to read past its end.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let Some((head, rest)) = self.bytes.split_first_chunk::<N>() else {
            return Err(format!(
                "truncated: needed {N} more bytes, found {}",
                self.bytes.len()
            ));
        };
        self.bytes = rest;
        Ok(*head)
    }

    fn text(&mut self, field: &str) -> Result<String, String> {
        let len = usize::from(u16::from_le_bytes(self.take()?));
        if self.bytes.len() < len {
            return Err(format!(
                "truncated {field}: {len} bytes announced, {} left",
                self.bytes.len()
            ));
        }
        let (text, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        String::from_utf8(text.to_vec()).map_err(|_| format!("the {field} is not UTF-8"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Character {
        Character {
            account: "ada".into(),
            name: "Ada Lovelace".into(),
            pos: [-12.25, 1e6],
            map: "house".into(),
            version: 7,
            created_ms: 1_700_000_000_000,
            updated_ms: -5,
            order: Some(SaveOrder {
                session: 1 << 40,
                epoch: 9,
            }),
        }
    }

    #[test]
    fn round_trip() {
        let character = sample();
        assert_eq!(decode("ada", &encode(&character)).ok(), Some(character));
        let unordered = Character {
            order: None,
            ..sample()
        };
        assert_eq!(decode("ada", &encode(&unordered)).ok(), Some(unordered));
    }

    #[test]
    fn a_record_of_format_1_reads_as_a_character_without_order() {
        // Format 1 as the store wrote it before orders: format 2's bytes without the order.
        let unordered = Character {
            order: None,
            ..sample()
        };
        let mut bytes = encode(&unordered);
        assert_eq!(bytes.pop(), Some(0));
        bytes[0] = FORMAT_V1;
        assert_eq!(decode("ada", &bytes).ok(), Some(unordered));
        // Format 1 with anything after it is damaged.
        bytes.push(0);
        assert!(matches!(
            decode("ada", &bytes),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn every_truncation_and_every_extension_is_corrupt() {
        let bytes = encode(&sample());
        for len in 0..bytes.len() {
            let result = decode("ada", &bytes[..len]);
            assert!(
                matches!(&result, Err(StoreError::Corrupt { account, .. }) if account == "ada"),
                "{len}: {result:?}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode("ada", &longer),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn every_single_byte_change_decodes_or_is_corrupt_without_panic() {
        let bytes = encode(&sample());
        for i in 0..bytes.len() {
            for value in [0u8, 1, 0x7f, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[i] = value;
                // Either outcome is fine; what matters is that nothing panics.
                let _ = decode("ada", &damaged);
            }
        }
    }

    #[test]
    fn unknown_format_non_finite_position_and_bad_utf8_are_corrupt() {
        let mut bytes = encode(&sample());
        bytes[0] = 3;
        assert!(
            matches!(decode("ada", &bytes), Err(StoreError::Corrupt { reason, .. }) if reason.contains("format"))
        );

        let mut nan = sample();
        nan.pos[0] = f32::NAN;
        assert!(matches!(
            decode("ada", &encode(&nan)),
            Err(StoreError::Corrupt { .. })
        ));

        let mut bytes = encode(&sample());
        bytes[3] = 0xff; // the first byte of the name
        assert!(
            matches!(decode("ada", &bytes), Err(StoreError::Corrupt { reason, .. }) if reason.contains("UTF-8"))
        );
    }
}
