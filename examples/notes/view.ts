// The page's markup in code: how the client's state shows. The logic is app.ts's.
import type { Space, StreamView, SyncRecord, SyncState, SyncStatus } from "@sync-events/client";

/** A note's fields: each stream's notes are the records of its collection "note". */
export interface Note {
  text: string;
  done: boolean;
}

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export function pill(id: string, text: string, kind = ""): void {
  $(id).textContent = text;
  $(id).className = `pill ${kind}`;
}

/** A control of a note's item: app.ts tells them apart by data-action. */
function control(action: string, label: string, checked?: boolean): HTMLElement {
  const el = document.createElement(checked === undefined ? "button" : "input");
  Object.assign(el, checked === undefined ? { type: "button", textContent: label } : { type: "checkbox", checked, title: label });
  el.dataset.action = action;
  return el;
}

function items(view: StreamView<unknown> | undefined, shared: boolean, user: string): HTMLLIElement[] {
  const notes = Object.values((view?.records.note ?? {}) as Record<string, SyncRecord<Note>>);
  notes.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id));
  return notes.map((n) => {
    const li = document.createElement("li");
    li.className = `${n.pending ? "pending" : ""} ${n.fields.done ? "done" : ""}`.trim();
    li.dataset.id = n.id;
    const text = document.createElement("span");
    text.textContent = n.fields.text;
    const meta = document.createElement("span");
    meta.className = shared ? "when author" : "when";
    meta.textContent = shared ? (n.author === user ? "you" : (n.author ?? "")) : new Date(n.createdAt).toLocaleTimeString();
    if (shared) {
      li.dataset.author = n.author ?? "";
    }
    li.append(text, meta, control("tick", "done", n.fields.done), control("rename", "Rename"), control("delete", "Delete"));
    return li;
  });
}

/** What a status says to the person, and whether it is a problem. */
function says(s: SyncStatus): [string, boolean] {
  switch (s.kind) {
    case "stopped":
      return [`not sent: ${s.reason}${s.error ? ` (${s.error})` : ""}`, true];
    case "offline":
      return ["offline: notes wait here", false];
    case "synced":
      return [`synced ${new Date().toLocaleTimeString()}`, false];
    default:
      return s.error?.startsWith("SPACE_ROLE_FORBIDS")
        ? ["not sent: your role in this list only reads", true]
        : [s.error ? `not synced: ${s.error}` : "syncing…", !!s.error];
  }
}

function showChannel(id: string, view: StreamView<unknown> | undefined): void {
  pill(id, view?.channel ?? "", view?.channel === "live" ? "online" : view?.channel === "stopped" ? "problem" : "");
  $(id).dataset.state = view?.channel ?? "";
}

/** Shows the client's state: the user's notes, the lists, the selected one's notes, and each status. */
export function show(
  state: SyncState<unknown>,
  spaces: Space[],
  current: string | undefined,
  notice: string | undefined,
  user: string,
): void {
  const { mine, spaces: followed } = state;
  $("notes").replaceChildren(...items(mine, false, user));
  $("waiting").textContent = `${mine.writes.filter((w) => w.fate === "pending").length} waiting`;
  pill("network", navigator.onLine ? "online" : "offline", navigator.onLine ? "online" : "offline");
  const [text, problem] = says(mine.status);
  pill("sync", text, problem ? "problem" : "");
  showChannel("live", mine);
  // The shared list: the lists the user is a member of, and the selected one's notes.
  const sel = $<HTMLSelectElement>("spaces");
  sel.replaceChildren(
    ...spaces.map((sp) => Object.assign(document.createElement("option"), { value: sp.id, textContent: `${sp.name} (${sp.role})` })),
  );
  sel.value = current ?? "";
  for (const id of ["leave", "member", "member-add", "shared-text", "shared-add"]) {
    $<HTMLInputElement>(id).disabled = current === undefined;
  }
  const view = current === undefined ? undefined : followed[current];
  $("shared-notes").replaceChildren(...items(view, true, user));
  showChannel("shared-live", view);
  if (notice === undefined && view !== undefined && view.status.kind !== "online") {
    const [said, bad] = says(view.status);
    pill("shared-status", said, bad ? "problem" : "");
  }
}
