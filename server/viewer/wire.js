// The game protocol for the browser, written from the protocol crate's documentation:
// bincode's standard configuration (little endian; unsigned integers as varints: a value
// below 251 is one byte, else a marker 251/252/253 then 2/4/8 little-endian bytes; signed
// integers zig-zag encoded first; f32 as 4 little-endian bytes; an enum as its variant index
// (a varint) then its fields; Option as a 0/1 byte then the value; strings and lists as a
// varint length then the items). Control frames have a 4-byte big-endian length prefix;
// datagrams start with the protocol version's low byte.

export const PROTOCOL_VERSION = 1;

export const MOTIONS = ['idle', 'moving', 'waiting', 'circling', 'repulsed'];
export const KINDS = ['npc', 'player'];
export const REASONS = [
  'version_mismatch', 'bad_message', 'frame_too_large', 'too_many_invalid', 'server_full',
  'login_rejected', 'shutdown', 'slow_client', 'timeout', 'client_left', 'internal',
  'datagrams_unsupported',
];

class Writer {
  constructor() { this.bytes = []; }
  u8(v) { this.bytes.push(v & 0xff); return this; }
  varint(v) {
    // Numbers up to 2^53 are enough for every field the browser writes.
    if (v < 251) return this.u8(v);
    if (v < 0x10000) { this.u8(251); return this.le(v, 2); }
    if (v < 0x100000000) { this.u8(252); return this.le(v, 4); }
    this.u8(253);
    return this.le(v, 8);
  }
  le(v, n) {
    for (let i = 0; i < n; i++) { this.u8(Number(BigInt(v) >> BigInt(8 * i) & 0xffn)); }
    return this;
  }
  f32(v) {
    const b = new Uint8Array(new Float32Array([v]).buffer);
    b.forEach((x) => this.u8(x));
    return this;
  }
  string(s) {
    const b = new TextEncoder().encode(s);
    this.varint(b.length);
    b.forEach((x) => this.u8(x));
    return this;
  }
  option(v, put) {
    if (v === null || v === undefined) return this.u8(0);
    this.u8(1);
    put(v);
    return this;
  }
  done() { return new Uint8Array(this.bytes); }
}

export class DecodeError extends Error {}

class Reader {
  constructor(bytes) { this.b = bytes; this.at = 0; }
  u8() {
    if (this.at >= this.b.length) throw new DecodeError('message ends early');
    return this.b[this.at++];
  }
  le(n) {
    let v = 0n;
    for (let i = 0; i < n; i++) v |= BigInt(this.u8()) << BigInt(8 * i);
    return v;
  }
  varint() {
    const first = this.u8();
    if (first < 251) return first;
    if (first === 251) return Number(this.le(2));
    if (first === 252) return Number(this.le(4));
    if (first === 253) return Number(this.le(8));
    throw new DecodeError(`varint marker ${first}`);
  }
  signed() {
    const z = this.varint();
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  f32() {
    const bytes = new Uint8Array(4);
    for (let i = 0; i < 4; i++) bytes[i] = this.u8();
    return new Float32Array(bytes.buffer)[0];
  }
  string() {
    const n = this.varint();
    if (this.at + n > this.b.length) throw new DecodeError('string ends early');
    const s = new TextDecoder().decode(this.b.subarray(this.at, this.at + n));
    this.at += n;
    return s;
  }
  option(get) { return this.u8() === 1 ? get() : null; }
  list(get) {
    const n = this.varint();
    if (n > this.b.length) throw new DecodeError(`list of ${n} in ${this.b.length} bytes`);
    const out = [];
    for (let i = 0; i < n; i++) out.push(get());
    return out;
  }
  netId() { return { index: this.varint(), generation: this.varint() }; }
}

/** A control frame: 4-byte big-endian length, then the message. */
function frame(payload) {
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length);
  out.set(payload, 4);
  return out;
}

export function hello() {
  return frame(new Writer().varint(0).varint(PROTOCOL_VERSION).done());
}

export function login(name, token) {
  const w = new Writer().varint(1).string(name);
  w.option(token, (t) => w.string(t));
  return frame(w.done());
}

/** Logs in as a spectator whose view starts at (x, y), metres. */
export function spectate(name, token, x, y) {
  const w = new Writer().varint(6).string(name);
  w.option(token, (t) => w.string(t));
  w.f32(x).f32(y);
  return frame(w.done());
}

export function leave() {
  return frame(new Writer().varint(4).done());
}

/** An input datagram. `command`: {kind: 'nothing'} | {kind: 'moveTo', x, y} | {kind: 'stop'}. */
export function inputDatagram(seq, ackTick, command) {
  const w = new Writer().u8(PROTOCOL_VERSION & 0xff).varint(0).varint(seq);
  w.option(ackTick, (t) => w.varint(t));
  switch (command.kind) {
    case 'moveTo': w.varint(1).f32(command.x).f32(command.y); break;
    case 'stop': w.varint(3); break;
    default: w.varint(0);
  }
  return w.done();
}

