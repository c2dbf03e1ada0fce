import { EventWriter, IndexedDBStorage, type ListedEvent, pullEvents, type QueueEntry, SyncQueue, tokenSubject } from "@sync-events/client";

/** What serve.mjs hands the page: the API and the bearer token to call it with. */
interface Config {
  apiUrl: string;
  token: string;
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

/** Sends what is queued, then pulls what other devices wrote. One at a time. */
let syncing: Promise<void> = Promise.resolve();
function sync(): Promise<void> {
  syncing = syncing.then(async () => {
    const report = await queue.drain();
    if (report.stopped === "offline") {
      showSync("offline: notes wait here");
    } else if (report.stopped) {
      showSync(`not synced: ${report.stopped}${report.error ? ` (${report.error})` : ""}`, true);
    } else {
      await pull();
      showSync(`synced ${new Date().toLocaleTimeString()}`);
    }
    await render();
  });
  return syncing;
}

async function pull(): Promise<void> {
  const state = pulled();
  const p = pullEvents({ baseUrl: config.apiUrl, getToken: () => config.token, cursor: state.cursor, retry: { maxAttempts: 3 } });
  for await (const page of p.pages()) {
    const notes = page.events.filter((e: ListedEvent) => e.type === "note.created");
    state.notes.push(...notes.map((e: ListedEvent) => ({ id: e.id, text: String(e.payload.text), at: e.occurredAt, waiting: false })));
    state.cursor = page.cursor;
    localStorage.setItem(PULLED, JSON.stringify(state)); // the page's notes and its cursor together
  }
}

$<HTMLFormElement>("add").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>("text");
  await writer.write("note.created", { text: input.value });
  input.value = "";
  await render();
  void sync();
});
$("now").addEventListener("click", () => void sync());
window.addEventListener("online", () => void sync());
window.addEventListener("offline", () => void render());
setInterval(() => void sync(), 10_000);

await render();
void sync();
