// The page of the React binding's Chromium test, bundled by esbuild: a
// SyncClient over the browser's IndexedDB, and three components, each
// counting its renders, over useSyncState.
import { createElement as h } from "react";
import { createRoot } from "react-dom/client";
import { createSyncClient, type SyncEvent } from "../../src/client.js";
import { useSyncState } from "../../src/react.js";

type Notes = Record<string, string>;
const reduce = (s: Notes, e: SyncEvent): Notes => {
  if (e.kind === "deleted") {
    const { [e.id]: _, ...rest } = s;
    return rest;
  }
  return { ...s, [e.id]: String(e.payload.text) };
};

const params = new URLSearchParams(location.search);
const user = params.get("user") ?? "react-user";
const client = createSyncClient<Notes>({
  baseUrl: params.get("api") ?? "",
  user,
  getToken: () => params.get("token") ?? "",
  initial: {},
  reduce,
  pollIntervalMs: 200,
});
const renders = { notes: 0, status: 0, space: 0 };

function NotesList() {
  renders.notes++;
  const notes = useSyncState(client, (s) => s.mine.state);
  return h(
    "ul",
    { id: "notes" },
    Object.entries(notes).map(([id, text]) => h("li", { key: id }, text)),
  );
}
function Status() {
  renders.status++;
  const kind = useSyncState(client, (s) => s.status.kind);
  return h("p", { id: "status" }, kind);
}
function Space() {
  renders.space++;
  const space = useSyncState(client, (s) => s.spaces.none);
  return h("p", { id: "space" }, space === undefined ? "no space" : "space");
}

createRoot(document.getElementById("root") as HTMLElement).render(h("div", null, h(NotesList), h(Status), h(Space)));
Object.assign(window, { app: { client, renders } });
