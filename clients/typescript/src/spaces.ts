import { eventsURL, type Fetch, type StopReason, sendUntilAnswered, spacesURL } from "./http.js";
import { type RetryOptions, retrier } from "./retry.js";
import type { components } from "./schema.js";
import { type TokenRefusal, tokenFor, tokenSubject } from "./token.js";
import type { ErrorBody, ErrorCode } from "./types.js";
import { uuidv4 } from "./uuid.js";

/** A member's role in a space: every member reads; a writer writes events too; an owner also adds and removes members. */
export type Role = components["schemas"]["Role"];
/** A space the caller is a member of, with the caller's role in it. */
export type Space = components["schemas"]["Space"];
/** A member of a space and their role: the answer of addMember. */
export type SpaceMember = components["schemas"]["Member"];
/** The answer of removeMember and leaveSpace. */
export type RemovedMember = components["schemas"]["RemovedMember"];

/** The answer of deleteEvent. */
export type DeletedEvent = components["schemas"]["DeletedEvent"];

/** Where the API is and who calls it, as for a pull. */
export interface SpaceOptions {
  baseUrl: string;
  /** The bearer token for the next attempt (asked for each attempt). */
  getToken: () => string | Promise<string>;
  /**
   * The user (the `sub` of the tokens) the calls are made for: each
   * attempt's token must be theirs, or nothing is sent and the call
   * throws SpaceStopped "wrong_user" ("unreadable_token" for a token with
   * no readable `sub`). Absent, the token is sent as it is, except by
   * leaveSpace, which checks every attempt's token against the first's `sub`.
   */
  user?: string;
  fetch?: Fetch;
  retry?: RetryOptions;
  signal?: AbortSignal;
  /** Whether the device is online: navigator.onLine by default (always, where there is none). */
  online?: () => boolean;
}

/**
 * A mutation's own Idempotency-Key: a fresh UUID v4 by default. To try a
 * mutation that stopped (SpaceStopped) again, pass its `key`, so that, had
 * the server carried it out, it answers the same instead of doing it twice.
 */
export interface MutationOptions {
  key?: string;
}

/** Why a space request was given up before an answer, as a drain's `stopped`; a token refused for SpaceOptions.user (or leaveSpace's) too. */
export type SpaceStopReason = StopReason | TokenRefusal;

/** A space request refused: the status and the server's error (its `code`, if it is the API's). */
export class SpaceError extends Error {
  /** The API's error code, when the body is the API's error. */
  readonly code: ErrorCode | undefined;

  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    const code = body && "error" in body ? body.error : undefined;
    super(`space request answered ${status}${code ? ` ${code}` : ""}: ${body && "message" in body ? body.message : ""}`);
    this.code = code;
  }
}

/**
 * A space request given up before an answer (see SpaceStopReason), with the
 * last failure seen. A mutation may have been carried out all the same,
 * its answer lost: `key` is the one it was sent with, to send it again
 * under (MutationOptions).
 */
export class SpaceStopped extends Error {
  constructor(
    readonly reason: SpaceStopReason,
    readonly lastError?: string,
    readonly key?: string,
  ) {
    super(`space request stopped: ${reason}${lastError ? ` (${lastError})` : ""}`);
  }
}

/**
 * Creates a space, the caller its owner, exactly once: the same
 * Idempotency-Key with every retry, until answered. `id` is the space's,
 * chosen here (a lowercase UUID v4 by default). Resolves to the space with
 * the caller's role, "owner"; a refusal throws SpaceError (409
 * SPACE_ALREADY_EXISTS: that id is taken, as by a create sent again under
 * another key), a request given up throws SpaceStopped.
 */
export async function createSpace(options: SpaceOptions, space: { id?: string; name: string } & MutationOptions): Promise<Space> {
  const body = { id: space.id ?? uuidv4(), name: space.name };
  return (await mutate(options, "POST", spacesURL(options.baseUrl), space.key, body, 201)) as Space;
}

/** The spaces the caller is a member of, each with the caller's role, sorted by id. */
export async function listSpaces(options: SpaceOptions): Promise<Space[]> {
  const url = spacesURL(options.baseUrl);
  const outcome = await sendUntilAnswered<TokenRefusal>(async () => {
    const checked = await tokenFor(options.getToken, options.user);
    return "refused" in checked ? checked : new Request(url, { headers: { authorization: `Bearer ${checked.token}` } });
  }, attempt(options));
  if (outcome.kind === "stopped") {
    throw new SpaceStopped(outcome.reason, outcome.error);
  }
  if (outcome.response.status !== 200) {
    throw new SpaceError(outcome.response.status, outcome.body as ErrorBody);
  }
  return (outcome.body as components["schemas"]["SpaceList"]).spaces;
}

