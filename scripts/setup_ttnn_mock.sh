#!/usr/bin/env bash
# Make a Python 3.12 venv with ttnn==0.81.1, pytest and this project, able to open a ttnn mock
# device on a CPU-only machine, for the runtime-guard tests.
#
# Usage:  eval "$(scripts/setup_ttnn_mock.sh /path/to/venv)"
# Prints `export TRACE_LINT_TTNN_PYTHON=...` and `export TT_METAL_MOCK_CLUSTER_DESC_PATH=...` on
# stdout (everything else goes to stderr). When ttnn cannot be installed it says why on stderr,
# prints nothing to export and exits 0, so the ttnn tests skip instead of failing.
set -uo pipefail

VENV=${1:?usage: setup_ttnn_mock.sh VENV_DIR}
say() { echo "setup_ttnn_mock: $*" >&2; }
give_up() { say "$*; the ttnn runtime-guard tests will be skipped"; exit 0; }

ROOT=$(git -C "$(dirname "$0")" rev-parse --show-toplevel 2>/dev/null) || ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED="$ROOT/../shared"
[ -x "$SHARED/ttnn-mock/setup.sh" ] || SHARED=/work/shared
[ -x "$SHARED/ttnn-mock/setup.sh" ] || give_up "no ttnn-mock/setup.sh beside the repository ($ROOT/../shared) nor in /work/shared"

PY312=""
for candidate in /root/.pyenv/versions/3.12.1/bin/python "$(command -v python3.12 2>/dev/null)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then PY312=$candidate; break; fi
done
[ -n "$PY312" ] || give_up "no Python 3.12 found (/root/.pyenv/versions/3.12.1/bin/python or python3.12 on PATH)"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY312" -m venv "$VENV" >&2 || give_up "could not create a venv at $VENV with $PY312"
fi
VPY="$VENV/bin/python"
if ! "$VPY" -c 'import importlib.metadata as m; assert m.version("ttnn") == "0.81.1"' 2>/dev/null; then
  "$VPY" -m pip install -q "ttnn==0.81.1" >&2 || give_up "pip could not install ttnn==0.81.1"
fi
"$VPY" -m pip install -q pytest >&2 || give_up "pip could not install pytest"
"$VPY" -m pip install -q -e "$ROOT" >&2 || give_up "pip could not install the project from $ROOT"

EXPORTS=$("$SHARED/ttnn-mock/setup.sh" "$VPY") || give_up "ttnn-mock/setup.sh failed: $EXPORTS"
CLUSTER=$(printf '%s\n' "$EXPORTS" | sed -n 's/^export TT_METAL_MOCK_CLUSTER_DESC_PATH=//p')
[ -n "$CLUSTER" ] && [ -f "$CLUSTER" ] || give_up "ttnn-mock/setup.sh printed no cluster descriptor"

# Prove a mock device opens before telling the tests to use it.
TT_METAL_MOCK_CLUSTER_DESC_PATH=$CLUSTER "$VPY" -c '
import ttnn
device = ttnn.open_device(device_id=0, trace_region_size=1_000_000)
ttnn.close_device(device)
' >/dev/null 2>&1 || give_up "ttnn is installed but a mock device does not open"

say "ttnn 0.81.1 mock ready in $VENV"
echo "export TRACE_LINT_TTNN_PYTHON=$VPY"
echo "export TT_METAL_MOCK_CLUSTER_DESC_PATH=$CLUSTER"
