#!/usr/bin/env bash
# Make a Python 3.12 venv with ttnn==0.81.1, pytest and this project, able to open a ttnn mock
# device on a CPU-only machine, for the runtime-guard tests. Uses only files in this repository
# (scripts/ttnn_mock/) plus PyPI and, once, Debian's binutils-riscv64-unknown-elf.
#
# Usage:  eval "$(scripts/setup_ttnn_mock.sh /path/to/venv)"
# Python: $PYTHON312 if set, else python3.12 on PATH.
# Prints `export TRACE_LINT_TTNN_PYTHON=...` and `export TT_METAL_MOCK_CLUSTER_DESC_PATH=...` on
# stdout (everything else goes to stderr). When ttnn cannot be installed it says why on stderr,
# prints nothing to export and exits 0, so the ttnn tests skip instead of failing.
#
# Why a stand-in compiler: the mock device still builds firmware and kernels with the SFPI
# RISC-V compiler, which the ttnn wheel does not ship. scripts/ttnn_mock/riscv-tt-elf-g++ answers
# for it (empty objects, the wheel's pre-compiled firmware, a tiny linked kernel stub); no device
# code runs, so values read back are zeros.
set -uo pipefail

VENV=${1:?usage: setup_ttnn_mock.sh VENV_DIR}
say() { echo "setup_ttnn_mock: $*" >&2; }
give_up() { say "$*; the ttnn runtime-guard tests will be skipped"; exit 0; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOCK="$ROOT/scripts/ttnn_mock"
for f in riscv-tt-elf-g++ kernel.S blackhole_p150_mock.yaml; do
  [ -f "$MOCK/$f" ] || give_up "missing $MOCK/$f"
done

PY312=${PYTHON312:-$(command -v python3.12 2>/dev/null)}
[ -n "$PY312" ] && [ -x "$PY312" ] || give_up "no Python 3.12 (set PYTHON312 or put python3.12 on PATH)"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY312" -m venv "$VENV" >&2 || give_up "could not create a venv at $VENV with $PY312"
fi
VPY="$VENV/bin/python"
if ! "$VPY" -c 'import importlib.metadata as m; assert m.version("ttnn") == "0.81.1"' 2>/dev/null; then
  "$VPY" -m pip install -q "ttnn==0.81.1" >&2 || give_up "pip could not install ttnn==0.81.1"
fi
"$VPY" -m pip install -q pytest >&2 || give_up "pip could not install pytest"
"$VPY" -m pip install -q -e "$ROOT" >&2 || give_up "pip could not install the project from $ROOT"

# GNU binutils for RISC-V assemble and link the kernel stub.
if ! command -v riscv64-unknown-elf-ld >/dev/null; then
  say "installing binutils-riscv64-unknown-elf (apt)"
  { apt-get update -qq && apt-get install -y -qq binutils-riscv64-unknown-elf; } >&2 ||
    give_up "could not install binutils-riscv64-unknown-elf"
fi

# Put the stand-in where ttnn looks for the SFPI compiler, inside this venv only.
PKG=$("$VPY" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("ttnn").origin))') ||
  give_up "ttnn is installed but its package folder was not found"
BIN="$PKG/runtime/sfpi/compiler/bin"
mkdir -p "$BIN" || give_up "cannot create $BIN"
cp "$MOCK/riscv-tt-elf-g++" "$MOCK/kernel.S" "$BIN/" && chmod +x "$BIN/riscv-tt-elf-g++" ||
  give_up "cannot copy the compiler stand-in into $BIN"
echo "$PKG/tt_metal/pre-compiled" > "$BIN/precompiled-dir"
riscv64-unknown-elf-as -march=rv32im -mabi=ilp32 -o "$BIN/kernel.o" "$BIN/kernel.S" >&2 ||
  give_up "riscv64-unknown-elf-as could not assemble the kernel stub"
CLUSTER="$MOCK/blackhole_p150_mock.yaml"

# Prove a mock device opens before telling the tests to use it.
TT_METAL_MOCK_CLUSTER_DESC_PATH=$CLUSTER "$VPY" -c '
import ttnn
device = ttnn.open_device(device_id=0, trace_region_size=1_000_000)
ttnn.close_device(device)
' >/dev/null 2>&1 || give_up "ttnn is installed but a mock device does not open"

say "ttnn 0.81.1 mock ready in $VENV"
echo "export TRACE_LINT_TTNN_PYTHON=$VPY"
echo "export TT_METAL_MOCK_CLUSTER_DESC_PATH=$CLUSTER"
