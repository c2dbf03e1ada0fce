import type { Refusal } from "./http.js";

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

/** Why a token is not sent for a user: it is another user's, or no JWT with a `sub` that tells whose. */
export type TokenRefusal = "wrong_user" | "unreadable_token";

/**
 * The token to send a request made for `user` with: getToken's, if its
 * `sub` is that user; else the refusal, and nothing is to be sent with
 * it. Every request and subscription of a user's (their queue's sends,
 * their pulls, their live channel, their space calls) takes its token
 * here, asked afresh each attempt: the token may change at any time (a
 * sign-out, a sign-in as someone else), and a request of one user's made
 * with another's token would read the other's events into this user's
 * storage, or write this user's into the other's account. Without a user
 * (a part used on its own, for whoever the token is), the token as it is.
 */
export async function tokenFor(
  getToken: () => string | Promise<string>,
  user: string | undefined,
): Promise<{ token: string } | Refusal<TokenRefusal>> {
  const token = await getToken();
  if (user === undefined) {
    return { token };
  }
  const sub = tokenSubject(token);
  if (sub === undefined) {
    return { refused: "unreadable_token", error: "the token has no readable sub (not a JWT?): nothing is sent with it" };
  }
  if (sub !== user) {
    return { refused: "wrong_user", error: "the token is another user's: nothing is sent with it" };
  }
  return { token };
}

// fatal: a payload that is not UTF-8 is no token of the API's issuer.
const utf8 = new TextDecoder("utf-8", { fatal: true });
