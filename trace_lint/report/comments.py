"""The grammar of suppression comments: `# noqa[: CODES]` and `# trace-lint: VERB[CODES]`."""

from __future__ import annotations

import re

NOQA = re.compile(r"#\s*noqa\b(?P<colon>\s*:\s*(?P<codes>[^#]*))?", re.IGNORECASE)
DIRECTIVE = re.compile(r"#\s*trace-lint\s*:\s*(?P<verb>ignore|disable|enable|noqa)\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
CODE = re.compile(r"^[A-Z]+[0-9]*$")
