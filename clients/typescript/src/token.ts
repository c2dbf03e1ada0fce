/**
 * The `sub` claim of a JWT (a bearer token of the API), read without
 * verifying the token: the server verifies it, and takes the user from this
 * very claim. undefined when the token is not a JWT whose payload is a JSON
 * object with a non-empty string `sub`.
 */
export function tokenSubject(token: string): string | undefined {
  const payload = token.split(".")[1];
  if (payload === undefined || !/^[A-Za-z0-9_-]+=*$/.test(payload)) {
    return undefined;
  }
  try {
    const binary = atob(payload.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, ""));
    const json: unknown = JSON.parse(utf8.decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
    const sub = typeof json === "object" && json !== null ? (json as { sub?: unknown }).sub : undefined;
    return typeof sub === "string" && sub !== "" ? sub : undefined;
  } catch {
    return undefined;
  }
}

// fatal: a payload that is not UTF-8 is no token of the API's issuer.
const utf8 = new TextDecoder("utf-8", { fatal: true });
