//! The annotated byte listings of `docs/wire-examples.md` (the crate's `wire_examples`
//! docs) against the codec: each listing's hex must be exactly what the codec writes for
//! the message built here, and must decode back to it. With `UPDATE_WIRE_EXAMPLES=1` the
//! test rewrites the hex of listings that differ instead of failing on them.
//!
//! A listing is a ```` ```text ```` block right after a `<!-- wire-example: NAME -->`
//! marker. Each of its lines is hex bytes (two digits each, spaced) and a `#` comment that
//! annotates them; lines may also be comment only. Bytes without a comment are an error,
//! so every byte stays explained.

use std::ops::Range;
use std::path::PathBuf;

use protocol::codec::{FrameReader, decode_datagram, encode_datagram, encode_frame};
use protocol::{
    Bounds, Change, ClientDatagram, ClientMessage, Command, DisconnectReason, EntityKind,
    EntityState, Input, Motion, NetId, QPos, ServerDatagram, ServerMessage, Snapshot, Welcome,
};

/// Where a listing starts.
const MARKER: &str = "<!-- wire-example: ";
/// The environment variable that turns the check into a rewrite.
const UPDATE_VAR: &str = "UPDATE_WIRE_EXAMPLES";
/// The comment of rewritten lines whose annotation could not be kept.
const REANNOTATE: &str = "re-annotate";

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/wire-examples.md")
}

/// A message of any of the four kinds, as one example shows it.
#[derive(Debug, PartialEq)]
enum Message {
    ClientFrame(ClientMessage),
    ServerFrame(ServerMessage),
    ClientDatagram(ClientDatagram),
    ServerDatagram(ServerDatagram),
}

impl Message {
    /// The bytes the codec writes: a whole frame (length included) or a whole datagram.
    fn encode(&self) -> Vec<u8> {
        match self {
            Message::ClientFrame(m) => encode_frame(m).expect("example encodes"),
            Message::ServerFrame(m) => encode_frame(m).expect("example encodes"),
            Message::ClientDatagram(m) => encode_datagram(m).expect("example encodes"),
            Message::ServerDatagram(m) => encode_datagram(m).expect("example encodes"),
        }
    }

    /// The message the codec reads from `bytes`, of the same kind as `self`.
    fn decode_like(&self, bytes: &[u8]) -> Result<Message, String> {
        fn frame<M: protocol::codec::FrameMessage>(bytes: &[u8]) -> Result<M, String> {
            let mut reader = FrameReader::new();
            reader.push(bytes);
            let message = reader.next_message::<M>().map_err(|err| err.to_string())?;
            // The whole listing must be one frame: nothing may be left over.
            match (message, reader.next_message::<M>()) {
                (Some(message), Ok(None)) => Ok(message),
                (None, _) => Err("an incomplete frame".to_owned()),
                (Some(_), _) => Err("bytes after the frame".to_owned()),
            }
        }
        match self {
            Message::ClientFrame(_) => frame(bytes).map(Message::ClientFrame),
            Message::ServerFrame(_) => frame(bytes).map(Message::ServerFrame),
            Message::ClientDatagram(_) => decode_datagram(bytes)
                .map(Message::ClientDatagram)
                .map_err(|err| err.to_string()),
            Message::ServerDatagram(_) => decode_datagram(bytes)
                .map(Message::ServerDatagram)
                .map_err(|err| err.to_string()),
        }
    }
}

/// Every listing of the document, by name, with the message it shows.
fn examples() -> Vec<(&'static str, Message)> {
    let me = NetId {
        index: 2000,
        generation: 0,
    };
    vec![
        (
            "hello",
            Message::ClientFrame(ClientMessage::Hello { version: 1 }),
        ),
        (
            "login",
            Message::ClientFrame(ClientMessage::Login {
                name: "Zoë".to_owned(),
                token: None,
            }),
        ),
        (
            "welcome",
            Message::ServerFrame(ServerMessage::Welcome(Welcome {
                version: 1,
                entity: me,
                tick_rate_hz: 20,
                map_id: "den520d.map".to_owned(),
                bounds: Bounds {
                    min_x: 0.0,
                    min_y: 0.0,
                    max_x: 256.0,
                    max_y: 257.0,
                },
                view_radius_m: 30.0,
            })),
        ),
        (
            "disconnect",
            Message::ServerFrame(ServerMessage::Disconnect {
                reason: DisconnectReason::ServerFull,
                text: "the server is full".to_owned(),
            }),
        ),
        (
            "input",
            Message::ClientDatagram(ClientDatagram::Input(Input {
                seq: 7,
                ack_tick: Some(1234),
                command: Command::MoveTo { x: 12.5, y: -3.25 },
            })),
        ),
        (
            "input-frame",
            Message::ClientFrame(ClientMessage::Input(Input {
                seq: 7,
                ack_tick: Some(1234),
                command: Command::MoveTo { x: 12.5, y: -3.25 },
            })),
        ),
        (
            "spectate",
            Message::ClientFrame(ClientMessage::Spectate {
                name: "eve".to_owned(),
                token: None,
                x: 128.0,
                y: 64.5,
            }),
        ),
        (
            "snapshot",
            Message::ServerDatagram(ServerDatagram::Snapshot(Snapshot {
                tick: 1235,
                baseline_tick: Some(1234),
                last_input_seq: 7,
                entered: vec![EntityState {
                    id: NetId {
                        index: 3,
                        generation: 1,
                    },
                    kind: EntityKind::Npc,
                    radius_cm: 40,
                    pos: QPos {
                        x_cm: 1250,
                        y_cm: -325,
                    },
                    motion: Motion::Moving,
                }],
                changed: vec![Change {
                    id: me,
                    dx_cm: -6,
                    dy_cm: 4,
                    motion: Some(Motion::Circling),
                }],
                left: vec![NetId {
                    index: 5,
                    generation: 0,
                }],
            })),
        ),
    ]
}

