// The live viewer: joins the world over WebTransport as a guest player and draws what the
// server sends. Plain modules and a canvas; no build step.
import * as wire from './wire.js';

const COLOURS = {
  idle: '#9aa0a6', moving: '#34a853', waiting: '#fbbc04', circling: '#ff8a00',
  repulsed: '#ea4335', player: '#4285f4',
};
const VIEW_ACROSS_M = 60;
const ZOOM_LIMITS_M = [15, 400];
const PAN_SEND_MS = 100;
const spectating = new URLSearchParams(location.search).has('spectate');
const HISTORY = 64;
const RESEND_MS = 300;
const ACK_EVERY_MS = 100;

const stats = { connected: false, tick: 0, entities: 0, me: null, error: null, spectating };
window.mmoStats = stats;
// Every body in view, in metres, for automation.
window.mmoBodies = () => [...state.shown.values()].map((e) => ({
  id: wire.key(e.id), kind: e.kind, motion: e.motion, x: e.x / 100, y: e.y / 100,
}));

const canvas = document.getElementById('world');
const hud = document.getElementById('hud');
const ctx = canvas.getContext('2d');

const state = {
  welcome: null,
  views: new Map(), // tick -> Map(key -> entity)
  newest: null, // [tick, view]
  shown: new Map(), // key -> entity: what is drawn (wire.shown)
  gone: new Map(), // key -> tick it left, for wire.shown
  seq: 0,
  order: null, // {seq, x, y, sentAt}
  lastSent: 0,
  writer: null,
  datagrams: null,
  map: null, // {canvas, scale, bounds}
  selected: null,
  across: VIEW_ACROSS_M, // metres across the canvas's shorter side
  centre: null, // a spectator's view centre, metres
  drag: null, // {x, y, moved}
  lastPan: 0,
  world: null, // /api/world: tick times and counts
  inspected: null, // /api/npcs/{id} of the selected NPC
};

// The corner's figures and the selected NPC's path, asked of the server's HTTP endpoint.
async function poll() {
  try {
    const world = await fetch('/api/world');
    if (world.ok) state.world = await world.json();
    if (state.selected) {
      const npc = await fetch(`/api/npcs/${state.selected}`);
      state.inspected = npc.ok ? await npc.json() : null;
    } else {
      state.inspected = null;
    }
  } catch (err) {
    console.warn('poll failed:', err);
  }
  setTimeout(poll, 500);
}

function fail(text) {
  stats.connected = false;
  stats.error = text;
  hud.textContent = text;
}

function hexBytes(hex) {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}

async function loadMap() {
  const response = await fetch('/map.svg');
  if (!response.ok) return;
  const bounds = {
    minX: Number(response.headers.get('x-bounds-min-x')),
    minY: Number(response.headers.get('x-bounds-min-y')),
    maxX: Number(response.headers.get('x-bounds-max-x')),
    maxY: Number(response.headers.get('x-bounds-max-y')),
  };
  const url = URL.createObjectURL(await response.blob());
  const image = new Image();
  image.src = url;
  await image.decode();
  // Rasterised once, a few pixels per metre, and drawn scaled every frame.
  const scale = Math.min(8, 4096 / Math.max(bounds.maxX - bounds.minX, bounds.maxY - bounds.minY));
  const raster = document.createElement('canvas');
  raster.width = Math.ceil((bounds.maxX - bounds.minX) * scale);
  raster.height = Math.ceil((bounds.maxY - bounds.minY) * scale);
  raster.getContext('2d').drawImage(image, 0, 0, raster.width, raster.height);
  state.map = { canvas: raster, scale, bounds };
}

async function connect() {
  const info = await (await fetch('/webtransport')).json();
  const url = `https://${location.hostname}:${info.port}${info.path}`;
  const options = info.certificate_sha256
    ? { serverCertificateHashes: [{ algorithm: 'sha-256', value: hexBytes(info.certificate_sha256) }] }
    : {};
  const transport = new WebTransport(url, options);
  await transport.ready;
  transport.closed.then(
    (closed) => fail(`connection closed: ${closed.reason || closed.closeCode || 'no reason'}`),
    (err) => fail(`connection lost: ${err}`),
  );
  const stream = await transport.createBidirectionalStream();
  state.writer = stream.writable.getWriter();
  state.datagrams = transport.datagrams.writable.getWriter();
  const name = new URLSearchParams(location.search).get('name')
    || `guest-${Math.floor(Math.random() * 1e6)}`;
  await state.writer.write(wire.hello());
  if (spectating) {
    await mapLoaded;
    const b = state.map ? state.map.bounds : { minX: 0, minY: 0, maxX: 0, maxY: 0 };
    state.centre = { x: (b.minX + b.maxX) / 2, y: (b.minY + b.maxY) / 2 };
    await state.writer.write(wire.spectate(name, null, state.centre.x, state.centre.y));
  } else {
    await state.writer.write(wire.login(name, null));
  }
  readControl(stream.readable.getReader());
  readDatagrams(transport.datagrams.readable.getReader());
}

