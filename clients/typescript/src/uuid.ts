/** The part of Web Crypto a UUID needs; randomUUID exists only in secure contexts. */
export type UUIDSource = Pick<Crypto, "getRandomValues"> & { randomUUID?: () => string };

/**
 * A random UUID v4 (RFC 9562, 5.4). crypto.randomUUID where the page has it;
 * else the same from crypto.getRandomValues, which every browser has in
 * every context: randomUUID is missing on a plain-HTTP origin that is not
 * localhost (a phone on the LAN, an HTTP staging host).
 */
export function uuidv4(c: UUIDSource = globalThis.crypto): string {
  if (typeof c.randomUUID === "function") {
    return c.randomUUID();
  }
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] as number) & 0x0f) | 0x40; // version 4
  b[8] = ((b[8] as number) & 0x3f) | 0x80; // variant 10
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
