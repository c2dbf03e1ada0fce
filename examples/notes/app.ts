import {
  EventWriter,
  IndexedDBStorage,
  type ListedEvent,
  type LiveChannel,
  type LiveState,
  LiveSync,
  pullEvents,
  type QueueEntry,
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

const config: Config = await (await fetch("/config.json")).json();
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
  const p = pullEvents({ baseUrl: config.apiUrl, getToken: () => config.token, cursor: state.cursor, retry: { maxAttempts: 3 }, signal });
  for await (const page of p.pages()) {
    const notes = page.events.filter((e: ListedEvent) => e.type === "note.created");
    state.notes.push(...notes.map((e: ListedEvent) => ({ id: e.id, text: String(e.payload.text), at: e.occurredAt, waiting: false })));
    state.cursor = page.cursor;
    localStorage.setItem(PULLED, JSON.stringify(state)); // the page's notes and its cursor together
  }
  showSync(`synced ${new Date().toLocaleTimeString()}`);
  await render();
  return state.cursor;
}

/** The channel's state, as the page shows it. */
function showLive(state: LiveState): void {
  const live = $("live");
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
const live = new LiveSync({ getToken: () => config.token, channel: config.live, pull, onState: showLive });

$<HTMLFormElement>("add").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>("text");
  await writer.write("note.created", { text: input.value });
  input.value = "";
  await render();
  void send();
});
$("now").addEventListener("click", () => void send().then(() => live.pullNow()));
window.addEventListener("online", () => void send());
window.addEventListener("offline", () => void render());

await render();
live.start();
void send();
