import {
  addMember,
  createSpace,
  deletedId,
  EventWriter,
  IndexedDBStorage,
  type LiveChannel,
  type LiveState,
  LiveSync,
  leaveSpace,
  listSpaces,
  PullError,
  pullEvents,
  type QueueEntry,
  type Space,
  SpaceError,
  SpaceStopped,
  SyncQueue,
  tokenSubject,
} from "@sync-events/client";

/** What serve.mjs hands the page: the API, the bearer token to call it with, and the live channel's endpoints. */
interface Config {
  apiUrl: string;
  token: string;
  live?: LiveChannel;
}

interface Note {
  id: string;
  text: string;
  at: string;
  waiting: boolean;
}

// ?user=<name> picks the user (make run only: serve.mjs makes an unsigned token for it).
const config: Config = await (await fetch(`/config.json${location.search}`)).json();
// Everything this device keeps is the logged-in user's: the queue, and the
// notes pulled. The page has no login (serve.mjs hands it one token); an
// app with one makes these at login, for the user, and at logout stops
// syncing and calls storage.clear() and removes the user's pulled notes,
// so that nothing of theirs stays on a shared device.
const user = tokenSubject(config.token);
if (user === undefined) {
  throw new Error("SYNC_EVENTS_TOKEN is no JWT with a sub: the queue could not tell whose it is");
}
const storage = new IndexedDBStorage({ user, name: "notes-queue" });
const writer = new EventWriter(storage);
const queue = new SyncQueue({ storage, baseUrl: config.apiUrl, getToken: () => config.token });

// The notes this device has pulled, and where its next pull starts. An app
// would keep them in IndexedDB with the cursor, in one transaction; a
// localStorage value written at once is enough here.
const PULLED = `notes-pulled:${user}`;
function pulled(): { notes: Note[]; cursor?: string } {
  return JSON.parse(localStorage.getItem(PULLED) ?? '{"notes":[]}');
}

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

async function render(): Promise<void> {
  const entries: QueueEntry[] = (await storage.list()).filter((e) => e.status === "pending");
  const waiting: Note[] = entries.map((e) => ({
    id: e.event.id,
    text: String(e.event.payload.text),
    at: e.event.occurredAt,
    waiting: true,
  }));
  const have = pulled().notes;
  const seen = new Set(have.map((n) => n.id));
  const notes = [...have, ...waiting.filter((n) => !seen.has(n.id))].sort((a, b) => b.at.localeCompare(a.at));
  $<HTMLUListElement>("notes").replaceChildren(
    ...notes.map((n) => {
      const li = document.createElement("li");
      li.className = n.waiting ? "pending" : "";
      li.dataset.id = n.id;
      const text = document.createElement("span");
      text.textContent = n.text;
      const when = document.createElement("span");
      when.className = "when";
      when.textContent = new Date(n.at).toLocaleTimeString();
      li.append(text, when);
      return li;
    }),
  );
  $("waiting").textContent = `${entries.length} waiting`;
  const network = $("network");
  network.textContent = navigator.onLine ? "online" : "offline";
  network.className = `pill ${navigator.onLine ? "online" : "offline"}`;
}

function showSync(text: string, problem = false): void {
  const sync = $("sync");
  sync.textContent = text;
  sync.className = `pill${problem ? " problem" : ""}`;
}

/** Sends what is queued; what was sent comes back by the next pull, which its poke starts. One drain at a time. */
let sending: Promise<void> = Promise.resolve();
function send(): Promise<void> {
  sending = sending.then(async () => {
    const report = await queue.drain();
    if (report.stopped === "offline") {
      showSync("offline: notes wait here");
    } else if (report.stopped) {
      showSync(`not sent: ${report.stopped}${report.error ? ` (${report.error})` : ""}`, true);
    }
    await render();
  });
  return sending;
}

