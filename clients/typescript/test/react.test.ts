import assert from "node:assert/strict";
import { it } from "node:test";
import { createElement as h } from "react";
import { renderToString } from "react-dom/server";
import { createSyncClient, type SyncClient, type SyncEvent } from "../src/client.js";
import { useSyncState } from "../src/react.js";
import { memoryStorage } from "../src/storage.js";

/**
 * useSyncState with react-dom in Node.js (its server renderer: Node.js has
 * no DOM; test/browser/react.test.ts renders in Chromium): a component
 * reads the slice it selects from a client's kept state, offline.
 */

type Notes = Record<string, string>;
const reduce = (s: Notes, e: SyncEvent): Notes => (e.kind === "event" ? { ...s, [e.id]: String(e.payload.text) } : s);

function open(store: Map<string, string>): SyncClient<Notes> {
  return createSyncClient<Notes>({
    baseUrl: "http://127.0.0.1:9",
    user: "react-node",
    getToken: () => "",
    initial: {},
    reduce,
    storage: memoryStorage(store),
    online: () => false,
  });
}

const loaded = (c: SyncClient<Notes>) =>
  new Promise<void>((resolve) => {
    const check = () => c.state.mine.loaded && resolve();
    c.subscribe(check);
    check();
  });

function NotesList({ client }: { client: SyncClient<Notes> }) {
  const notes = useSyncState(client, (s) => s.mine.state);
  const status = useSyncState(client, (s) => s.status.kind);
  return h(
    "ul",
    { "data-status": status },
    Object.values(notes).map((t) => h("li", { key: t }, t)),
  );
}

it("renders the selected slice of a client's state, kept from an earlier run, the pending writes on top", async () => {
  const store = new Map<string, string>();
  const first = open(store);
  await first.write("note.created", { text: "written offline" });
  first.close();

  const client = open(store);
  await loaded(client);
  assert.equal(renderToString(h(NotesList, { client })), '<ul data-status="offline"><li>written offline</li></ul>');
  client.close();
});