/**
 * Adds member (a user's `sub`) to the space with role, exactly once: an
 * owner's call (403 SPACE_ROLE_FORBIDS for anyone else). Resolves to the
 * new member; 409 SPACE_ALREADY_MEMBER if they are one already.
 */
export async function addMember(
  options: SpaceOptions,
  spaceId: string,
  member: string,
  role: Role,
  mutation: MutationOptions = {},
): Promise<SpaceMember> {
  const url = spacesURL(options.baseUrl, spaceId, "members");
  return (await mutate(options, "POST", url, mutation.key, { member, role }, 201)) as SpaceMember;
}

/**
 * Removes member from the space, exactly once: an owner removes anyone,
 * any member removes themselves (leaveSpace). The last owner may not go
 * (409 SPACE_LAST_OWNER); 404 SPACE_NO_SUCH_MEMBER names no member.
 */
export async function removeMember(
  options: SpaceOptions,
  spaceId: string,
  member: string,
  mutation: MutationOptions = {},
): Promise<RemovedMember> {
  const url = spacesURL(options.baseUrl, spaceId, `members/${encodeURIComponent(member)}`);
  return (await mutate(options, "DELETE", url, mutation.key, undefined, 200)) as RemovedMember;
}

/**
 * The caller leaves the space: removeMember of options.user, or without
 * one of the token's own `sub`. Each attempt checks the token is still
 * that user's (a login as someone else during a backoff stops it as
 * "wrong_user", nothing sent).
 */
export async function leaveSpace(options: SpaceOptions, spaceId: string, mutation: MutationOptions = {}): Promise<RemovedMember> {
  const user = options.user ?? tokenSubject(await options.getToken());
  if (user === undefined) {
    throw new SpaceStopped("unreadable_token", "the token has no readable sub (not a JWT?): nothing is sent with it");
  }
  const url = spacesURL(options.baseUrl, spaceId, `members/${encodeURIComponent(user)}`);
  return (await mutate({ ...options, user }, "DELETE", url, mutation.key, undefined, 200)) as RemovedMember;
}

/**
 * Deletes an event, exactly once: the caller's own stream's, or with
 * `space` that space's (an owner deletes any event, a writer their own).
 * The event keeps its position as a tombstone, its payload erased, and a
 * notice of type `event.deleted` follows in the stream: every device's
 * pull drops it (deletedId). Refusals throw SpaceError (404
 * EVENT_NOT_FOUND, 409 EVENT_ALREADY_DELETED or EVENT_NOT_DELETABLE, 403
 * SPACE_ROLE_FORBIDS); a request given up throws SpaceStopped with its
 * key, to send again under.
 */
export async function deleteEvent(
  options: SpaceOptions & { space?: string },
  eventId: string,
  mutation: MutationOptions = {},
): Promise<DeletedEvent> {
  const url = eventsURL(options.baseUrl, options.space);
  url.pathname = `${url.pathname}/${encodeURIComponent(eventId)}`;
  return (await mutate(options, "DELETE", url, mutation.key, undefined, 200)) as DeletedEvent;
}

function attempt(options: SpaceOptions) {
  return {
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    retrier: retrier(options.retry),
    signal: options.signal,
    online: options.online,
  };
}

/**
 * Sends one mutation under one key until it is answered: the answer's body
 * for the status expected, else SpaceError; SpaceStopped when given up.
 * With options.user, each attempt's token must be that user's (tokenFor).
 */
async function mutate(
  options: SpaceOptions,
  method: "POST" | "DELETE",
  url: URL,
  key: string | undefined,
  body: unknown,
  expected: number,
): Promise<unknown> {
  const k = key ?? uuidv4();
  const json = body === undefined ? undefined : JSON.stringify(body);
  const outcome = await sendUntilAnswered<TokenRefusal>(async () => {
    const checked = await tokenFor(options.getToken, options.user);
    if ("refused" in checked) {
      return checked;
    }
    const { token } = checked;
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, "idempotency-key": k };
    if (json !== undefined) {
      headers["content-type"] = "application/json";
    }
    return new Request(url, json === undefined ? { method, headers } : { method, headers, body: json });
  }, attempt(options));
  if (outcome.kind === "stopped") {
    throw new SpaceStopped(outcome.reason, outcome.error, k);
  }
  if (outcome.response.status !== expected) {
    throw new SpaceError(outcome.response.status, outcome.body as ErrorBody);
  }
  return outcome.body;
}
