"""Generate a trace-dense tree: every module captures (ttnn or CUDA graph) and calls callees
in other modules, so nearly every file is parsed. Deterministic for a given size."""

from __future__ import annotations

import sys
from pathlib import Path

MODEL = '''import ttnn

from .layers_{n} import Block{n}, helper_{n}


class Model{n}:
    def __init__(self, device):
        self.block = Block{n}(device)
        self.scale = 2

    def forward(self, x):
        y = self.block(x)
        y = helper_{n}(y, self.scale)
        return ttnn.relu(y)


def capture_{n}(device, x):
    model = Model{n}(device)
    model.forward(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    try:
        out = model.forward(x)
    finally:
        ttnn.end_trace_capture(device, tid, cq_id=0)
    return tid, out
'''

LAYERS = '''import ttnn
import torch


class Block{n}:
    def __init__(self, device):
        self.device = device
        self.weight = ttnn.ones([32, 32], device=device)

    def __call__(self, x):
        y = ttnn.matmul(x, self.weight)
        if {bad}:
            host = ttnn.to_torch(y)
            print(host.sum())
        for i in range(4):
            y = ttnn.add(y, y)
        return y


def helper_{n}(x, scale):
    total = 0
    for i in range(scale):
        total += i
    return ttnn.multiply(x, total)


def graphed_{n}(model, static_x):
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = model(static_x)
    return g, static_y
'''


def generate(root: Path, count: int) -> Path:
    package = root / "dense"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("[tool.trace-lint]\n")
    for n in range(count):
        (package / f"model_{n}.py").write_text(MODEL.format(n=n))
        (package / f"layers_{n}.py").write_text(LAYERS.format(n=n, bad="x.shape[0] > 1" if n % 3 else "ttnn.to_torch(x).sum() > 0"))
    return root


if __name__ == "__main__":
    generate(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