/** Pulls what this user's devices wrote since the last pull; resolves to the cursor reached. */
async function pull(signal: AbortSignal): Promise<string | undefined> {
  const state = pulled();
  const p = pullEvents({
    baseUrl: config.apiUrl,
    getToken: () => config.token,
    cursor: state.cursor,
    retry: { maxAttempts: 3 },
    signal,
    // Retention removed events after the cursor (410 CURSOR_EXPIRED):
    // drop the notes and the cursor together; the pull starts over.
    startOver: () => {
      state.notes = [];
      state.cursor = undefined;
      localStorage.setItem(PULLED, JSON.stringify(state));
    },
  });
  for await (const page of p.pages()) {
    for (const e of page.events) {
      const gone = deletedId(e); // a tombstone, or a deletion's notice: drop the note
      if (gone !== undefined) {
        state.notes = state.notes.filter((n) => n.id !== gone);
      } else if (e.type === "note.created") {
        state.notes.push({ id: e.id, text: String(e.payload.text), at: e.occurredAt, waiting: false });
      }
    }
    state.cursor = page.cursor;
    localStorage.setItem(PULLED, JSON.stringify(state)); // the page's notes and its cursor together
  }
  showSync(`synced ${new Date().toLocaleTimeString()}`);
  await render();
  return state.cursor;
}

/** A live channel's state, as the page shows it in the pill of that id. */
function showLive(state: LiveState, pill = "live"): void {
  const live = $(pill);
  const text: Record<LiveState["kind"], string> = {
    connecting: "connecting…",
    live: "live",
    polling: "polling",
    offline: "offline",
    stopped: "stopped",
  };
  const reason = "reason" in state ? ` (${state.reason})` : "";
  live.textContent = `${text[state.kind]}${reason}`;
  live.dataset.state = state.kind;
  live.className = `pill${state.kind === "live" ? " online" : state.kind === "stopped" ? " problem" : ""}`;
}

// Pulls on every poke of the user's channel, polls every 10 s while the
// channel is unavailable, and pauses while the browser is offline.
const live = new LiveSync({ getToken: () => config.token, channel: config.live, pull, onState: (st) => showLive(st) });

$<HTMLFormElement>("add").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>("text");
  await writer.write("note.created", { text: input.value });
  input.value = "";
  await render();
  void send();
});
$("now").addEventListener("click", () => {
  void send().then(() => live.pullNow());
  void syncShared();
});
window.addEventListener("online", () => {
  void send();
  void syncShared();
});
window.addEventListener("offline", () => void render());

// ---- The shared list: a space, whose members write notes to its stream.
//
// Each space has a queue of its own (its own IndexedDB database, named for
// the space), since a queue is one stream's; its notes are pulled from the
// space's stream, each with its author. The selected space's live channel
// (/spaces/<id>, members only) pulls it on each poke; the page also polls
// every few seconds, which is how it learns of lists shared with the user
// (a new membership moves no stream of theirs).

interface SharedNote extends Note {
  author: string;
}

/** The user, as the shared list's code sees it (narrowed: a string). */
const me: string = user;
const api = { baseUrl: config.apiUrl, getToken: () => config.token };
const SHARED_POLL_MS = 3000;
let spaces: Space[] = [];
/** A space's queue, made at first use. */
const spaceQueues = new Map<string, { storage: IndexedDBStorage; writer: EventWriter; queue: SyncQueue }>();
function spaceQueue(space: string) {
  let q = spaceQueues.get(space);
  if (q === undefined) {
    const storage = new IndexedDBStorage({ user: me, name: `notes-space-${space}` });
    q = {
      storage,
      writer: new EventWriter(storage),
      queue: new SyncQueue({ storage, baseUrl: config.apiUrl, getToken: () => config.token, space }),
    };
    spaceQueues.set(space, q);
  }
  return q;
}

// A space's pulled notes and cursor, as for the user's own notes.
const sharedKey = (space: string) => `notes-shared:${me}:${space}`;
function sharedPulled(space: string): { notes: SharedNote[]; cursor?: string } {
  return JSON.parse(localStorage.getItem(sharedKey(space)) ?? '{"notes":[]}');
}
const SELECTED = `notes-shared-selected:${me}`;
const selected = (): string | undefined => localStorage.getItem(SELECTED) ?? undefined;
function select(space: string | undefined): void {
  if (space === undefined) {
    localStorage.removeItem(SELECTED);
  } else {
    localStorage.setItem(SELECTED, space);
  }
}