/** Splits whole frames off `buffer` (a Uint8Array); returns [messages, rest]. */
export function takeFrames(buffer) {
  const messages = [];
  let at = 0;
  while (buffer.length - at >= 4) {
    const len = new DataView(buffer.buffer, buffer.byteOffset + at, 4).getUint32(0);
    if (len > 4096) throw new DecodeError(`frame of ${len} bytes`);
    if (buffer.length - at - 4 < len) break;
    messages.push(serverMessage(buffer.subarray(at + 4, at + 4 + len)));
    at += 4 + len;
  }
  return [messages, buffer.slice(at)];
}

export function serverMessage(bytes) {
  const r = new Reader(bytes);
  switch (r.varint()) {
    case 0: return {
      type: 'welcome',
      version: r.varint(),
      entity: r.netId(),
      tickRateHz: r.varint(),
      mapId: r.string(),
      bounds: { minX: r.f32(), minY: r.f32(), maxX: r.f32(), maxY: r.f32() },
      viewRadiusM: r.f32(),
    };
    case 1: {
      const event = r.varint();
      if (event === 0) return { type: 'shuttingDown', graceMs: r.varint() };
      return { type: 'invalidInput', count: r.varint(), reason: r.string() };
    }
    case 2: return { type: 'ping', nonce: r.varint() };
    case 3: return { type: 'pong', nonce: r.varint() };
    case 4: {
      const reason = r.varint();
      return { type: 'disconnect', reason: REASONS[reason] ?? `code ${reason + 1}`, text: r.string() };
    }
    default: throw new DecodeError('unknown server message');
  }
}

/** A snapshot datagram. */
export function snapshot(bytes) {
  const r = new Reader(bytes);
  const version = r.u8();
  if (version !== (PROTOCOL_VERSION & 0xff)) throw new DecodeError(`datagram version ${version}`);
  if (r.varint() !== 0) throw new DecodeError('unknown datagram');
  return {
    tick: r.varint(),
    baselineTick: r.option(() => r.varint()),
    lastInputSeq: r.varint(),
    entered: r.list(() => ({
      id: r.netId(),
      kind: KINDS[r.varint()],
      radiusCm: r.varint(),
      x: r.signed(),
      y: r.signed(),
      motion: MOTIONS[r.varint()],
    })),
    changed: r.list(() => ({
      id: r.netId(),
      dx: r.signed(),
      dy: r.signed(),
      motion: r.option(() => MOTIONS[r.varint()]),
    })),
    left: r.list(() => r.netId()),
  };
}

export const key = (id) => `${id.index}.${id.generation}`;

/**
 * The view after `snap` applied to `baseline` (a Map from key to entity, positions in
 * centimetres): left ones removed, changed ones moved by their delta, entered ones added.
 */
export function apply(baseline, snap) {
  const view = new Map(baseline);
  for (const id of snap.left) view.delete(key(id));
  // Each entity notes the tick of the snapshot that carried its state (`told`); those a
  // snapshot leaves out keep their baseline's note.
  for (const c of snap.changed) {
    const e = view.get(key(c.id));
    if (!e) throw new DecodeError(`change for ${key(c.id)}, not in view`);
    view.set(key(c.id), {
      ...e, x: e.x + c.dx, y: e.y + c.dy, motion: c.motion ?? e.motion, told: snap.tick,
    });
  }
  for (const e of snap.entered) view.set(key(e.id), { ...e, told: snap.tick });
  return view;
}

// What to draw after `snap` led to `view` (protocol's `Shown`): of each entity, the state
// carried last (the newest `told`), whichever chain of baselines the view is on; an entity
// the view does not hold stays while its note is newer than the view's baseline; one a
// snapshot said left goes once that is the newest news of it. `shown` and `gone` (key ->
// tick it left) are the previous drawing's; returns the new ones.
export function shown(previous, gone, view, snap) {
  const base = snap.baselineTick;
  const newer = (tick) => base !== null && tick > base;
  const carried = new Set([...snap.entered, ...snap.changed].map((e) => key(e.id)));
  const nextGone = new Map([...gone].filter(([, tick]) => newer(tick)));
  for (const id of snap.left) {
    if (!carried.has(key(id))) nextGone.set(key(id), snap.tick);
  }
  const leftAfter = (k, told) => (nextGone.get(k) ?? -1) > told;
  const next = new Map();
  for (const [k, e] of view) {
    const old = previous.get(k);
    const best = old && old.told > e.told ? old : e;
    if (!leftAfter(k, best.told)) next.set(k, best);
  }
  for (const [k, e] of previous) {
    if (!view.has(k) && newer(e.told) && !leftAfter(k, e.told)) next.set(k, e);
  }
  return [next, nextGone];
}