async function readControl(reader) {
  let buffer = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer);
    joined.set(value, buffer.length);
    let messages;
    [messages, buffer] = wire.takeFrames(joined);
    for (const message of messages) {
      if (message.type === 'welcome') {
        state.welcome = message;
        stats.connected = true;
        updateMe();
      } else if (message.type === 'disconnect') {
        fail(`disconnected (${message.reason}): ${message.text}`);
      }
    }
  }
}

async function readDatagrams(reader) {
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    try {
      onSnapshot(wire.snapshot(value));
    } catch (err) {
      console.warn('snapshot dropped:', err);
    }
  }
}

function onSnapshot(snap) {
  if (state.newest && snap.tick <= state.newest[0]) return;
  const baseline = snap.baselineTick === null ? new Map() : state.views.get(snap.baselineTick);
  if (!baseline) return; // Its baseline is gone: wait for the next one.
  const view = wire.apply(baseline, snap);
  state.views.set(snap.tick, view);
  for (const tick of state.views.keys()) {
    if (tick < snap.tick - HISTORY) state.views.delete(tick);
  }
  state.newest = [snap.tick, view];
  [state.shown, state.gone] = wire.shown(state.shown, state.gone, view, snap);
  if (state.order && snap.lastInputSeq >= state.order.seq) state.order = null;
  stats.tick = snap.tick;
  stats.entities = view.size;
  updateMe();
  sendInput(false);
}

// The own character's position from the newest view (snapshots may come before the welcome).
function updateMe() {
  const view = state.newest && state.newest[1];
  const me = !spectating && state.welcome && view && view.get(wire.key(state.welcome.entity));
  stats.me = me ? { x: me.x / 100, y: me.y / 100 } : null;
}

function sendInput(force) {
  if (!state.datagrams || !state.welcome) return;
  const now = performance.now();
  const resend = state.order && now - state.order.sentAt >= RESEND_MS;
  if (!force && !resend && now - state.lastSent < ACK_EVERY_MS) return;
  state.seq += 1;
  let command = { kind: 'nothing' };
  if (spectating && state.centre && (force || now - state.lastPan >= PAN_SEND_MS)) {
    state.lastPan = now;
    command = { kind: 'moveTo', x: state.centre.x, y: state.centre.y };
  } else if (state.order && (force || resend)) {
    state.order.seq = state.seq;
    state.order.sentAt = now;
    command = { kind: 'moveTo', x: state.order.x, y: state.order.y };
  }
  state.lastSent = now;
  const ack = state.newest ? state.newest[0] : null;
  state.datagrams.write(wire.inputDatagram(state.seq, ack, command)).catch(() => {});
}

// World metres to screen pixels: centred on the own character (a spectator: on its view
// centre), `state.across` metres across the canvas's shorter side.
function camera() {
  const bounds = state.welcome ? state.welcome.bounds : null;
  const centre = (spectating ? state.centre : stats.me) ?? (bounds
    ? { x: (bounds.minX + bounds.maxX) / 2, y: (bounds.minY + bounds.maxY) / 2 }
    : { x: 0, y: 0 });
  const ppm = Math.min(canvas.width, canvas.height) / state.across;
  return {
    ppm,
    toScreen: (x, y) => [(x - centre.x) * ppm + canvas.width / 2, (y - centre.y) * ppm + canvas.height / 2],
    toWorld: (px, py) => ({ x: (px - canvas.width / 2) / ppm + centre.x, y: (py - canvas.height / 2) / ppm + centre.y }),
  };
}

function canvasPoint(event) {
  const rect = canvas.getBoundingClientRect();
  return [
    (event.clientX - rect.left) * (canvas.width / rect.width),
    (event.clientY - rect.top) * (canvas.height / rect.height),
  ];
}

// Where a point of the world is on the canvas now, for automation.
window.mmoToScreen = (x, y) => camera().toScreen(x, y);

canvas.addEventListener('wheel', (event) => {
  event.preventDefault();
  const factor = event.deltaY > 0 ? 1.2 : 1 / 1.2;
  state.across = Math.min(ZOOM_LIMITS_M[1], Math.max(ZOOM_LIMITS_M[0], state.across * factor));
}, { passive: false });

// A spectator pans by dragging; the server moves its view with it.
canvas.addEventListener('mousedown', (event) => {
  state.drag = { x: event.clientX, y: event.clientY, moved: false };
});
canvas.addEventListener('mousemove', (event) => {
  if (!state.drag || !spectating || !state.centre) return;
  const dx = event.clientX - state.drag.x;
  const dy = event.clientY - state.drag.y;
  if (!state.drag.moved && Math.hypot(dx, dy) < 4) return;
  state.drag.moved = true;
  const ppm = camera().ppm;
  state.centre = { x: state.centre.x - dx / ppm, y: state.centre.y - dy / ppm };
  state.drag.x = event.clientX;
  state.drag.y = event.clientY;
  sendInput(false);
});
window.addEventListener('mouseup', () => {
  if (state.drag && state.drag.moved) sendInput(true);
});

