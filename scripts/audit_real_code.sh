#!/usr/bin/env bash
# Run trace-lint on real trace code from PyPI (never committed: fetched into a temp folder).
# Usage: scripts/audit_real_code.sh [OUT_DIR]   -> OUT_DIR/<package>.json and a summary
set -euo pipefail
OUT=${1:-/tmp/trace-lint-audit}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
for spec in tt-bio==0.23.0 tt-symbiote==0.1.6 tt-check==0.1.3; do
  name=${spec%%==*}
  target="$OUT/src/$name"
  if [ ! -d "$target" ]; then
    # Some require Python 3.10 or 3.12: fetch the wheel for 3.12 (pure Python; nothing is run).
    "$PY" -m pip install -q --no-deps --no-compile --target "$target" --python-version 3.12 --only-binary=:all: "$spec"
  fi
  set +e
  "$PY" -m trace_lint check "$target" --output-format json > "$OUT/$name.json" 2> "$OUT/$name.stderr"
  rc=$?
  set -e
  count=$("$PY" -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$OUT/$name.json")
  tb=$(grep -c Traceback "$OUT/$name.stderr" || true)
  echo "$spec: exit $rc, $count findings, $tb tracebacks"
done
