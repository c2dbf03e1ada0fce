"""schemathesis hooks for `make contract`: a caller, and a fresh key per POST.

The local server (make run) reads the caller from a bearer token's claims
without checking its signature, standing in for API Gateway's JWT
authorizer; this auth sends such a token with a `sub`. Generated data
repeats itself (shrinking favours "00000000-..."), while a real client
sends a fresh Idempotency-Key and event id for each new event, so a POST
whose key and id are valid gets fresh ones of the same form; an invalid key
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
    if case.method.upper() != "POST":
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