canvas.addEventListener('click', (event) => {
  const dragged = state.drag && state.drag.moved;
  state.drag = null;
  if (dragged) return;
  const at = camera().toWorld(...canvasPoint(event));
  // A click on a body selects it; elsewhere the character walks there (a spectator's view
  // moves there).
  const hit = state.newest && [...state.newest[1].values()].find(
    (e) => Math.hypot(e.x / 100 - at.x, e.y / 100 - at.y) <= e.radiusCm / 100,
  );
  if (hit && (!state.welcome || wire.key(hit.id) !== wire.key(state.welcome.entity))) {
    state.selected = wire.key(hit.id);
    return;
  }
  state.selected = null;
  if (spectating) {
    state.centre = at;
  } else {
    state.order = { seq: 0, x: at.x, y: at.y, sentAt: 0 };
  }
  sendInput(true);
});

function draw() {
  canvas.width = canvas.clientWidth;
  canvas.height = canvas.clientHeight;
  ctx.fillStyle = '#1b1b1b';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  const cam = camera();
  if (state.map) {
    const { bounds, scale } = state.map;
    const [x0, y0] = cam.toScreen(bounds.minX, bounds.minY);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(state.map.canvas, x0, y0, state.map.canvas.width / scale * cam.ppm,
      state.map.canvas.height / scale * cam.ppm);
  }
  if (spectating && state.centre && state.welcome) {
    // The region the server shows a spectator: the view radius around its centre.
    const [cx, cy] = cam.toScreen(state.centre.x, state.centre.y);
    ctx.beginPath();
    ctx.arc(cx, cy, state.welcome.viewRadiusM * cam.ppm, 0, 2 * Math.PI);
    ctx.setLineDash([6, 6]);
    ctx.strokeStyle = '#ffffff80';
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.setLineDash([]);
  }
  const meKey = state.welcome && wire.key(state.welcome.entity);
  // What the snapshots carried last of each entity, not the newest view (wire.shown).
  for (const [k, e] of state.shown) {
    const [sx, sy] = cam.toScreen(e.x / 100, e.y / 100);
    const r = Math.max(2, (e.radiusCm / 100) * cam.ppm);
    ctx.beginPath();
    ctx.arc(sx, sy, r, 0, 2 * Math.PI);
    ctx.fillStyle = e.kind === 'player' ? COLOURS.player : COLOURS[e.motion];
    ctx.fill();
    if (k === meKey || k === state.selected) {
      ctx.lineWidth = 2;
      ctx.strokeStyle = k === meKey ? '#ffffff' : '#00e5ff';
      ctx.stroke();
    }
  }
  if (state.order) {
    const [ox, oy] = cam.toScreen(state.order.x, state.order.y);
    ctx.strokeStyle = '#ffffff';
    ctx.strokeRect(ox - 4, oy - 4, 8, 8);
  }
  const path = state.inspected && state.inspected.id === state.selected && state.inspected.path;
  if (path && path.length > 1) {
    ctx.beginPath();
    path.forEach(([x, y], i) => {
      const [px, py] = cam.toScreen(x, y);
      if (i === 0) ctx.moveTo(px, py); else ctx.lineTo(px, py);
    });
    ctx.strokeStyle = '#00e5ff';
    ctx.lineWidth = 2;
    ctx.stroke();
  }
  const selected = state.selected && state.newest && state.newest[1].get(state.selected);
  const world = state.world;
  const inspected = state.inspected && state.inspected.id === state.selected ? state.inspected : null;
  hud.textContent = [
    stats.error ?? (stats.connected ? (spectating ? 'spectating' : 'connected') : 'connecting…'),
    `tick ${stats.tick}`,
    `${stats.entities} in view`,
    stats.me ? `me ${stats.me.x.toFixed(1)}, ${stats.me.y.toFixed(1)}` : '',
    world ? `tick ${world.tick_ms.mean.toFixed(1)} ms (max ${world.tick_ms.max.toFixed(1)})` : '',
    world ? `${world.npcs} NPCs, ${world.players} player(s), ${world.spectators} spectator(s)` : '',
    selected ? `selected ${state.selected}: ${selected.kind}, ${selected.motion}` : '',
    inspected ? `${inspected.brain}, ${inspected.path_pending ? 'waiting for a path' : `${inspected.path.length} corners`}` : '',
  ].filter(Boolean).join(' · ');
  stats.selected = state.selected;
  stats.selectedPath = path ? path.length : 0;
  requestAnimationFrame(draw);
}

const mapLoaded = loadMap().catch((err) => console.warn('no map:', err));
poll();
requestAnimationFrame(draw);
connect().catch((err) => fail(`cannot connect: ${err}`));
