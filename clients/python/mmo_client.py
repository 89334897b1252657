#!/usr/bin/env python3
"""A minimal client of the mmo-sim/1 protocol, written from the `protocol` crate's docs.

Python 3.9+ and aioquic (requirements.txt); nothing else. A sketch of what a client in
another language needs, and a test that the docs are enough (clients/python/test.sh).

QUIC (aioquic) with ALPN mmo-sim/1 and datagrams; the server's self-signed certificate is
pinned by the SHA-256 of its DER (or --insecure accepts any). Logs in, applies snapshot
deltas to the baselines they name, acknowledges ticks in input datagrams, walks its
character to a point, pings, and leaves. Exit status 0 only if the character moved toward
the point and at least --min-snapshots snapshots applied without an error.
"""
import argparse
import asyncio
import hashlib
import math
import ssl
import struct
import sys
import time

from aioquic.asyncio import QuicConnectionProtocol, connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (ConnectionTerminated, DatagramFrameReceived,
                                 HandshakeCompleted, StreamDataReceived)
from cryptography.hazmat.primitives.serialization import Encoding

ALPN = "mmo-sim/1"
PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 4096
MAX_DATAGRAM_BYTES = 1200
KEPT_VIEWS = 32
MOTIONS = ["Idle", "Moving", "WaitingForPath", "Circling", "Repulsed"]
KINDS = ["Npc", "Player"]
REASONS = ["VersionMismatch", "BadMessage", "FrameTooLarge", "TooManyInvalid", "ServerFull",
           "LoginRejected", "Shutdown", "SlowClient", "Timeout", "ClientLeft", "Internal",
           "DatagramsUnsupported", "Kicked"]  # wire index = QUIC close code - 1


class DecodeError(Exception):
    pass


# ---------------------------------------------------------------- bincode 2 "standard"
def uvar(n):
    """Unsigned varint: one byte up to 250, else marker 251/252/253 + 2/4/8 bytes LE."""
    if n <= 250:
        return bytes([n])
    if n <= 0xFFFF:
        return b"\xfb" + struct.pack("<H", n)
    if n <= 0xFFFFFFFF:
        return b"\xfc" + struct.pack("<I", n)
    return b"\xfd" + struct.pack("<Q", n)


def option(value, encode):
    return b"\x00" if value is None else b"\x01" + encode(value)


def string(s):
    raw = s.encode("utf-8")
    return uvar(len(raw)) + raw


class Reader:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise DecodeError("truncated")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def uint(self, bits):
        first = self.take(1)[0]
        if first < 251:
            return first
        width = {251: 2, 252: 4, 253: 8}.get(first)
        if width is None or width * 8 > bits:
            raise DecodeError(f"bad varint marker {first} for u{bits}")
        return int.from_bytes(self.take(width), "little")

    def i32(self):
        z = self.uint(32)
        return (z >> 1) ^ -(z & 1)

    def f32(self):
        return struct.unpack("<f", self.take(4))[0]

    def option(self, read):
        tag = self.take(1)[0]
        if tag > 1:
            raise DecodeError(f"bad option tag {tag}")
        return read() if tag else None

    def variant(self, count):
        v = self.uint(32)
        if v >= count:
            raise DecodeError(f"unknown variant {v}")
        return v

    def string(self):
        try:
            return self.take(self.uint(64)).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DecodeError(str(err)) from None

    def net_id(self):
        return (self.uint(32), self.uint(32))  # (index, generation): sorts in id order

    def list(self, read):
        return [read() for _ in range(self.uint(64))]

    def end(self):
        if self.at != len(self.data):
            raise DecodeError(f"{len(self.data) - self.at} trailing bytes")


# ---------------------------------------------------------------- messages
def frame(body):
    return struct.pack(">I", len(body)) + body


# ClientMessage variants: 0 Hello, 1 Login, 2 Ping, 3 Pong, 4 Leave (5 Input, 6 Spectate).
def hello(): return frame(uvar(0) + uvar(PROTOCOL_VERSION))
def login(name): return frame(uvar(1) + string(name) + option(None, string))  # no token
def ping(nonce): return frame(uvar(2) + uvar(nonce))
def pong(nonce): return frame(uvar(3) + uvar(nonce))
def leave(): return frame(uvar(4))