/** What stays shown until the person's next action: that a list was forgotten. */
let notice: string | undefined;

function showShared(text: string, problem = false): void {
  if (notice !== undefined && !problem) {
    return;
  }
  const status = $("shared-status");
  status.textContent = text;
  status.className = `pill${problem ? " problem" : ""}`;
}

/** What a failed space call says to the person. */
function why(err: unknown): string {
  if (err instanceof SpaceError) {
    return err.code ?? `status ${err.status}`;
  }
  if (err instanceof SpaceStopped) {
    return err.reason;
  }
  return String(err);
}

async function renderShared(): Promise<void> {
  const current = selected();
  const options = spaces.map((sp) => {
    const o = document.createElement("option");
    o.value = sp.id;
    o.textContent = `${sp.name} (${sp.role})`;
    return o;
  });
  const sel = $<HTMLSelectElement>("spaces");
  sel.replaceChildren(...options);
  sel.value = current ?? "";
  const has = current !== undefined && spaces.some((sp) => sp.id === current);
  for (const id of ["leave", "member", "member-add", "shared-text", "shared-add"]) {
    ($(id) as HTMLInputElement | HTMLButtonElement).disabled = !has;
  }
  if (!has) {
    $("shared-notes").replaceChildren();
    return;
  }
  const entries = (await spaceQueue(current).storage.list()).filter((e) => e.status === "pending");
  const have = sharedPulled(current).notes;
  const seen = new Set(have.map((n) => n.id));
  const waiting: SharedNote[] = entries
    .filter((e) => !seen.has(e.event.id))
    .map((e) => ({ id: e.event.id, text: String(e.event.payload.text), at: e.event.occurredAt, waiting: true, author: me }));
  const notes = [...have, ...waiting].sort((a, b) => b.at.localeCompare(a.at));
  $("shared-notes").replaceChildren(
    ...notes.map((n) => {
      const li = document.createElement("li");
      li.className = n.waiting ? "pending" : "";
      li.dataset.id = n.id;
      li.dataset.author = n.author;
      const text = document.createElement("span");
      text.textContent = n.text;
      const by = document.createElement("span");
      by.className = "when author";
      by.textContent = n.author === me ? "you" : n.author;
      li.append(text, by);
      return li;
    }),
  );
}

/**
 * The user is no member of space (any more): what the device kept of it
 * goes, its pulled notes and its queue (notes that can no longer be sent).
 */
async function forget(space: string, message: string): Promise<void> {
  localStorage.removeItem(sharedKey(space));
  const q = spaceQueues.get(space);
  spaceQueues.delete(space);
  await q?.storage.clear();
  spaces = spaces.filter((sp) => sp.id !== space);
  if (selected() === space) {
    select(spaces[0]?.id);
  }
  showShared(message, true);
  notice = message;
}

/** Lists the user's spaces, sends the selected one's queue and pulls its notes. One at a time. */
let sharing: Promise<void> = Promise.resolve();
function syncShared(): Promise<void> {
  sharing = sharing.then(async () => {
    try {
      spaces = await listSpaces({ ...api, retry: { maxAttempts: 3 } });
    } catch (err) {
      showShared(`not synced: ${why(err)}`, true);
      return;
    }
    const listed = (space: string | undefined) => spaces.some((sp) => sp.id === space);
    const shown = selected();
    if (shown !== undefined && !listed(shown)) {
      // Gone from the user's lists: removed by an owner. Its pull says so
      // (403), and the list is forgotten.
      await syncSpace(shown);
    }
    if (!listed(selected())) {
      select(spaces[0]?.id); // a list shared with the user shows by itself
    }
    const space = selected();
    if (space !== undefined) {
      await syncSpace(space);
    }
    follow(selected());
    await renderShared();
  });
  return sharing;
}

