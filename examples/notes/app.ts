import { createSyncClient, indexedDBStorage, type RecordCollection, type Space, tokenSubject } from "@sync-events/client";
import { $, type Note, pill, show } from "./view.js";

/** What serve.mjs hands the page: the API, the bearer token to call it with, and the live channel's endpoints. */
interface Config {
  apiUrl: string;
  token: string;
  live?: { realtimeUrl: string; httpHost: string };
}

// ?user=<name> picks the user (make run only: serve.mjs makes an unsigned token for it).
const config: Config = await (await fetch(`/config.json${location.search}`)).json();
const user = tokenSubject(config.token);
if (user === undefined) {
  throw new Error("SYNC_EVENTS_TOKEN is no JWT with a sub: the client could not tell whose notes these are");
}

// The page opens offline from its service worker's copy (sw.js).
void navigator.serviceWorker?.register("/sw.js");

// The one client: the queues, pulls, live channels and kept notes of the
// user's own stream and of each shared list it follows, in IndexedDB. An
// app with a login makes it at login, and calls client.signOut() at logout.
// The notes are records of the collection "note": no reducer.
const client = createSyncClient({
  baseUrl: config.apiUrl,
  user,
  getToken: () => config.token,
  storage: indexedDBStorage({ name: "notes" }),
  ...(config.live && { live: config.live }),
});
const notes = (space?: string): RecordCollection<Note> => client.records<Note>("note", { space });

const SELECTED = `notes-shared-selected:${user}`;
let spaces: Space[] = [];
/** What stays shown in the shared list's status until the person's next action. */
let notice: string | undefined;

const render = () => show(client.state, spaces, selected(), notice, user);

/** The selected list: the one picked, if the user is still a member of it, else the first. */
function selected(): string | undefined {
  const picked = localStorage.getItem(SELECTED);
  return spaces.some((sp) => sp.id === picked) ? (picked ?? undefined) : spaces[0]?.id;
}

/**
 * Lists the user's spaces (a list shared with them shows by itself) and
 * follows each; a followed list no longer listed is pulled at once, and
 * one that refuses the user (removed) is forgotten.
 */
async function refreshSpaces(): Promise<void> {
  const listed = await client.listSpaces().catch(() => undefined);
  spaces = listed ?? spaces;
  for (const sp of spaces) {
    client.follow(sp.id);
  }
  if (listed && Object.keys(client.state.spaces).some((id) => !listed.some((sp) => sp.id === id))) {
    await client.sync();
  }
  for (const [id, view] of Object.entries(client.state.spaces)) {
    if (view.status.kind === "stopped" && view.status.reason === "forbidden" && !view.status.error?.startsWith("SPACE_ROLE_FORBIDS")) {
      await forget(id, "you are no longer a member of that list");
    }
  }
  render();
}

async function forget(space: string, message: string): Promise<void> {
  spaces = spaces.filter((sp) => sp.id !== space);
  await client.unfollow(space); // its notes and queue go from this device
  notice = message;
  pill("shared-status", message, "problem");
}

/** Runs a space operation: its outcome, or the API's code, in the shared list's status. */
async function act(done: () => Promise<string | undefined>, failed: string): Promise<void> {
  notice = undefined;
  try {
    const said = await done();
    if (said !== undefined) {
      pill("shared-status", said);
    }
  } catch (err) {
    pill(
      "shared-status",
      `${failed}: ${(err as { code?: string; reason?: string }).code ?? (err as { reason?: string }).reason ?? String(err)}`,
      "problem",
    );
  }
  await refreshSpaces();
}

/** On the form's submit: fn with its input's text, then the input emptied. */
function submit(form: string, input: string, fn: (text: string) => Promise<unknown>): void {
  $<HTMLFormElement>(form).addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const field = $<HTMLInputElement>(input);
    await fn(field.value);
    field.value = "";
  });
}

submit("add", "text", (text) => notes().add({ text, done: false }));
submit("add-shared", "shared-text", (text) => notes(selected()).add({ text, done: false }));

/** A click in a list's item: tick, rename or delete its note. */
function edits(list: string, space: () => string | undefined): void {
  $(list).addEventListener("click", (ev) => {
    const target = ev.target as HTMLInputElement;
    const id = target.closest("li")?.dataset.id ?? "";
    const c = notes(space());
    if (target.dataset.action === "tick") {
      void c.patch(id, { done: target.checked });
    } else if (target.dataset.action === "delete") {
      void c.delete(id);
    } else if (target.dataset.action === "rename") {
      const text = prompt("Rename the note", c.get(id)?.fields.text);
      void (text && c.patch(id, { text }));
    }
  });
}
edits("notes", () => undefined);
edits("shared-notes", selected);
submit("create-space", "space-name", (name) =>
  act(async () => {
    const space = await client.createSpace(name);
    localStorage.setItem(SELECTED, space.id);
    return `created ${space.name}`;
  }, "not created"),
);
submit("add-member", "member", (member) =>
  act(async () => {
    const m = await client.addMember(selected() ?? "", member.trim(), "writer");
    return `added ${m.member} as ${m.role}`;
  }, "not added"),
);
$("leave").addEventListener(
  "click",
  () =>
    void act(async () => {
      const space = selected() ?? "";
      await client.leaveSpace(space); // SPACE_LAST_OWNER: the last owner stays
      await forget(space, "you left the list");
      return undefined;
    }, "not left"),
);
$<HTMLSelectElement>("spaces").addEventListener("change", (ev) => {
  localStorage.setItem(SELECTED, (ev.target as HTMLSelectElement).value);
  render();
});
$("now").addEventListener("click", () => void client.sync().then(refreshSpaces));
window.addEventListener("online", render);
window.addEventListener("offline", render);

$("me").textContent = user;
client.subscribe(render);
render();
void refreshSpaces();
// Every 3 s: lists newly shared with the user, and a removal, found even without the list's channel.
setInterval(() => {
  if (navigator.onLine) {
    void refreshSpaces();
  }
}, 3000);
