#!/usr/bin/env bash
# Audit the PyPI corpora made by `scripts/fetch_corpus.py DIR --corpus N` (never committed).
# Usage: scripts/audit_real_code.sh CHECKOUT CORPORA_DIR OUT_DIR
#   CHECKOUT: the trace-lint checkout to run (PYTHONPATH=CHECKOUT); also $TRACE_LINT_CHECKOUT.
#   Every CORPORA_DIR/corpusN/<pkg>/ is checked as a user would, from its own folder:
#   `trace-lint check . --no-cache -j1 --output-format json`, 900 s timeout, niced.
# OUT_DIR/<corpusN>/<pkg>.json|.stderr; OUT_DIR/summary.tsv per package ("!!" marks a
# timeout, an exit other than 0/1, a Traceback in stderr, or empty/invalid JSON);
# OUT_DIR/set.tsv: sorted distinct (corpusN/pkg, file, line, code), for `comm -3` between runs.
set -uo pipefail
CHECKOUT=$(realpath "${1:-${TRACE_LINT_CHECKOUT:?give a checkout}}")
CORPORA=$(realpath "${2:-/tmp/corpora}")
OUT=$(realpath -m "${3:-/tmp/audit}")
PY=${PYTHON:-python3}
mkdir -p "$OUT"
: > "$OUT/set.tsv.new"
printf 'flag\tpackage\texit\tseconds\tfindings\tper_code\n' > "$OUT/summary.tsv"
for dir in "$CORPORA"/corpus*/*/; do
  pkg=$(basename "$dir"); corpus=$(basename "$(dirname "$dir")")
  mkdir -p "$OUT/$corpus"; json="$OUT/$corpus/$pkg.json"; err="$OUT/$corpus/$pkg.stderr"
  start=$(date +%s)
  (cd "$dir" && PYTHONPATH="$CHECKOUT" timeout 900 nice -n 10 "$PY" -P -m trace_lint check . \
      --no-cache -j1 --output-format json > "$json" 2> "$err")
  rc=$?; secs=$(( $(date +%s) - start ))
  "$PY" - "$corpus/$pkg" "$json" "$err" "$rc" "$secs" "$OUT/set.tsv.new" >> "$OUT/summary.tsv" <<'PYEOF'
import collections, json, sys
name, result, err, rc, secs, setfile = sys.argv[1:]
try:
    findings = json.load(open(result))
except (OSError, ValueError):
    findings = None
bad = rc not in ("0", "1") or "Traceback" in open(err).read() or not isinstance(findings, list)
per_code = collections.Counter(f["code"] for f in findings or [])
with open(setfile, "a") as out:
    for f in findings or []:
        out.write(f"{name}\t{f['filename']}\t{f['location']['row']}\t{f['code']}\n")
codes = " ".join(f"{c}:{n}" for c, n in sorted(per_code.items()))
count = len(findings) if isinstance(findings, list) else "no-json"
print(f"{'!!' if bad else ''}\t{name}\t{rc}{' (timeout)' if rc == '124' else ''}\t{secs}\t{count}\t{codes}")
PYEOF
  tail -n 1 "$OUT/summary.tsv"
done
sort -u "$OUT/set.tsv.new" > "$OUT/set.tsv" && rm "$OUT/set.tsv.new"
