"""schemathesis hooks for `make contract`: a caller, and a fresh key per POST.

The local server (make run) reads the caller from a bearer token's claims
without checking its signature, standing in for API Gateway's JWT
authorizer; this auth sends such a token with a `sub`. Generated data
repeats itself (shrinking favours "00000000-..."), while a real client
sends a fresh Idempotency-Key and event id for each new event, so a POST
or DELETE whose key and id are valid gets fresh ones of the same form; an invalid key
or id, which schemathesis generated on purpose, is sent as generated. A
POST under a key this run already sent is a link's replay of that request
(openapi.yaml links each 201 to the same request again) and goes as it is.
"""

import base64
import json
import re
import uuid

import schemathesis

UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


def unsigned_token(claims):
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none'})}.{part(claims)}.x"


@schemathesis.auth()
class LocalBearer:
    """A bearer token whose sub is the contract run's one caller."""

    def get(self, case, ctx):
        return unsigned_token({"sub": "schemathesis-user", "iss": "https://issuer.example", "aud": "sync-app"})

    def set(self, case, data, ctx):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"


def fresh(value):
    """A new UUID in value's form (bare or quoted) if value is a valid one."""
    if not isinstance(value, str):
        return value
    inner = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if not UUID.fullmatch(inner):
        return value
    new = str(uuid.uuid4())
    return f'"{new}"' if inner != value else new


SENT_KEYS = set()


@schemathesis.hook
def before_call(ctx, case, kwargs):
    if case.method.upper() not in ("POST", "DELETE"):
        return
    headers = case.headers or {}
    key = headers.get("Idempotency-Key")
    if key in SENT_KEYS:
        return
    if key is not None:
        headers["Idempotency-Key"] = fresh(key)
        SENT_KEYS.add(headers["Idempotency-Key"])
    if isinstance(case.body, dict) and "id" in case.body:
        case.body["id"] = fresh(case.body["id"])


# Rules the API holds a body to that JSON Schema cannot state. schemathesis
# draws bodies from the schema alone, so a body breaking one of these is
# schema-valid yet refused with 400; each is named here, and a generated
# body that breaks one is left out rather than reported as the API's fault.
# The API's own tests hold each rule (idempotency/hash_test.go for I-JSON,
# functions/sync-events/api/batch_test.go for repeated ids).


def _is_noncharacter(ch):
    c = ord(ch)
    return 0xFDD0 <= c <= 0xFDEF or (c & 0xFFFE) == 0xFFFE


def _strings(value):
    """Every string and member name in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _numbers(value):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def breaks_ijson(body):
    """I-JSON (RFC 7493 section 2.1 and 2.2), which the canonical hash
    requires: no string or member name holds a Unicode noncharacter or a
    lone surrogate, and every number fits a double."""
    for s in _strings(body):
        if any(_is_noncharacter(ch) or 0xD800 <= ord(ch) <= 0xDFFF for ch in s):
            return True
    for n in _numbers(body):
        try:
            if abs(float(n)) == float("inf"):
                return True
        except OverflowError:
            return True
    return False


def repeats_an_event_id(body):
    """A batch names each event once: `uniqueItems` compares whole events,
    and two events differing only in their payload share an id (the API
    answers 400 naming the repeated index)."""
    if not isinstance(body, dict) or not isinstance(body.get("events"), list):
        return False
    ids = [e.get("id").lower() for e in body["events"] if isinstance(e, dict) and isinstance(e.get("id"), str)]
    return len(ids) != len(set(ids))


@schemathesis.hook
def filter_body(ctx, body):
    return not (breaks_ijson(body) or repeats_an_event_id(body))