/// One line of a listing.
struct Line {
    /// Where the line is in the document, newline excluded.
    span: Range<usize>,
    bytes: Vec<u8>,
    /// Everything after the `#`, when there is one.
    comment: Option<String>,
}

/// One listing.
struct Listing {
    name: String,
    /// The lines between the fences.
    lines: Vec<Line>,
    /// Where those lines are in the document (from the first line's start to the closing
    /// fence's start).
    body: Range<usize>,
}

impl Listing {
    fn bytes(&self) -> Vec<u8> {
        self.lines
            .iter()
            .flat_map(|line| line.bytes.clone())
            .collect()
    }
}

/// The lines of `text` with their spans, newlines excluded.
fn lines_with_spans(text: &str) -> Vec<(Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.strip_suffix('\n').unwrap_or(line);
        out.push((start..start + content.len(), content));
        start += line.len();
    }
    out
}

fn parse_line(span: Range<usize>, text: &str) -> Result<Line, String> {
    let (code, comment) = match text.split_once('#') {
        Some((code, comment)) => (code, Some(comment.to_owned())),
        None => (text, None),
    };
    let mut bytes = Vec::new();
    for token in code.split_whitespace() {
        let valid = token.len() == 2 && token.chars().all(|c| c.is_ascii_hexdigit());
        let byte = u8::from_str_radix(token, 16).ok().filter(|_| valid);
        bytes.push(byte.ok_or_else(|| format!("{token:?} is not a byte in hex in {text:?}"))?);
    }
    if !bytes.is_empty() && comment.as_deref().is_none_or(|c| c.trim().is_empty()) {
        return Err(format!("bytes without an annotation: {text:?}"));
    }
    Ok(Line {
        span,
        bytes,
        comment,
    })
}

/// Every listing of the document, in order.
fn parse(doc: &str) -> Result<Vec<Listing>, String> {
    let lines = lines_with_spans(doc);
    let mut listings = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let (_, text) = &lines[at];
        at += 1;
        let Some(rest) = text.trim().strip_prefix(MARKER) else {
            continue;
        };
        let name = rest
            .strip_suffix("-->")
            .ok_or_else(|| format!("unterminated marker {text:?}"))?
            .trim()
            .to_owned();
        while lines.get(at).is_some_and(|(_, t)| t.trim().is_empty()) {
            at += 1;
        }
        if lines.get(at).map(|(_, t)| t.trim()) != Some("```text") {
            return Err(format!(
                "listing {name:?}: a ```text block must follow its marker"
            ));
        }
        at += 1;
        let first = at;
        let mut body = Vec::new();
        loop {
            let Some((span, text)) = lines.get(at) else {
                return Err(format!("listing {name:?}: no closing fence"));
            };
            at += 1;
            if text.trim() == "```" {
                let start = lines.get(first).map_or(span.start, |(s, _)| s.start);
                listings.push(Listing {
                    name,
                    lines: body,
                    body: start..span.start,
                });
                break;
            }
            body.push(
                parse_line(span.clone(), text).map_err(|e| format!("listing {name:?}: {e}"))?,
            );
        }
    }
    Ok(listings)
}

/// Bytes as the listings write them.
fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One listing line: the hex padded so the comments line up.
fn listing_line(bytes: &[u8], comment: &str) -> String {
    format!("{:<12} #{comment}", hex(bytes))
}