def input_datagram(seq, ack_tick, command):
    """command: None (Nothing), ("MoveTo", x, y), ("Direction", x, y) or ("Stop",)."""
    if command is None:
        cmd = uvar(0)
    elif command[0] == "MoveTo":
        cmd = uvar(1) + struct.pack("<ff", command[1], command[2])
    elif command[0] == "Direction":
        cmd = uvar(2) + struct.pack("<ff", command[1], command[2])
    else:
        cmd = uvar(3)
    return bytes([PROTOCOL_VERSION & 0xFF]) + uvar(0) + uvar(seq) + option(ack_tick, uvar) + cmd


def decode_server_message(body):
    r = Reader(body)
    kind = r.variant(5)
    if kind == 0:
        msg = {"type": "Welcome", "version": r.uint(16), "entity": r.net_id(),
               "tick_rate_hz": r.uint(16), "map_id": r.string(),
               "bounds": (r.f32(), r.f32(), r.f32(), r.f32()), "view_radius_m": r.f32()}
    elif kind == 1:
        if r.variant(2) == 0:
            msg = {"type": "ShuttingDown", "grace_ms": r.uint(32)}
        else:
            msg = {"type": "InvalidInput", "count": r.uint(32), "reason": r.string()}
    elif kind in (2, 3):
        msg = {"type": "Ping" if kind == 2 else "Pong", "nonce": r.uint(64)}
    else:
        msg = {"type": "Disconnect", "reason": REASONS[r.variant(len(REASONS))], "text": r.string()}
    r.end()
    return msg


def decode_snapshot(data):
    if not data or len(data) > MAX_DATAGRAM_BYTES:
        raise DecodeError(f"datagram of {len(data)} bytes")
    if data[0] != PROTOCOL_VERSION & 0xFF:
        raise DecodeError(f"datagram of version {data[0]}")
    r = Reader(data[1:])
    r.variant(1)  # ServerDatagram::Snapshot
    tick, baseline, last_seq = r.uint(64), r.option(lambda: r.uint(64)), r.uint(32)
    entered = r.list(lambda: (r.net_id(), KINDS[r.variant(2)], r.uint(16), r.i32(), r.i32(),
                              MOTIONS[r.variant(5)]))
    changed = r.list(lambda: (r.net_id(), r.i32(), r.i32(),
                              r.option(lambda: MOTIONS[r.variant(5)])))
    left = r.list(r.net_id)
    r.end()
    return {"tick": tick, "baseline_tick": baseline, "last_input_seq": last_seq,
            "entered": entered, "changed": changed, "left": left}


# ---------------------------------------------------------------- views (delta scheme)
class ApplyError(Exception):
    pass


def apply(baseline, snap):
    """The view after `snap` with `baseline` as its base. A view: {id: [kind, radius, x, y, motion]}."""
    for name, ids in (("left", snap["left"]), ("changed", [c[0] for c in snap["changed"]]),
                      ("entered", [e[0] for e in snap["entered"]])):
        if len(set(ids)) != len(ids):
            raise ApplyError(f"an id appears twice in {name}")
    view = {k: list(v) for k, v in baseline.items()}
    left = set(snap["left"])
    for eid in snap["left"]:
        if eid not in baseline:
            raise ApplyError(f"{eid} left but is not in the baseline")
        del view[eid]
    for eid, dx, dy, motion in snap["changed"]:
        if eid not in baseline or eid in left:
            raise ApplyError(f"{eid} changed but is not in the baseline")
        state = view[eid]
        state[2], state[3] = state[2] + dx, state[3] + dy
        if not all(-2**31 <= v < 2**31 for v in state[2:4]):
            raise ApplyError(f"{eid} moved out of the coordinate range")
        if motion is not None:
            state[4] = motion
    for eid, kind, radius, x, y, motion in snap["entered"]:
        if eid in view:
            raise ApplyError(f"{eid} entered but is already in view")
        view[eid] = [kind, radius, x, y, motion]
    return view


