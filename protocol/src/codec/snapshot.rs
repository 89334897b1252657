//! Snapshot datagrams by hand, in bincode's format without serde's machinery: the server
//! encodes one per client per tick, a client (the load-test swarm: a thousand of them)
//! decodes as many. The bytes are exactly those of [`super::encode_datagram`] and
//! [`super::decode_datagram`] of [`ServerDatagram::Snapshot`].

use super::{DecodeError, EncodeError, MAX_DATAGRAM_BYTES, decode_datagram, version_byte};
use crate::messages::{
    Change, EntityKind, EntityState, Motion, NetId, QPos, ServerDatagram, Snapshot,
};

/// Encodes a snapshot datagram straight into `out` (cleared first): the same bytes as
/// [`encode_datagram`](super::encode_datagram) of `ServerDatagram::Snapshot`, written by
/// hand in bincode's format (variant index, then each field as a variable-length integer,
/// signed ones zigzagged, options as a tag byte, lists as their length then their items),
/// without serde's machinery. A server that decides what to send entity by entity writes
/// the same bytes with a [`SnapshotEncoder`], without building the lists first.
pub fn encode_snapshot_datagram(
    snapshot: &crate::messages::Snapshot,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    // The most bytes the snapshot can take, and room for the widest single write past it:
    // the writer stores eight bytes at a time and moves on by as many as the value takes.
    let most = snapshot_header_len(snapshot)
        + 3 * LIST_LENGTH_GROWTH
        + snapshot.entered.len() * MAX_ENTITY_BYTES
        + snapshot.changed.len() * MAX_CHANGE_BYTES
        + snapshot.left.len() * MAX_NET_ID_BYTES;
    // Only what the buffer did not hold yet is filled; it is cut to size below.
    out.resize(most + WRITE_SLACK, 0);
    let mut writer = Writer { out, at: 0 };
    writer.header(
        snapshot.tick,
        snapshot.baseline_tick,
        snapshot.last_input_seq,
    );
    writer.varint(snapshot.entered.len() as u64);
    for entity in &snapshot.entered {
        writer.entity(entity);
    }
    writer.varint(snapshot.changed.len() as u64);
    for change in &snapshot.changed {
        writer.change(change);
    }
    writer.varint(snapshot.left.len() as u64);
    for id in &snapshot.left {
        writer.net_id(id);
    }
    let size = writer.at;
    cut(out, size)
}

/// Cuts the encoded datagram in `out` to its `size`, refusing it over
/// [`MAX_DATAGRAM_BYTES`].
fn cut(out: &mut Vec<u8>, size: usize) -> Result<(), EncodeError> {
    out.truncate(size);
    if size > MAX_DATAGRAM_BYTES {
        return Err(EncodeError::TooLarge {
            size,
            limit: MAX_DATAGRAM_BYTES,
        });
    }
    Ok(())
}

/// Bytes of the datagram of `snapshot` with its three lists empty (the header and three
/// one-byte lengths), worked out without encoding.
pub fn snapshot_header_len(snapshot: &Snapshot) -> usize {
    header_len(
        snapshot.tick,
        snapshot.baseline_tick,
        snapshot.last_input_seq,
    )
}

/// [`snapshot_header_len`] of a snapshot with this header.
fn header_len(tick: u64, baseline_tick: Option<u64>, last_input_seq: u32) -> usize {
    let baseline = baseline_tick.map_or(0, super::varint_len);
    // Version, variant, tick, the baseline's option tag and value, the input sequence,
    // three list lengths.
    2 + super::varint_len(tick) + 1 + baseline + super::varint_len(u64::from(last_input_seq)) + 3
}

/// A snapshot datagram written entry by entry, without the snapshot's lists: its entered
/// entities, changes and leaving ids may come in any interleaving (each list keeps the
/// order its entries came in), and [`SnapshotEncoder::finish`] puts the datagram together.
/// The bytes are those of [`encode_snapshot_datagram`] of the snapshot with those lists.
/// For a server that decides what each client is sent entity by entity: it writes each
/// entry once, where building the lists and then encoding them writes it twice. Reused
/// from datagram to datagram, it allocates only while its lists grow.
#[derive(Debug, Default)]
pub struct SnapshotEncoder {
    tick: u64,
    baseline_tick: Option<u64>,
    last_input_seq: u32,
    entered: Entries,
    changed: Entries,
    left: Entries,
}