/// A listing's body with `bytes` in place of its hex: line by line with the same comments
/// when the size is unchanged, else four bytes a line marked for re-annotation.
fn rewrite(doc: &str, listing: &Listing, bytes: &[u8]) -> String {
    let mut out = String::new();
    if bytes.len() == listing.bytes().len() {
        let mut rest = bytes;
        for line in &listing.lines {
            let (mine, others) = rest.split_at(line.bytes.len());
            rest = others;
            match (&line.comment, mine.is_empty()) {
                (Some(comment), false) => out.push_str(&listing_line(mine, comment)),
                _ => out.push_str(&doc[line.span.clone()]),
            }
            out.push('\n');
        }
    } else {
        for chunk in bytes.chunks(4) {
            out.push_str(&listing_line(chunk, &format!(" {REANNOTATE}")));
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_wire_examples_are_what_the_codec_writes() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).expect("docs/wire-examples.md is readable");
    let listings = parse(&doc).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let examples = examples();
    let update = std::env::var_os(UPDATE_VAR).is_some();

    let mut problems = Vec::new();
    let mut rewrites = Vec::new();
    for listing in &listings {
        if !examples.iter().any(|(name, _)| *name == listing.name) {
            problems.push(format!(
                "listing {:?} has no example in the test",
                listing.name
            ));
        }
        if listing.lines.iter().any(|line| {
            line.comment
                .as_deref()
                .is_some_and(|c| c.contains(REANNOTATE))
        }) {
            problems.push(format!("listing {:?} awaits annotation", listing.name));
        }
    }
    for (name, message) in &examples {
        let Some(listing) = listings.iter().find(|listing| listing.name == *name) else {
            problems.push(format!("no listing {name:?} in the document"));
            continue;
        };
        let wanted = message.encode();
        let shown = listing.bytes();
        if shown != wanted {
            if update {
                rewrites.push((listing.body.clone(), rewrite(&doc, listing, &wanted)));
            } else {
                problems.push(format!(
                    "listing {name:?} shows\n  {}\nbut the codec writes\n  {}",
                    hex(&shown),
                    hex(&wanted)
                ));
            }
            continue;
        }
        match message.decode_like(&shown) {
            Ok(decoded) if decoded == *message => {}
            Ok(decoded) => problems.push(format!("listing {name:?} decodes to {decoded:?}")),
            Err(err) => problems.push(format!("listing {name:?} does not decode: {err}")),
        }
    }

    if !rewrites.is_empty() {
        let mut updated = doc.clone();
        // From the end, so the earlier spans stay valid.
        rewrites.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
        for (span, body) in rewrites {
            updated.replace_range(span, &body);
        }
        std::fs::write(&path, updated).expect("docs/wire-examples.md is writable");
        problems.push(format!(
            "rewrote the hex in {}; run the test again and check the annotations",
            path.display()
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn listings_are_parsed_strictly() {
    let good =
        "x\n<!-- wire-example: a -->\n\n```text\n00 0a  # two bytes\n# a note\nff  # one\n```\n";
    let listings = parse(good).expect("parses");
    assert_eq!(listings.len(), 1);
    assert_eq!(listings[0].name, "a");
    assert_eq!(listings[0].bytes(), vec![0x00, 0x0a, 0xff]);
    let body = &good[listings[0].body.clone()];
    assert_eq!(body, "00 0a  # two bytes\n# a note\nff  # one\n");

    // Bytes must be explained, be two hex digits each, and sit in a closed text block.
    for bad in [
        "<!-- wire-example: a -->\n```text\n00 0a\n```\n",
        "<!-- wire-example: a -->\n```text\n00 0a  #  \n```\n",
        "<!-- wire-example: a -->\n```text\n0a0b  # two\n```\n",
        "<!-- wire-example: a -->\n```text\nzz  # ?\n```\n",
        "<!-- wire-example: a -->\n```text\n00  # open\n",
        "<!-- wire-example: a -->\n```rust\n00  # zero\n```\n",
        "<!-- wire-example: a\n```text\n00  # zero\n```\n",
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn a_rewrite_keeps_the_annotations_when_the_layout_holds() {
    let doc = "<!-- wire-example: a -->\n```text\n00 01  # a pair\n# note\n02  #   one\n```\n";
    let listings = parse(doc).expect("parses");
    let same_size = rewrite(doc, &listings[0], &[0xaa, 0xbb, 0xcc]);
    assert_eq!(
        same_size,
        "aa bb        # a pair\n# note\ncc           #   one\n"
    );
    let larger = rewrite(doc, &listings[0], &[1, 2, 3, 4, 5]);
    assert_eq!(
        larger,
        "01 02 03 04  # re-annotate\n05           # re-annotate\n"
    );
}
