"""`json` (a list, ruff's field names) and `json-lines` (one object per line)."""

from __future__ import annotations

import json
from typing import Sequence

from ..core.findings import Finding
from . import OutputContext


def json_array(findings: Sequence[Finding], context: OutputContext) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"


def json_lines(findings: Sequence[Finding], context: OutputContext) -> str:
    return "".join(json.dumps(f.to_json()) + "\n" for f in findings)