class ViewHistory:
    """Views of the last snapshots by tick; each snapshot applies to its baseline's view."""

    def __init__(self):
        self.views = []  # [(tick, view)], oldest first

    def newest(self):
        return self.views[-1] if self.views else (None, {})

    def receive(self, snap):
        if self.views and self.views[-1][0] >= snap["tick"]:
            return "stale"
        if snap["baseline_tick"] is None:
            base = {}
        else:
            base = next((v for t, v in self.views if t == snap["baseline_tick"]), None)
            if base is None:
                return "missing-baseline"
        self.views.append((snap["tick"], apply(base, snap)))
        done_before = snap["baseline_tick"] or 0  # older views are never baselines again
        self.views = [(t, v) for t, v in self.views if t >= done_before][-KEPT_VIEWS:]
        return "applied"


# ---------------------------------------------------------------- the session
class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.buffer = b""
        self.control = None
        self.welcome = asyncio.get_running_loop().create_future()
        self.welcome.add_done_callback(lambda f: f.cancelled() or f.exception())  # no warning
        self.closed = asyncio.Event()
        self.history = ViewHistory()
        self.stats = {"datagrams": 0, "applied": 0, "stale": 0, "missing-baseline": 0,
                      "full": 0, "entered": 0, "changed": 0, "left": 0}
        self.errors = []
        self.seen = set()
        self.last_input_seq = 0
        self.disconnect = None
        self.close_info = None
        self.pongs = {}

    def send_frames(self, data):
        self._quic.send_stream_data(self.control, data)
        self.transmit()

    def quic_event_received(self, event):
        if isinstance(event, StreamDataReceived) and event.stream_id == self.control:
            self.buffer += event.data
            self.read_frames()
        elif isinstance(event, DatagramFrameReceived):
            self.on_datagram(event.data)
        elif isinstance(event, ConnectionTerminated):
            self.close_info = (event.error_code, event.reason_phrase)
            self.closed.set()
            if not self.welcome.done():
                self.welcome.set_exception(ConnectionError(f"closed: {self.close_info}"))

    def read_frames(self):
        while len(self.buffer) >= 4:
            (length,) = struct.unpack(">I", self.buffer[:4])
            if length == 0 or length > MAX_FRAME_BYTES:
                self.errors.append(f"bad frame length {length}")
                self._quic.close(error_code=0)
                return
            if len(self.buffer) < 4 + length:
                return
            body, self.buffer = self.buffer[4:4 + length], self.buffer[4 + length:]
            try:
                msg = decode_server_message(body)
            except (DecodeError, IndexError) as err:
                self.errors.append(f"undecodable frame: {err}")
                continue
            self.on_message(msg)

    def on_message(self, msg):
        kind = msg["type"]
        if kind == "Welcome" and not self.welcome.done():
            self.welcome.set_result(msg)
        elif kind == "Ping":
            self.send_frames(pong(msg["nonce"]))
        elif kind == "Pong":
            self.pongs[msg["nonce"]] = time.monotonic()
        elif kind == "Disconnect":
            self.disconnect = msg
            print(f"disconnect: {msg['reason']} ({msg['text']})")
            if not self.welcome.done():
                self.welcome.set_exception(ConnectionError(f"{msg['reason']}: {msg['text']}"))
        else:
            print(f"event: {msg}")

    def on_datagram(self, data):
        self.stats["datagrams"] += 1
        try:
            snap = decode_snapshot(data)
            outcome = self.history.receive(snap)
        except (DecodeError, ApplyError) as err:
            self.errors.append(f"snapshot: {err}")
            return
        self.stats[outcome] += 1
        if outcome == "applied":
            self.last_input_seq = snap["last_input_seq"]
            self.stats["full"] += snap["baseline_tick"] is None
            for key in ("entered", "changed", "left"):
                self.stats[key] += len(snap[key])
            self.seen.update(self.history.newest()[1])


def fingerprint_of(protocol):
    cert = protocol._quic.tls._peer_certificate  # aioquic keeps the leaf here
    return hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()


def metres(state):
    return state[2] / 100.0, state[3] / 100.0


def pick_target(view, me, bounds):
    """A walkable point a few metres off: where another body stands, else a step east."""
    mx, my = metres(view[me])
    others = sorted((math.dist((mx, my), metres(s)), metres(s)) for i, s in view.items() if i != me)
    for dist, point in others:
        if 4.0 <= dist <= 12.0:
            return point
    # East unless the map's edge is near, then west: a target at least a few metres off.
    x = mx + 4.0 if mx + 4.0 <= bounds[2] else mx - 4.0
    return min(max(x, bounds[0]), bounds[2]), my


