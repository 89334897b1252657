//! The navmesh file format, version 1. Bytes in, bytes out: the caller does the I/O.
//!
//! Layout (all integers little-endian, floats IEEE-754 binary64):
//!
//! | bytes | content |
//! | --- | --- |
//! | 8 | magic `89 4E 41 56 0D 0A 1A 0A` (`\x89NAV\r\n\x1a\n`: catches text-mode mangling) |
//! | 4 | format version (`u32`, currently 1) |
//! | 8 | payload length `n` (`u64`) |
//! | n | payload |
//! | 4 | CRC-32 (IEEE) of the version, length and payload bytes |
//!
//! The payload, in order: source name (`u32` byte length, UTF-8, at most 4096 bytes); build
//! parameters (`u8` flags: bit 0 min angle present, bit 1 max area present; then two `f64`,
//! zero when absent); vertex count `u32` then `x, y` per vertex; triangle count `u32` then
//! three `u32` vertex ids per triangle (counter-clockwise); three `u32` neighbour ids per
//! triangle (`u32::MAX` for a wall); island count `u32` then one `u32` island id per
//! triangle.
//!
//! [`decode`] checks the envelope (magic, version, length, checksum) before it reads the
//! payload, then rebuilds the mesh with [`NavMesh::from_parts`], which checks every mesh
//! invariant. No input makes it panic or allocate more than the input's own size implies.

use crate::geom::Point;
use crate::mesh::{BuildInfo, IslandId, MeshError, NavMesh, TriId, VertId};

/// The file's first eight bytes.
pub const MAGIC: [u8; 8] = [0x89, b'N', b'A', b'V', b'\r', b'\n', 0x1a, b'\n'];
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Longest source name stored, in bytes.
pub const MAX_NAME_BYTES: usize = 4096;

const HEADER_LEN: usize = 8 + 4 + 8;
const TRAILER_LEN: usize = 4;
const NO_NEIGHBOUR: u32 = u32::MAX;

/// Why bytes are not a navmesh file. Every variant says what is wrong and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The file is shorter than the fixed header and trailer.
    #[error("file is {len} bytes, too short for a navmesh header ({min} bytes)")]
    TooShort {
        /// Length of the input.
        len: usize,
        /// The minimum.
        min: usize,
    },
    /// The magic bytes are wrong: not a navmesh file.
    #[error("not a navmesh file (bad magic bytes at offset 0)")]
    BadMagic,
    /// A format version this build cannot read.
    #[error("unsupported navmesh format version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// The declared payload length does not match the file's length.
    #[error(
        "header declares a {declared}-byte payload but the file holds {actual} (truncated or padded)"
    )]
    LengthMismatch {
        /// Declared payload length.
        declared: u64,
        /// Payload bytes actually present.
        actual: u64,
    },
    /// The checksum does not match: the file is corrupted.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x} (file corrupted)")]
    ChecksumMismatch {
        /// CRC stored in the file.
        stored: u32,
        /// CRC of the bytes read.
        computed: u32,
    },
    /// The payload ended inside a section.
    #[error("payload truncated in {section} at payload offset {offset}")]
    Truncated {
        /// The section being read.
        section: &'static str,
        /// Offset into the payload.
        offset: usize,
    },
    /// A field holds a value outside its range.
    #[error("invalid {field} at payload offset {offset}: {reason}")]
    InvalidField {
        /// The field.
        field: &'static str,
        /// Offset into the payload.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// Bytes left over after the last section.
    #[error("{count} unexpected bytes after the last payload section")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// The payload decoded but does not form a valid mesh (the [`MeshError`] is the
    /// source, so a report that prints the chain shows it once).
    #[error("invalid mesh")]
    Mesh(#[from] MeshError),
}

/// Encodes a mesh as a version-1 navmesh file.
pub fn encode(mesh: &NavMesh) -> Vec<u8> {
    let mut payload = Vec::new();
    let info = mesh.info();
    // Names longer than the limit are cut at a character boundary so the file stays readable.
    let mut name_len = info.source_name.len().min(MAX_NAME_BYTES);
    while !info.source_name.is_char_boundary(name_len) {
        name_len -= 1;
    }
    put_u32(&mut payload, name_len as u32);
    payload.extend_from_slice(&info.source_name.as_bytes()[..name_len]);
    let flags = u8::from(info.min_angle_deg.is_some()) | (u8::from(info.max_area.is_some()) << 1);
    payload.push(flags);
    put_f64(&mut payload, info.min_angle_deg.unwrap_or(0.0));
    put_f64(&mut payload, info.max_area.unwrap_or(0.0));

    put_u32(&mut payload, mesh.vertices().len() as u32);
    for p in mesh.vertices() {
        put_f64(&mut payload, p.x);
        put_f64(&mut payload, p.y);
    }
    put_u32(&mut payload, mesh.triangle_count() as u32);
    for tri in mesh.triangles() {
        for v in tri {
            put_u32(&mut payload, v.0);
        }
    }
    for n in mesh.neighbours() {
        for t in n {
            put_u32(&mut payload, t.map_or(NO_NEIGHBOUR, |t| t.0));
        }
    }
    put_u32(&mut payload, mesh.island_count());
    for island in mesh.islands() {
        put_u32(&mut payload, island.0);
    }

    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    put_u32(&mut out, FORMAT_VERSION);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&payload);
    let crc = crc32fast::hash(&out[MAGIC.len()..]);
    put_u32(&mut out, crc);
    out
}

