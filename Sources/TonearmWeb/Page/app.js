// Tonearm's web remote: a view of the daemon over its JSON-RPC (the control socket's protocol,
// on a WebSocket at /rpc). Everything shown comes from the daemon's answers and events; nothing
// polls. The progress bar moves on its own between events, from the last status and the time it
// was read.

const $ = (id) => document.getElementById(id);
const ROW = 56;

// ---------- JSON-RPC over the WebSocket, reconnecting by itself ----------

const rpc = {
  socket: null,
  open: false,
  nextID: 1,
  pending: new Map(),   // id -> {resolve, reject}
  outbox: [],           // requests made while offline: sent once connected again
  backoff: 500,
};

function call(method, params) {
  return new Promise((resolve, reject) => {
    const id = rpc.nextID++;
    const line = JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
    rpc.pending.set(id, { resolve, reject, method });
    if (rpc.open) rpc.socket.send(line); else rpc.outbox.push(line);
  });
}

// A control the user touched: its failure is shown in words.
function act(method, params) {
  return call(method, params).catch((error) => { toast(error.message); throw error; });
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/rpc`);
  rpc.socket = socket;
  socket.onopen = async () => {
    rpc.open = true;
    rpc.backoff = 500;
    showConnection(true);
    const waiting = rpc.outbox.splice(0);
    try {
      await call("subscribe", { events: ["transition", "queue", "item", "performance", "library"] });
      for (const line of waiting) socket.send(line);
      await Promise.all([refreshStatus(), refreshQueue()]);
      if (!library.loaded) openLibrary([]);
    } catch (error) {
      toast(error.message);
    }
  };
  socket.onmessage = (message) => {
    let object;
    try { object = JSON.parse(message.data); } catch { return; }
    if (object.method === "event") return onEvent(object.params);
    const waiter = rpc.pending.get(object.id);
    if (!waiter) return;
    rpc.pending.delete(object.id);
    if (object.error) {
      const error = new Error(object.error.message);
      error.data = object.error.data;
      waiter.reject(error);
    } else {
      waiter.resolve(object.result);
    }
  };
  socket.onclose = () => {
    const wasOpen = rpc.open;
    rpc.open = false;
    showConnection(false);
    // Requests that were sent and not answered cannot be known to have happened: say so.
    for (const [, waiter] of rpc.pending) waiter.reject(new Error(`no answer to ${waiter.method}: the connection dropped`));
    rpc.pending.clear();
    setTimeout(() => start(), wasOpen ? 200 : rpc.backoff);
    rpc.backoff = Math.min(rpc.backoff * 2, 10000);
  };
}

function showConnection(online) {
  const label = $("connection");
  label.textContent = online ? "connected" : "offline: reconnecting…";
  label.classList.toggle("offline", !online);
}

// The password, when the daemon asks for one: the session says whether this browser holds the token.
async function start() {
  let session;
  try {
    const response = await fetch("/session", { cache: "no-store" });
    session = await response.json();
  } catch {
    showConnection(false);
    setTimeout(start, rpc.backoff);
    rpc.backoff = Math.min(rpc.backoff * 2, 10000);
    return;
  }
  if (session.password && !session.authorized) {
    $("app").hidden = true;
    $("login").hidden = false;
    $("password").focus();
    return;
  }
  $("login").hidden = true;
  $("app").hidden = false;
  connect();
}

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const response = await fetch("/login", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ password: $("password").value }),
  });
  if (response.ok) {
    $("password").value = "";
    $("login-error").textContent = "";
    start();
  } else {
    $("login-error").textContent = (await response.text()).trim();
  }
});

// ---------- Now playing ----------

const now = { status: null, at: 0, queue: null, streamTitle: null, dragging: false, coverKey: null };

async function refreshStatus() {
  const status = await call("status");
  now.status = status;
  now.at = performance.now();
  renderNow();
}

function position() {
  const status = now.status;
  if (!status) return 0;
  let seconds = status.position;
  if (status.state.state === "playing") seconds += ((performance.now() - now.at) / 1000) * (status.output.speed || 1);
  return status.duration ? Math.min(seconds, status.duration) : seconds;
}

function currentItem() {
  const status = now.status, queue = now.queue;
  if (!status || !queue || status.current === null) return null;
  return queue.items.find((item) => item.id === status.current) || null;
}

const STATE_WORDS = {
  idle: "Stopped", loading: "Loading…", ready: "Ready", playing: "", paused: "Paused", seeking: "Seeking…",
  buffering: "Buffering…", ended: "Ended",
};

function renderNow() {
  const status = now.status;
  if (!status) return;
  const state = status.state.state;
  const item = currentItem();
  const tags = (status.media && status.media.tags) || {};
  const title = now.streamTitle || (item && item.title) || tags.title || (item ? basename(item.url) : "Nothing playing");
  $("title").textContent = title;
  $("artist").textContent = (item && item.artist) || tags.artist || "";
  $("album").textContent = (item && item.album) || tags.album || "";
  let words = STATE_WORDS[state] ?? state;
  if (state === "failed") words = `Failed: ${status.state.error.message}`;
  if (status.interruption) words = `Interrupted: ${status.interruption}`;
  $("state-words").textContent = words;
  $("format").textContent = formatText(status);
  const playing = state === "playing" || (state === "buffering" && status.state.resume === "playing");
  $("toggle").dataset.playing = String(playing);
  $("toggle").setAttribute("aria-label", playing ? "Pause" : "Play");
  const duration = status.duration || 0;
  $("seek").max = String(duration);
  $("seek").disabled = !duration;
  $("duration").textContent = duration ? clock(duration) : (status.media && status.media.live ? "live" : "0:00");
  if (document.activeElement !== $("volume")) {
    $("volume").value = String(status.volume);
    $("volume-value").textContent = String(status.volume);
  }
  const coverKey = status.current === null ? null : status.current;
  if (coverKey !== now.coverKey) {
    now.coverKey = coverKey;
    $("cover").src = coverKey === null ? "icon.svg" : `/art/${coverKey}?fallback`;
  }
  tick();
}

function formatText(status) {
  const media = status.media;
  if (!media) return "";
  const parts = [media.codec.toUpperCase()];
  if (media.sample_rate) parts.push(`${(media.sample_rate / 1000).toFixed(1).replace(/\.0$/, "")} kHz`);
  if (media.bits_per_sample) parts.push(`${media.bits_per_sample} bit`);
  if (media.channels) parts.push(media.channels === 1 ? "mono" : media.channels === 2 ? "stereo" : `${media.channels} ch`);
  if (status.volume === 100 && status.replay_gain.mode === "off") parts.push("bit-perfect");
  return parts.join(" · ");
}

// Moves the bar between events; runs only while something plays and the page is seen.
let ticking = false;
function tick() {
  const seconds = position();
  $("elapsed").textContent = clock(seconds);
  if (!now.dragging) $("seek").value = String(seconds);
  const playing = now.status && now.status.state.state === "playing";
  if (playing && !ticking && !document.hidden) {
    ticking = true;
    requestAnimationFrame(() => { ticking = false; tick(); });
  }
}
document.addEventListener("visibilitychange", () => { if (!document.hidden) tick(); });

// A pause is answered once it is heard (a few ms of fade after what the device holds), and the
// status asked after it waits its turn: a click meanwhile undoes the click before, whatever the
// status shown still says.
let toggleAsked = null;
$("toggle").addEventListener("click", () => {
  const state = now.status && now.status.state.state;
  const method = toggleAsked ? (toggleAsked === "pause" ? "play" : "pause") : (state === "playing" ? "pause" : "play");
  toggleAsked = method;
  $("toggle").dataset.playing = String(method === "play");
  act(method).finally(() => { if (toggleAsked === method) toggleAsked = null; }).then(refreshStatus, () => {});
});
$("previous").addEventListener("click", () => act("previous").then(refreshStatus, () => {}));
$("next").addEventListener("click", () => act("next").then(refreshStatus, () => {}));
$("stop").addEventListener("click", () => act("stop").then(refreshStatus, () => {}));
$("seek").addEventListener("input", () => { now.dragging = true; $("elapsed").textContent = clock(Number($("seek").value)); });
$("seek").addEventListener("change", () => {
  now.dragging = false;
  act("seek", { position: Number($("seek").value) }).then(refreshStatus, refreshStatus);
});
$("volume").addEventListener("input", () => { $("volume-value").textContent = $("volume").value; });
$("volume").addEventListener("change", () => act("volume", { level: Number($("volume").value) }).then(refreshStatus, () => {}));
for (const mode of ["repeat", "random", "single", "consume"]) {
  $(mode).addEventListener("click", () => {
    const on = $(mode).getAttribute("aria-pressed") !== "true";
    act("options", { [mode]: on }).then(refreshQueue, () => {});
  });
}

// ---------- Events ----------

const PERFORMANCE_WORDS = {
  buffering_started: "Buffering…", stall: "The sound faltered (underrun)", device_lost: "Output device lost",
  device_restored: "Output device back", reconnecting: "Reconnecting to the stream…",
};

function onEvent(event) {
  switch (event.type) {
    case "transition":
      refreshStatus().catch(() => {});
      break;
    case "queue":
      refreshQueue().catch(() => {});
      break;
    case "item":
      now.streamTitle = null;
      refreshStatus().catch(() => {});
      break;
    case "item_failed":
      toast(`Could not play item ${event.id}: ${event.message}`);
      break;
    case "metadata":
      if (now.status && event.id === now.status.current) {
        now.streamTitle = event.artist ? `${event.artist} – ${event.title}` : event.title;
        renderNow();
      }
      break;
    case "performance":
      if (PERFORMANCE_WORDS[event.event]) $("state-words").textContent = PERFORMANCE_WORDS[event.event];
      if (["buffering_ended", "resumed", "device_restored", "first_audio"].includes(event.event)) refreshStatus().catch(() => {});
      break;
    case "library":
      if (event.event === "scan_finished" && library.loaded && library.path) openLibrary(library.path);
      break;
  }
}

// ---------- Queue (only the rows in view are drawn) ----------

async function refreshQueue() {
  now.queue = await call("queue");
  for (const mode of ["repeat", "random", "single", "consume"]) $(mode).setAttribute("aria-pressed", String(now.queue[mode]));
  const count = now.queue.items.length;
  $("queue-count").textContent = count === 0 ? "Empty" : count === 1 ? "1 item" : `${count} items`;
  $("queue-spacer").style.height = `${count * ROW}px`;
  renderQueue(true);
  renderNow();
}

const drawn = new Map(); // index -> row element
function renderQueue(all) {
  const list = $("queue");
  const items = now.queue ? now.queue.items : [];
  const first = Math.max(0, Math.floor(list.scrollTop / ROW) - 5);
  const last = Math.min(items.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW) + 5);
  for (const [index, row] of drawn) {
    if (all || index < first || index >= last) { row.remove(); drawn.delete(index); }
  }
  for (let index = first; index < last; index++) {
    if (drawn.has(index)) continue;
    const row = queueRow(items[index], index);
    list.appendChild(row);
    drawn.set(index, row);
  }
}
$("queue").addEventListener("scroll", () => renderQueue(false), { passive: true });
window.addEventListener("resize", () => renderQueue(false));

function queueRow(item, index) {
  const row = document.createElement("div");
  row.className = "row" + (now.status && item.id === now.status.current ? " current" : "");
  row.setAttribute("role", "listitem");
  row.style.top = `${index * ROW}px`;
  row.dataset.id = String(item.id);
  const handle = button("≡", `Move ${item.title || basename(item.url)}`, null);
  handle.classList.add("handle");
  handle.addEventListener("pointerdown", (event) => startDrag(event, row, item, index));
  const text = document.createElement("div");
  text.className = "text";
  text.append(span(item.title || basename(item.url)), span([item.artist, item.album].filter(Boolean).join(" · ") || item.url, "sub"));
  text.addEventListener("click", () => act("play", { id: item.id }).then(refreshStatus, () => {}));
  const remove = button("✕", `Remove ${item.title || basename(item.url)}`, () => act("remove", { ids: [item.id] }).catch(() => {}));
  row.append(handle, text, remove);
  return row;
}

// Drag by the handle: a line shows where the item lands; it moves when let go.
function startDrag(event, row, item, from) {
  event.preventDefault();
  const list = $("queue");
  const line = document.createElement("div");
  line.className = "drop-line";
  list.appendChild(line);
  row.classList.add("dragging");
  const handle = event.currentTarget;
  handle.setPointerCapture(event.pointerId);
  let target = from;
  const move = (moved) => {
    const box = list.getBoundingClientRect();
    const y = moved.clientY - box.top + list.scrollTop;
    target = Math.max(0, Math.min(now.queue.items.length - 1, Math.floor(y / ROW)));
    line.style.top = `${(target > from ? target + 1 : target) * ROW - 2}px`;
    if (moved.clientY < box.top + ROW) list.scrollTop -= 8;
    if (moved.clientY > box.bottom - ROW) list.scrollTop += 8;
  };
  const end = () => {
    handle.removeEventListener("pointermove", move);
    line.remove();
    row.classList.remove("dragging");
    if (target !== from) act("move", { id: item.id, position: target }).catch(() => {});
  };
  handle.addEventListener("pointermove", move);
  handle.addEventListener("pointerup", end, { once: true });
  handle.addEventListener("pointercancel", end, { once: true });
}

$("clear").addEventListener("click", () => act("clear").then(refreshStatus, () => {}));

// ---------- Library: artists, their albums, an album's songs; search as you type ----------

const library = { loaded: false, path: [] };

function quote(value) {
  return "'" + String(value).replace(/\\/g, "\\\\").replace(/'/g, "\\'") + "'";
}

async function openLibrary(path) {
  library.loaded = true;
  library.path = path;
  renderCrumbs();
  const list = $("library");
  try {
    if (path.length === 0) {
      const { values } = await call("library.list", { tag: "AlbumArtist" });
      fill(values.map((value) => entryRow(value.AlbumArtist || "(no artist)", "", () => openLibrary([value.AlbumArtist]))),
        "The library is empty, or there is none (library.music_directory).");
    } else if (path.length === 1) {
      const { values } = await call("library.list", { tag: "Album", filter: `(AlbumArtist == ${quote(path[0])})` });
      fill(values.map((value) => entryRow(value.Album || "(no album)", path[0], () => openLibrary([path[0], value.Album]))), "No albums.");
    } else {
      const filter = `((AlbumArtist == ${quote(path[0])}) AND (Album == ${quote(path[1])}))`;
      const { songs } = await call("library.search", { filter, sort: "Track", limit: 1000 });
      const rows = songs.map(songRow);
      if (songs.length) {
        rows.unshift(entryRow("Add the whole album", `${songs.length} songs`, null, [
          button("+", "Add the album", () => addSongs(songs.map((song) => song.uri), {})),
          button("▶", "Play the album now", () => addSongs(songs.map((song) => song.uri), { play: true })),
        ]));
      }
      fill(rows, "No songs.");
    }
  } catch (error) {
    list.replaceChildren(emptyNote(error.message));
  }
}

// Where every view of the library starts: the artists, or the stored playlists.
function baseCrumbs() {
  return [button("Artists", "All artists", () => { $("search").value = ""; openLibrary([]); }),
    button("Playlists", "Stored playlists", () => { $("search").value = ""; openPlaylists(); })];
}

function renderCrumbs() {
  const crumbs = baseCrumbs();
  if (library.path.length >= 1) crumbs.push(button(library.path[0] || "(no artist)", `Albums of ${library.path[0]}`, () => openLibrary(library.path.slice(0, 1))));
  if (library.path.length >= 2) crumbs.push(button(library.path[1] || "(no album)", `Songs of ${library.path[1]}`, () => openLibrary(library.path)));
  $("crumbs").replaceChildren(...crumbs);
}

function fill(rows, emptyText) {
  $("library").replaceChildren(...(rows.length ? rows : [emptyNote(emptyText)]));
}

function entryRow(title, subtitle, open, actions = []) {
  const row = document.createElement("div");
  row.className = "row";
  row.setAttribute("role", "listitem");
  const text = document.createElement("div");
  text.className = "text";
  text.append(span(title), span(subtitle, "sub"));
  if (open) {
    text.setAttribute("role", "button");
    text.tabIndex = 0;
    text.setAttribute("aria-label", `Open ${title}`);
    text.addEventListener("click", open);
    text.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
  }
  row.append(text, ...actions);
  return row;
}

function songRow(song) {
  const tags = song.tags || {};
  const title = (tags.Title || [basename(song.uri)])[0];
  const sub = [(tags.Artist || [])[0], (tags.Album || [])[0]].filter(Boolean).join(" · ");
  return entryRow(title, sub, null, [
    button("+", `Add ${title}`, () => addSongs([song.uri], {})),
    button("⤵", `Play ${title} next`, () => addSongs([song.uri], { next: true })),
    button("▶", `Play ${title} now`, () => addSongs([song.uri], { play: true })),
  ]);
}

async function addSongs(uris, { play = false, next = false }) {
  const params = { urls: uris };
  if (play) params.play = true;
  if (next && now.queue) {
    const current = now.queue.items.findIndex((item) => item.id === now.queue.current);
    params.position = current < 0 ? now.queue.items.length : current + 1;
  }
  try {
    await act("add", params);
    toast(play ? "Playing" : next ? "Plays next" : uris.length === 1 ? "Added" : `Added ${uris.length} songs`);
  } catch { /* shown by act */ }
}

// Stored playlists (the ones MPD clients keep too): load, play, delete; save the queue as one.
async function openPlaylists() {
  library.loaded = true;
  library.path = null;
  $("crumbs").replaceChildren(...baseCrumbs());
  const save = document.createElement("form");
  save.className = "toolbar";
  const name = document.createElement("input");
  name.placeholder = "Name";
  name.required = true;
  name.setAttribute("aria-label", "Name of the new playlist");
  const submit = button("Save queue", "Save the queue as a playlist", null);
  submit.type = "submit";
  save.append(name, submit);
  save.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await call("playlist.save", { name: name.value });
    } catch (error) {
      if (!(error.data && error.data.kind === "exists" && confirm(`Replace the playlist “${name.value}”?`))) return toast(error.message);
      try { await call("playlist.save", { name: name.value, replace: true }); } catch (again) { return toast(again.message); }
    }
    toast(`Saved “${name.value}”`);
    openPlaylists();
  });
  try {
    const { playlists } = await call("playlist.list");
    const rows = playlists.map((playlist) => entryRow(playlist.name, new Date(playlist.modified * 1000).toLocaleString(), null, [
      button("+", `Add the playlist ${playlist.name}`, () => loadPlaylist(playlist.name, false)),
      button("▶", `Play the playlist ${playlist.name}`, () => loadPlaylist(playlist.name, true)),
      button("✕", `Delete the playlist ${playlist.name}`, () => {
        if (confirm(`Delete the playlist “${playlist.name}”?`)) act("playlist.delete", { name: playlist.name }).then(openPlaylists, () => {});
      }),
    ]));
    $("library").replaceChildren(save, ...(rows.length ? rows : [emptyNote("No stored playlists yet.")]));
  } catch (error) {
    $("library").replaceChildren(save, emptyNote(error.message));
  }
}

async function loadPlaylist(name, play) {
  try {
    const answer = await act("playlist.load", play ? { name, play: true } : { name });
    const skipped = answer.skipped ? ` (${answer.skipped} left out: not playable here)` : "";
    toast(`${play ? "Playing" : "Added"} “${name}”${skipped}`);
  } catch { /* shown by act */ }
}

let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(search, 200);
});
$("search-form").addEventListener("submit", (event) => { event.preventDefault(); search(); });

async function search() {
  const query = $("search").value.trim();
  if (!query) return library.path ? openLibrary(library.path) : openPlaylists();
  try {
    const { songs } = await call("library.search", { query, limit: 200 });
    $("crumbs").replaceChildren(...baseCrumbs());
    fill(songs.map(songRow), `Nothing found for “${query}”.`);
  } catch (error) {
    fill([], error.message);
  }
}

$("stream-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const url = $("stream-url").value.trim();
  if (url) addSongs([url], { play: true });
});

// ---------- Tabs and small helpers ----------

for (const [tab, pane] of [["tab-queue", "queue-pane"], ["tab-library", "library-pane"]]) {
  $(tab).addEventListener("click", () => {
    for (const [other, otherPane] of [["tab-queue", "queue-pane"], ["tab-library", "library-pane"]]) {
      $(other).setAttribute("aria-selected", String(other === tab));
      $(otherPane).hidden = other !== tab;
    }
    if (pane === "queue-pane") renderQueue(false);
  });
}

function button(label, name, onClick) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = label;
  element.setAttribute("aria-label", name);
  if (onClick) element.addEventListener("click", onClick);
  return element;
}

function span(text, className) {
  const element = document.createElement("span");
  element.textContent = text;
  if (className) element.className = className;
  return element;
}

function emptyNote(text) {
  const note = document.createElement("p");
  note.className = "empty";
  note.textContent = text;
  return note;
}

function basename(url) {
  const parts = String(url).split("/");
  const last = parts[parts.length - 1] || String(url);
  try { return decodeURIComponent(last); } catch { return last; }
}

function clock(seconds) {
  const total = Math.max(0, Math.floor(seconds));
  const h = Math.floor(total / 3600), m = Math.floor((total % 3600) / 60), s = total % 60;
  return h ? `${h}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}` : `${m}:${String(s).padStart(2, "0")}`;
}

let toastTimer = null;
function toast(text) {
  const element = $("toast");
  element.textContent = text;
  element.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { element.hidden = true; }, 4000);
}

start();