async def run(args):
    config = QuicConfiguration(alpn_protocols=[ALPN], is_client=True, server_name="localhost",
                               max_datagram_frame_size=65535, idle_timeout=15.0,
                               verify_mode=ssl.CERT_NONE)  # pinned below instead
    host, port = args.server.rsplit(":", 1)
    async with connect(host, int(port), configuration=config, create_protocol=Client) as c:
        got = fingerprint_of(c)
        if not args.insecure and got != args.fingerprint.lower().replace(":", ""):
            c.close(error_code=0, reason_phrase="certificate fingerprint mismatch")
            raise SystemExit(f"certificate fingerprint {got} is not the pinned one")
        print(f"connected, certificate {got}")
        c.control = c._quic.get_next_available_stream_id()
        c.send_frames(hello() + login(args.name))
        welcome = await asyncio.wait_for(c.welcome, 5)
        me, bounds = welcome["entity"], welcome["bounds"]
        print(f"welcome: entity {me}, map {welcome['map_id']}, bounds {bounds}, "
              f"view radius {welcome['view_radius_m']} m, {welcome['tick_rate_hz']} Hz")
        c.send_frames(ping(42))
        ping_sent = time.monotonic()

        seq, order, order_seq, target, start = 0, None, None, None, None
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline and not c.closed.is_set():
            tick, view = c.history.newest()
            if target is None and me in view and c.stats["applied"] >= 10:
                start, target = metres(view[me]), pick_target(view, me, bounds)
                order = ("MoveTo", target[0], target[1])
                print(f"at {start}, walking to {target}")
            # An order is resent in every input until a snapshot shows the world took an
            # input of ours at least as new as its first sending; then inputs only acknowledge.
            confirmed = order_seq is not None and c.last_input_seq >= order_seq
            command = order if order is not None and not confirmed else None
            seq += 1
            if command is not None and order_seq is None:
                order_seq = seq
            c._quic.send_datagram_frame(input_datagram(seq, tick, command))
            c.transmit()
            await asyncio.sleep(0.05)  # 20 inputs/s: under the 30/s rate, acks every tick

        tick, view = c.history.newest()
        c.send_frames(leave())
        try:
            await asyncio.wait_for(c.closed.wait(), 3)
        except asyncio.TimeoutError:
            print("no close within 3 s of the leave")

    s = c.stats
    print(f"datagrams {s['datagrams']}, applied {s['applied']}, stale {s['stale']}, "
          f"missing baseline {s['missing-baseline']}, errors {len(c.errors)}; against no "
          f"baseline {s['full']}; entered {s['entered']}, changed {s['changed']}, left {s['left']}")
    for err in c.errors[:10]:
        print("  error:", err)
    print(f"entities seen {len(c.seen)}, in the newest view {len(view)} (tick {tick})")
    if 42 in c.pongs:
        print(f"ping round trip {1000 * (c.pongs[42] - ping_sent):.1f} ms")
    print(f"close: code {c.close_info[0] if c.close_info else None}, "
          f"disconnect {c.disconnect['reason'] if c.disconnect else None}")
    moved = toward = 0.0
    if start is not None and me in view:
        end = metres(view[me])
        moved = math.dist(start, end)
        toward = math.dist(start, target) - math.dist(end, target)
        print(f"own character: {start} -> {end}: moved {moved:.2f} m, "
              f"{toward:.2f} m closer to {target} (input {order_seq} confirmed: "
              f"{c.last_input_seq >= (order_seq or 2**32)})")
    ok = (toward >= min(1.0, 0.5 * math.dist(start, target)) > 0.0 if start else False) \
        and s["applied"] >= args.min_snapshots and len(c.seen) >= args.min_entities \
        and not c.errors
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", default="127.0.0.1:4433", help="QUIC address, host:port")
    p.add_argument("--fingerprint", help="SHA-256 of the server certificate's DER, hex")
    p.add_argument("--insecure", action="store_true", help="accept any certificate")
    p.add_argument("--name", default="pyclient")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--min-snapshots", type=int, default=50)
    p.add_argument("--min-entities", type=int, default=1,
                   help="entities (the own character included) seen at least")
    args = p.parse_args()
    if not args.insecure and not args.fingerprint:
        p.error("give --fingerprint or --insecure")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