/// Decodes and validates a navmesh file.
pub fn decode(bytes: &[u8]) -> Result<NavMesh, DecodeError> {
    let min = HEADER_LEN + TRAILER_LEN;
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    if bytes.len() < min {
        return Err(DecodeError::TooShort {
            len: bytes.len(),
            min,
        });
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != FORMAT_VERSION {
        return Err(DecodeError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&bytes[12..20]);
    let declared = u64::from_le_bytes(len_bytes);
    let actual = (bytes.len() - min) as u64;
    if declared != actual {
        return Err(DecodeError::LengthMismatch { declared, actual });
    }
    let crc_at = bytes.len() - TRAILER_LEN;
    let stored = u32::from_le_bytes([
        bytes[crc_at],
        bytes[crc_at + 1],
        bytes[crc_at + 2],
        bytes[crc_at + 3],
    ]);
    let computed = crc32fast::hash(&bytes[MAGIC.len()..crc_at]);
    if stored != computed {
        return Err(DecodeError::ChecksumMismatch { stored, computed });
    }
    decode_payload(&bytes[HEADER_LEN..crc_at])
}

fn decode_payload(payload: &[u8]) -> Result<NavMesh, DecodeError> {
    let mut r = Reader {
        bytes: payload,
        pos: 0,
    };

    let name_len = r.u32("source name")? as usize;
    if name_len > MAX_NAME_BYTES {
        return Err(r.invalid(
            "source name length",
            format!("{name_len} bytes, at most {MAX_NAME_BYTES}"),
        ));
    }
    let name_at = r.pos;
    let source_name =
        String::from_utf8(r.take(name_len, "source name")?.to_vec()).map_err(|e| {
            DecodeError::InvalidField {
                field: "source name",
                offset: name_at,
                reason: e.to_string(),
            }
        })?;
    let flags_at = r.pos;
    let flags = r.take(1, "build parameters")?[0];
    if flags & !0b11 != 0 {
        return Err(DecodeError::InvalidField {
            field: "build parameter flags",
            offset: flags_at,
            reason: format!("unknown bits {flags:#04x}"),
        });
    }
    let min_angle = r.f64("build parameters")?;
    let max_area = r.f64("build parameters")?;
    let info = BuildInfo {
        source_name,
        min_angle_deg: (flags & 1 != 0).then_some(min_angle),
        max_area: (flags & 2 != 0).then_some(max_area),
    };

    let vertex_count = r.count(16, "vertices")?;
    let mut vertices = Vec::with_capacity(vertex_count);
    for _ in 0..vertex_count {
        let x = r.f64("vertices")?;
        let y = r.f64("vertices")?;
        vertices.push(Point::new(x, y));
    }
    // Each triangle needs 12 bytes of corners, 12 of neighbours and 4 of island id.
    let tri_count = r.count(28, "triangles")?;
    let mut triangles = Vec::with_capacity(tri_count);
    for _ in 0..tri_count {
        triangles.push([
            VertId(r.u32("triangles")?),
            VertId(r.u32("triangles")?),
            VertId(r.u32("triangles")?),
        ]);
    }
    let mut neighbours = Vec::with_capacity(tri_count);
    for _ in 0..tri_count {
        let mut n = [None; 3];
        for slot in &mut n {
            let id = r.u32("neighbours")?;
            *slot = (id != NO_NEIGHBOUR).then_some(TriId(id));
        }
        neighbours.push(n);
    }
    let island_count = r.u32("islands")?;
    let mut islands = Vec::with_capacity(tri_count);
    for _ in 0..tri_count {
        islands.push(IslandId(r.u32("islands")?));
    }
    if r.pos != payload.len() {
        return Err(DecodeError::TrailingBytes {
            count: payload.len() - r.pos,
        });
    }
    Ok(NavMesh::from_parts(
        info,
        vertices,
        triangles,
        neighbours,
        islands,
        island_count,
    )?)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, section: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        let Some(end) = end else {
            return Err(DecodeError::Truncated {
                section,
                offset: self.pos,
            });
        };
        let out = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn u32(&mut self, section: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, section)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f64(&mut self, section: &'static str) -> Result<f64, DecodeError> {
        let b = self.take(8, section)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    /// Reads an element count and checks that the remaining bytes can hold that many
    /// elements of `min_size` bytes, so a corrupt count cannot trigger a huge allocation.
    fn count(&mut self, min_size: usize, section: &'static str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let count = self.u32(section)? as usize;
        let remaining = self.bytes.len() - self.pos;
        if count.saturating_mul(min_size) > remaining {
            return Err(DecodeError::InvalidField {
                field: section,
                offset: at,
                reason: format!("count {count} needs more than the {remaining} bytes left"),
            });
        }
        Ok(count)
    }

    fn invalid(&self, field: &'static str, reason: String) -> DecodeError {
        DecodeError::InvalidField {
            field,
            offset: self.pos,
            reason,
        }
    }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_f64(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A 3x2 strip of squares, two triangles each, plus a separate triangle: two islands.
    fn sample_mesh() -> NavMesh {
        let mut vertices = Vec::new();
        for y in 0..3 {
            for x in 0..4 {
                vertices.push(Point::new(f64::from(x), f64::from(y)));
            }
        }
        let mut triangles = Vec::new();
        for y in 0..2u32 {
            for x in 0..3u32 {
                let v = |dx: u32, dy: u32| VertId((y + dy) * 4 + x + dx);
                triangles.push([v(0, 0), v(1, 0), v(1, 1)]);
                triangles.push([v(0, 0), v(1, 1), v(0, 1)]);
            }
        }
        let base = vertices.len() as u32;
        vertices.extend([
            Point::new(10.0, 0.0),
            Point::new(11.0, 0.0),
            Point::new(10.5, 0.5),
        ]);
        triangles.push([VertId(base), VertId(base + 1), VertId(base + 2)]);
        let info = BuildInfo {
            source_name: "sample".into(),
            min_angle_deg: Some(20.0),
            max_area: None,
        };
        NavMesh::new(info, vertices, triangles).unwrap()
    }

    #[test]
    fn round_trips_bit_for_bit() {
        let mesh = sample_mesh();
        let bytes = encode(&mesh);
        let decoded = decode(&bytes).unwrap();
        assert_eq!(decoded, mesh);
        assert_eq!(encode(&decoded), bytes);
    }

    #[test]
    fn envelope_errors_name_the_problem() {
        let bytes = encode(&sample_mesh());
        assert_eq!(
            decode(b"hello world, not a mesh at all"),
            Err(DecodeError::BadMagic)
        );
        assert!(matches!(
            decode(&bytes[..10]),
            Err(DecodeError::TooShort { .. })
        ));
        let mut v2 = bytes.clone();
        v2[8] = 2;
        assert_eq!(
            decode(&v2),
            Err(DecodeError::UnsupportedVersion {
                found: 2,
                supported: 1
            })
        );
        let truncated = &bytes[..bytes.len() - 1];
        assert!(matches!(
            decode(truncated),
            Err(DecodeError::LengthMismatch { .. })
        ));
        let mut flipped = bytes.clone();
        flipped[40] ^= 0x10;
        assert!(matches!(
            decode(&flipped),
            Err(DecodeError::ChecksumMismatch { .. })
        ));
    }

    /// Re-seals a tampered payload with a correct length and checksum, to reach the payload
    /// and mesh checks behind the envelope.
    fn reseal(payload: &[u8]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        put_u32(&mut out, FORMAT_VERSION);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(payload);
        let crc = crc32fast::hash(&out[MAGIC.len()..]);
        put_u32(&mut out, crc);
        out
    }

    #[test]
    fn valid_envelope_with_bad_mesh_is_rejected() {
        let bytes = encode(&sample_mesh());
        let payload = &bytes[HEADER_LEN..bytes.len() - TRAILER_LEN];
        // The first triangle's first corner sits after name, params and vertices.
        let name = "sample".len();
        let tri_at = 4 + name + 1 + 16 + 4 + 15 * 16 + 4;
        let mut bad = payload.to_vec();
        bad[tri_at..tri_at + 4].copy_from_slice(&999u32.to_le_bytes());
        let err = decode(&reseal(&bad)).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Mesh(MeshError::VertexOutOfRange {
                    tri: 0,
                    vertex: 999,
                    ..
                })
            ),
            "{err}"
        );
        // A neighbour pointing at the wrong triangle.
        let neighbour_at = tri_at + 13 * 12;
        let mut bad = payload.to_vec();
        bad[neighbour_at..neighbour_at + 4].copy_from_slice(&5u32.to_le_bytes());
        let err = decode(&reseal(&bad)).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Mesh(MeshError::NeighbourMismatch {
                    tri: 0,
                    edge: 0,
                    ..
                })
            ),
            "{err}"
        );
        // A huge vertex count cannot allocate: it is checked against the bytes left.
        let count_at = 4 + name + 1 + 16;
        let mut bad = payload.to_vec();
        bad[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = decode(&reseal(&bad)).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::InvalidField {
                    field: "vertices",
                    ..
                }
            ),
            "{err}"
        );
        // Extra bytes at the end.
        let mut bad = payload.to_vec();
        bad.push(0);
        assert_eq!(
            decode(&reseal(&bad)),
            Err(DecodeError::TrailingBytes { count: 1 })
        );
    }

    proptest! {
        #[test]
        fn every_byte_flip_is_an_error(index in any::<prop::sample::Index>(), mask in 1u8..=255) {
            let mut bytes = encode(&sample_mesh());
            let at = index.index(bytes.len());
            bytes[at] ^= mask;
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn every_truncation_is_an_error(index in any::<prop::sample::Index>()) {
            let bytes = encode(&sample_mesh());
            let len = index.index(bytes.len());
            prop_assert!(decode(&bytes[..len]).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn arbitrary_payload_behind_a_valid_envelope_never_panics(
            payload in prop::collection::vec(any::<u8>(), 0..512)
        ) {
            let _ = decode(&reseal(&payload));
        }
    }
}