/// One list's entries, encoded: the first `at` bytes of `bytes` (which holds at least
/// [`WRITE_SLACK`] more), and how many there are.
#[derive(Debug, Default)]
struct Entries {
    bytes: Vec<u8>,
    at: usize,
    count: u64,
}

impl Entries {
    /// Adds one entry of at most `most` bytes, written by `write`.
    #[inline(always)]
    fn push(&mut self, most: usize, write: impl FnOnce(&mut Writer<'_>)) {
        let end = self.at + most + WRITE_SLACK;
        if self.bytes.len() < end {
            self.bytes.resize(end.max(2 * self.bytes.len()), 0);
        }
        let mut writer = Writer {
            out: &mut self.bytes,
            at: self.at,
        };
        write(&mut writer);
        self.at = writer.at;
        self.count += 1;
    }

    fn clear(&mut self) {
        self.at = 0;
        self.count = 0;
    }
}

impl SnapshotEncoder {
    /// An encoder with no snapshot begun (the header of tick 0, no entries).
    pub fn new() -> SnapshotEncoder {
        SnapshotEncoder::default()
    }

    /// Begins the snapshot of `tick` against `baseline_tick`, answering input
    /// `last_input_seq`, with empty lists (what an earlier snapshot wrote is dropped).
    pub fn begin(&mut self, tick: u64, baseline_tick: Option<u64>, last_input_seq: u32) {
        self.tick = tick;
        self.baseline_tick = baseline_tick;
        self.last_input_seq = last_input_seq;
        self.entered.clear();
        self.changed.clear();
        self.left.clear();
    }

    /// [`snapshot_header_len`] of the snapshot begun: its bytes with its lists empty.
    pub fn header_len(&self) -> usize {
        header_len(self.tick, self.baseline_tick, self.last_input_seq)
    }

    /// Adds an entity to the entered list.
    #[inline]
    pub fn enter(&mut self, entity: &EntityState) {
        self.entered
            .push(MAX_ENTITY_BYTES, |writer| writer.entity(entity));
    }

    /// Adds a change to the changed list.
    #[inline]
    pub fn change(&mut self, change: &Change) {
        self.changed
            .push(MAX_CHANGE_BYTES, |writer| writer.change(change));
    }

    /// Adds the change that takes `old` to `new` (the same entity) to the changed list:
    /// the entry of [`Change::between`]`(old, new)`, written without making the change.
    #[inline]
    pub fn change_between(&mut self, old: &EntityState, new: &EntityState) {
        self.changed.push(MAX_CHANGE_BYTES, |writer| {
            writer.net_id(&new.id);
            writer.zigzag(new.pos.x_cm.wrapping_sub(old.pos.x_cm));
            writer.zigzag(new.pos.y_cm.wrapping_sub(old.pos.y_cm));
            writer.motion_if(new.motion != old.motion, new.motion);
        });
    }

    /// Adds an id to the left list.
    #[inline]
    pub fn leave(&mut self, id: &NetId) {
        self.left.push(MAX_NET_ID_BYTES, |writer| writer.net_id(id));
    }

    /// Writes the datagram into `out` (cleared first): the header, then each list's
    /// length and entries. A datagram over [`MAX_DATAGRAM_BYTES`] is refused, as
    /// [`encode_snapshot_datagram`] refuses it. The snapshot stays begun: finishing again
    /// writes the same bytes.
    pub fn finish(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let lists = [&self.entered, &self.changed, &self.left];
        let most = self.header_len()
            + 3 * LIST_LENGTH_GROWTH
            + lists.iter().map(|list| list.at).sum::<usize>();
        out.resize(most + WRITE_SLACK, 0);
        let mut writer = Writer { out, at: 0 };
        writer.header(self.tick, self.baseline_tick, self.last_input_seq);
        for list in lists {
            writer.varint(list.count);
            writer.bytes(&list.bytes[..list.at]);
        }
        let size = writer.at;
        cut(out, size)
    }
}

/// The most bytes one entered entity, change or id takes (each varint of a `u32` at most
/// five bytes, a `u16` three).
const MAX_NET_ID_BYTES: usize = 5 + 5;
const MAX_ENTITY_BYTES: usize = MAX_NET_ID_BYTES + 1 + 3 + 5 + 5 + 1;
const MAX_CHANGE_BYTES: usize = MAX_NET_ID_BYTES + 5 + 5 + 2;
/// What a list's length may take beyond the one byte [`snapshot_header_len`] counts (a
/// length is at most a `u64`'s nine bytes).
const LIST_LENGTH_GROWTH: usize = 8;
/// Bytes the buffer holds past the most the encoding takes: a write stores eight bytes.
const WRITE_SLACK: usize = 8;

/// Writes bincode's encodings into a buffer sized for them beforehand, eight bytes at a
/// time (little endian: the value's bytes first), moving on by the bytes the value takes.
struct Writer<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    /// Writes the low `len` bytes of `bytes` (`len` at most 8).
    #[inline(always)]
    fn put(&mut self, bytes: u64, len: usize) {
        self.out[self.at..self.at + 8].copy_from_slice(&bytes.to_le_bytes());
        self.at += len;
    }