/** The selected space's live channel: a poke there syncs the list at once. */
let following: { space: string; live: LiveSync } | undefined;
function follow(space: string | undefined): void {
  if (following?.space === space) {
    return;
  }
  following?.live.stop();
  following = undefined;
  if (space === undefined || config.live === undefined) {
    $("shared-live").textContent = "";
    return;
  }
  const spaceLive = new LiveSync({
    getToken: () => config.token,
    channel: { ...config.live, space },
    pull: async () => {
      await syncShared();
      return sharedPulled(space).cursor;
    },
    onState: (st) => showLive(st, "shared-live"),
    pollIntervalMs: SHARED_POLL_MS,
  });
  following = { space, live: spaceLive };
  spaceLive.start();
}

async function syncSpace(space: string): Promise<void> {
  const report = await spaceQueue(space).queue.drain();
  if (report.stopped === "forbidden" && report.error?.startsWith("SPACE_ROLE_FORBIDS")) {
    showShared("not sent: your role in this list only reads", true);
  } else if (report.stopped && report.stopped !== "forbidden") {
    showShared(`not sent: ${report.stopped}`, true);
  }
  const state = sharedPulled(space);
  try {
    const p = pullEvents({
      ...api,
      space,
      cursor: state.cursor,
      retry: { maxAttempts: 3 },
      startOver: () => {
        state.notes = [];
        state.cursor = undefined;
        localStorage.setItem(sharedKey(space), JSON.stringify(state));
      },
    });
    for await (const page of p.pages()) {
      for (const e of page.events) {
        const gone = deletedId(e);
        if (gone !== undefined) {
          state.notes = state.notes.filter((n) => n.id !== gone);
        } else if (e.type === "note.created") {
          state.notes.push({ id: e.id, text: String(e.payload.text), at: e.occurredAt, waiting: false, author: e.author ?? "" });
        }
      }
      state.cursor = page.cursor;
      localStorage.setItem(sharedKey(space), JSON.stringify(state));
    }
  } catch (err) {
    if (err instanceof PullError && err.status === 403) {
      await forget(space, "you are no longer a member of that list");
      return;
    }
    showShared(`not synced: ${err instanceof PullError ? err.status : String(err)}`, true);
    return;
  }
  if (!report.stopped) {
    showShared(`synced ${new Date().toLocaleTimeString()}`);
  }
}

$<HTMLFormElement>("create-space").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  notice = undefined;
  const input = $<HTMLInputElement>("space-name");
  try {
    const space = await createSpace(api, { name: input.value });
    input.value = "";
    select(space.id);
    showShared(`created ${space.name}`);
  } catch (err) {
    showShared(`not created: ${why(err)}`, true);
  }
  await syncShared();
});
$<HTMLSelectElement>("spaces").addEventListener("change", (ev) => {
  select((ev.target as HTMLSelectElement).value || undefined);
  void renderShared().then(() => syncShared());
});
$<HTMLFormElement>("add-member").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  notice = undefined;
  const space = selected();
  const input = $<HTMLInputElement>("member");
  if (space === undefined) {
    return;
  }
  try {
    const m = await addMember(api, space, input.value.trim(), "writer");
    input.value = "";
    showShared(`added ${m.member} as ${m.role}`);
  } catch (err) {
    showShared(`not added: ${why(err)}`, true);
  }
  await syncShared();
});
$("leave").addEventListener("click", async () => {
  notice = undefined;
  const space = selected();
  if (space === undefined) {
    return;
  }
  try {
    await leaveSpace(api, space);
    await forget(space, "you left the list");
  } catch (err) {
    showShared(`not left: ${why(err)}`, true); // SPACE_LAST_OWNER: the last owner stays
  }
  await syncShared();
});
$<HTMLFormElement>("add-shared").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  notice = undefined;
  const space = selected();
  const input = $<HTMLInputElement>("shared-text");
  if (space === undefined) {
    return;
  }
  await spaceQueue(space).writer.write("note.created", { text: input.value });
  input.value = "";
  await renderShared();
  void syncShared();
});

$("me").textContent = me;
await render();
live.start();
void send();
await renderShared();
void syncShared();
setInterval(() => {
  if (navigator.onLine) {
    void syncShared();
  }
}, SHARED_POLL_MS);
