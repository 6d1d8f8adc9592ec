"""Reading and resealing result-cache entries as a hand edit would: a header line, then the
payload, whose digest the header holds (`trace_lint.driver.cache.sealed`)."""

from __future__ import annotations

import json
from typing import Callable, Optional

from trace_lint.driver.cache import payload_digest


def payload(text: str) -> dict:
    return json.loads(text.partition("\n")[2])


def header(text: str) -> dict:
    return json.loads(text.partition("\n")[0])


def resealed_text(text: str, body: str) -> str:
    """The entry with `body` as its payload's text, sealed again."""
    return json.dumps(dict(header(text), digest=payload_digest(body.encode("ascii"))), separators=(",", ":")) + "\n" + body


def resealed(text: str, change: Optional[Callable[[dict], object]] = None, replace: Optional[dict] = None, **header_fields) -> str:
    """The entry with its payload changed (`change` edits it in place, `replace` is a new
    one) and sealed again with a matching digest, so that only the checks of the fields can
    reject it; `header_fields` override the header after sealing."""
    fields = payload(text) if replace is None else replace
    if change is not None:
        change(fields)
    body = json.dumps(fields, separators=(",", ":"))
    top = dict(header(text), digest=payload_digest(body.encode("ascii")), **header_fields)
    return json.dumps(top, separators=(",", ":")) + "\n" + body