    /// bincode's variable-length unsigned integer: one byte below 251, else a marker byte
    /// (251, 252, 253 for 2, 4, 8 bytes) and the value little endian in the fewest of
    /// those widths.
    #[inline(always)]
    fn varint(&mut self, value: u64) {
        match value {
            0..=250 => self.put(value, 1),
            251..=0xffff => self.put(251 | value << 8, 3),
            0x1_0000..=0xffff_ffff => self.put(252 | value << 8, 5),
            _ => {
                self.put(253, 1);
                self.put(value, 8);
            }
        }
    }

    /// A signed integer, zigzagged (0, -1, 1, -2, ... as 0, 1, 2, 3, ...), as a varint.
    #[inline(always)]
    fn zigzag(&mut self, value: i32) {
        self.varint(u64::from(((value << 1) ^ (value >> 31)) as u32));
    }

    #[inline(always)]
    fn net_id(&mut self, id: &NetId) {
        self.varint(u64::from(id.index));
        self.varint(u64::from(id.generation));
    }

    /// The version byte, the variant and the snapshot's fields before its lists.
    fn header(&mut self, tick: u64, baseline_tick: Option<u64>, last_input_seq: u32) {
        self.put(u64::from(version_byte()), 1);
        // `ServerDatagram::Snapshot` is variant 0.
        self.put(0, 1);
        self.varint(tick);
        match baseline_tick {
            None => self.put(0, 1),
            Some(tick) => {
                self.put(1, 1);
                self.varint(tick);
            }
        }
        self.varint(u64::from(last_input_seq));
    }

    #[inline(always)]
    fn entity(&mut self, entity: &EntityState) {
        self.net_id(&entity.id);
        self.put(entity.kind as u64, 1);
        self.varint(u64::from(entity.radius_cm));
        self.zigzag(entity.pos.x_cm);
        self.zigzag(entity.pos.y_cm);
        self.put(entity.motion as u64, 1);
    }

    #[inline(always)]
    fn change(&mut self, change: &Change) {
        self.net_id(&change.id);
        self.zigzag(change.dx_cm);
        self.zigzag(change.dy_cm);
        self.motion_if(
            change.motion.is_some(),
            change.motion.unwrap_or(Motion::Idle),
        );
    }

    /// A change's optional motion: the option's tag, then `motion` if `changed`, chosen
    /// without a branch (whether a change carries a motion varies from one to the next).
    /// Without it, the motion's byte is written past the entry's end: the next write
    /// overwrites it, or the datagram ends before it.
    #[inline(always)]
    fn motion_if(&mut self, changed: bool, motion: Motion) {
        let some = u64::from(changed);
        self.put(some | (motion as u64) << 8, 1 + some as usize);
    }

