#!/usr/bin/env bash
# Run trace-lint on the real-code corpus made by scripts/fetch_corpus.py (never committed).
# Usage: scripts/audit_real_code.sh [CORPUS_DIR] [OUT_DIR] [PACKAGE ...]
#   CORPUS_DIR defaults to /tmp/trace-lint-corpus (fetched first when it has no manifest);
#   OUT_DIR (default CORPUS_DIR/results) gets <package>.json, <package>.stderr and counts.tsv.
# Runs from CORPUS_DIR so finding paths read "<package>/..." and runs can be diffed.
# One package at a time, niced: the analyzer is CPU-heavy on large packages.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=$(realpath -m "${1:-/tmp/trace-lint-corpus}")
OUT=$(realpath -m "${2:-$CORPUS/results}")
shift $(( $# > 2 ? 2 : $# ))
PY=${PYTHON:-python3}
if [ ! -f "$CORPUS/manifest.json" ]; then
  "$PY" "$HERE/scripts/fetch_corpus.py" "$CORPUS"
fi
mkdir -p "$OUT"
if [ $# -gt 0 ]; then
  packages=("$@")
else
  mapfile -t packages < <("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print("\n".join(k for k,v in m.items() if "skipped" not in v))' "$CORPUS/manifest.json")
fi
printf 'package\tversion\tpy_files\texit\tseconds\ttracebacks\tfindings\tper_code\n' > "$OUT/counts.tsv.new"
for name in "${packages[@]}"; do
  [ -d "$CORPUS/$name" ] || { echo "$name: not in $CORPUS, skipped"; continue; }
  start=$(date +%s)
  set +e
  (cd "$CORPUS" && PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" nice -n 10 "$PY" -m trace_lint check "$name" \
      --no-cache --output-format json > "$OUT/$name.json" 2> "$OUT/$name.stderr")
  rc=$?
  set -e
  secs=$(( $(date +%s) - start ))
  tb=$(grep -c Traceback "$OUT/$name.stderr" || true)
  "$PY" - "$CORPUS/manifest.json" "$OUT/$name.json" "$name" "$rc" "$secs" "$tb" >> "$OUT/counts.tsv.new" <<'EOF'
import collections, json, sys
manifest, result, name, rc, secs, tb = sys.argv[1:]
entry = json.load(open(manifest)).get(name, {})
try:
    findings = json.load(open(result))
except (OSError, ValueError):
    findings = None
if findings is None:
    print(f"{name}\t{entry.get('version', '?')}\t{entry.get('python_files', '?')}\t{rc}\t{secs}\t{tb}\tno-json\t")
else:
    per_code = collections.Counter(f["code"] for f in findings)
    codes = " ".join(f"{code}:{n}" for code, n in sorted(per_code.items()))
    print(f"{name}\t{entry.get('version', '?')}\t{entry.get('python_files', '?')}\t{rc}\t{secs}\t{tb}\t{len(findings)}\t{codes}")
EOF
  tail -n 1 "$OUT/counts.tsv.new"
done
mv "$OUT/counts.tsv.new" "$OUT/counts.tsv"
