import type { QueueStorage } from "./storage.js";
import type { NewEvent, QueueEntry } from "./types.js";
import { uuidv4 } from "./uuid.js";

/**
 * Writes events into the sync queue. Each event gets a fresh UUID v4 id and
 * a fresh UUID v4 idempotency key, and is stored with its key before
 * anything is sent: whatever happens next (the app closing, the network
 * failing), every later send of it carries that key.
 */
export class EventWriter {
  readonly #storage: QueueStorage;

  constructor(storage: QueueStorage) {
    this.#storage = storage;
  }

  async write(type: string, payload: NewEvent["payload"], occurredAt: Date | string = new Date()): Promise<QueueEntry> {
    const entry: QueueEntry = {
      key: uuidv4(),
      event: {
        id: uuidv4(),
        type,
        occurredAt: typeof occurredAt === "string" ? occurredAt : occurredAt.toISOString(),
        payload,
      },
      status: "pending",
    };
    await this.#storage.add(entry);
    return entry;
  }
}