    /// Bytes as they are (the buffer holds them and [`WRITE_SLACK`] more).
    fn bytes(&mut self, bytes: &[u8]) {
        self.out[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
}

/// Decodes a snapshot datagram into `snapshot`, reusing the memory of its lists: the
/// result of [`decode_datagram`]`::<ServerDatagram>`, the same snapshot or the same error,
/// without serde's machinery and, once the lists have grown, without allocating. Bytes the
/// hand-written reader does not take are handed to `decode_datagram`, so every error is
/// its error. On an error `snapshot` holds no meaningful value.
pub fn decode_snapshot_datagram(bytes: &[u8], snapshot: &mut Snapshot) -> Result<(), DecodeError> {
    if read_snapshot_datagram(bytes, snapshot).is_some() {
        return Ok(());
    }
    let ServerDatagram::Snapshot(decoded) = decode_datagram::<ServerDatagram>(bytes)?;
    *snapshot = decoded;
    Ok(())
}

/// The snapshot in `bytes`, or `None` for anything short of one whole valid datagram.
fn read_snapshot_datagram(bytes: &[u8], snapshot: &mut Snapshot) -> Option<()> {
    let (&version, body) = bytes.split_first()?;
    if bytes.len() > MAX_DATAGRAM_BYTES || version != version_byte() {
        return None;
    }
    let mut reader = Reader(body);
    // `ServerDatagram::Snapshot` is variant 0.
    if reader.unsigned(U32_MARKER)? != 0 {
        return None;
    }
    snapshot.tick = reader.unsigned(U64_MARKER)?;
    snapshot.baseline_tick = match reader.byte()? {
        0 => None,
        1 => Some(reader.unsigned(U64_MARKER)?),
        _ => return None,
    };
    snapshot.last_input_seq = reader.u32()?;
    snapshot.entered.clear();
    for _ in 0..reader.unsigned(U64_MARKER)? {
        snapshot.entered.push(reader.entity()?);
    }
    snapshot.changed.clear();
    for _ in 0..reader.unsigned(U64_MARKER)? {
        snapshot.changed.push(reader.change()?);
    }
    snapshot.left.clear();
    for _ in 0..reader.unsigned(U64_MARKER)? {
        snapshot.left.push(reader.net_id()?);
    }
    // Trailing bytes are an error.
    reader.0.is_empty().then_some(())
}

/// The largest varint marker a type takes: 251 announces 2 bytes, 252 four, 253 eight
/// (bincode refuses a wider marker than the type's, and 254, 255 here).
const U16_MARKER: u8 = 251;
const U32_MARKER: u8 = 252;
const U64_MARKER: u8 = 253;

/// The bytes not read yet.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&byte, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(byte)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (bytes, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*bytes)
    }

    /// A variable-length unsigned integer whose marker is at most `widest`. bincode takes
    /// values written wider than needed, and so does this.
    fn unsigned(&mut self, widest: u8) -> Option<u64> {
        let marker = self.byte()?;
        if marker > widest {
            return None;
        }
        match marker {
            0..=250 => Some(u64::from(marker)),
            251 => self.array().map(|b| u64::from(u16::from_le_bytes(b))),
            252 => self.array().map(|b| u64::from(u32::from_le_bytes(b))),
            _ => self.array().map(u64::from_le_bytes),
        }
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.unsigned(U32_MARKER)?).ok()
    }

    /// A zigzagged signed integer.
    fn i32(&mut self) -> Option<i32> {
        let zigzag = self.u32()?;
        Some(((zigzag >> 1) as i32) ^ -((zigzag & 1) as i32))
    }

    fn net_id(&mut self) -> Option<NetId> {
        Some(NetId {
            index: self.u32()?,
            generation: self.u32()?,
        })
    }

    // Fields are read in the order written.
    fn entity(&mut self) -> Option<EntityState> {
        Some(EntityState {
            id: self.net_id()?,
            kind: match self.unsigned(U32_MARKER)? {
                0 => EntityKind::Npc,
                1 => EntityKind::Player,
                _ => return None,
            },
            radius_cm: u16::try_from(self.unsigned(U16_MARKER)?).ok()?,
            pos: QPos {
                x_cm: self.i32()?,
                y_cm: self.i32()?,
            },
            motion: self.motion()?,
        })
    }

    fn change(&mut self) -> Option<Change> {
        Some(Change {
            id: self.net_id()?,
            dx_cm: self.i32()?,
            dy_cm: self.i32()?,
            motion: match self.byte()? {
                0 => None,
                1 => Some(self.motion()?),
                _ => return None,
            },
        })
    }

    fn motion(&mut self) -> Option<Motion> {
        Some(match self.unsigned(U32_MARKER)? {
            0 => Motion::Idle,
            1 => Motion::Moving,
            2 => Motion::WaitingForPath,
            3 => Motion::Circling,
            4 => Motion::Repulsed,
            _ => return None,
        })
    }
}
