"""Generate a tree shaped like a real TT-NN model repository (see the shapes in the module
texts below): thousands of files under `models/`, namespace packages (most folders without
`__init__.py`), the same file names in every model (model.py, generator.py, utils.py,
common.py), a base module class whose `__call__` returns `self.forward(...)`, generators
with prefill and decode traces, 2-command-queue runners with the host transfers and events
outside the region, tests that capture ops, absolute `from models.x.y.tt.model import Model`
imports, one 2,000-line model file (for the language server) and one 50,000-line test file
with about 4,500 small captures. Deterministic for given sizes.

    python bench/gen_model_repo.py OUT [--models 90] [--dense-captures 4546]
"""

from __future__ import annotations

import argparse
from pathlib import Path

# The package every model imports from: the base class and shared helpers.
LIGHTWEIGHT = '''import ttnn


class LightweightModule:
    """Calls forward: every TT-NN module of the repository derives from this."""

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)
'''

COMMON_UTILS = '''import ttnn
import torch


def copy_host_to_device(host_tensors, device_tensors=None, mesh_device=None):
    if device_tensors is None:
        return [ttnn.to_device(t, mesh_device) if t is not None else None for t in host_tensors]
    for host, dev in zip(host_tensors, device_tensors):
        if host is not None:
            ttnn.copy_host_to_device_tensor(host, dev)
    return device_tensors


def nearest_32(x):
    return ((x + 31) // 32) * 32


def pad_to(tensor, length):
    return torch.nn.functional.pad(tensor, (0, length - tensor.shape[-1]))
'''

ATTENTION = '''import ttnn

from models.common.lightweightmodule import LightweightModule
from models.{family}.{name}.tt.common import head_dim{n}


class Attention(LightweightModule):
    def __init__(self, mesh_device, args, weights, layer):
        self.mesh_device = mesh_device
        self.args = args
        self.layer = layer
        self.wqkv = weights["wqkv"]
        self.wo = weights["wo"]
        self.n_heads = args.n_heads

    def forward_decode(self, x, current_pos, rot_mats=None, page_table=None):
        qkv = ttnn.linear(x, self.wqkv, memory_config=ttnn.L1_MEMORY_CONFIG)
        q, k, v = ttnn.experimental.nlp_create_qkv_heads_decode(qkv, num_heads=self.n_heads)
        ttnn.deallocate(qkv)
        attn = ttnn.transformer.scaled_dot_product_attention_decode(q, k, v, cur_pos_tensor=current_pos)
        out = ttnn.experimental.nlp_concat_heads_decode(attn, num_heads=self.n_heads)
        return ttnn.linear(out, self.wo)

    def forward_prefill(self, x, rot_mats=None, page_table=None):
        qkv = ttnn.linear(x, self.wqkv)
        q, k, v = ttnn.experimental.nlp_create_qkv_heads(qkv, num_heads=self.n_heads)
        attn = ttnn.transformer.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / head_dim{n}(self.args))
        return ttnn.linear(ttnn.experimental.nlp_concat_heads(attn), self.wo)

    def forward(self, x, current_pos=None, rot_mats=None, mode="decode", page_table=None):
        if mode == "prefill":
            return self.forward_prefill(x, rot_mats, page_table)
        return self.forward_decode(x, current_pos, rot_mats, page_table)
'''

MLP = '''import ttnn

from models.common.lightweightmodule import LightweightModule


class MLP(LightweightModule):
    def __init__(self, mesh_device, args, weights):
        self.w1 = weights["w1"]
        self.w2 = weights["w2"]
        self.w3 = weights["w3"]
        self.args = args

    def forward(self, x, mode="decode"):
        w1_out = ttnn.linear(x, self.w1, activation="silu")
        w3_out = ttnn.linear(x, self.w3)
        ttnn.deallocate(x) if mode == "prefill" else None
        hidden = ttnn.mul(w1_out, w3_out)
        ttnn.deallocate(w1_out)
        ttnn.deallocate(w3_out)
        return ttnn.linear(hidden, self.w2)
'''

COMMON = '''import math

import ttnn


def head_dim{n}(args):
    return args.dim // args.n_heads


def num_to_core_range_set(x):
    return ttnn.CoreRangeSet([ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(x % 8, x // 8))])


def get_padded_prefill_len(seq_len):
    if seq_len <= 128:
        return 128
    return 2 ** math.ceil(math.log2(seq_len))
'''

UTILS = '''import torch


def load_checkpoint(path):
    return torch.load(path, map_location="cpu")


def compare(a, b, pcc=0.99):
    a = a.flatten().float()
    b = b.flatten().float()
    return torch.corrcoef(torch.stack([a, b]))[0, 1].item() >= pcc
'''

MODEL = '''import ttnn

from models.common.lightweightmodule import LightweightModule
from models.{family}.{name}.tt.attention import Attention
from models.{family}.{name}.tt.mlp import MLP
from models.{family}.{name}.tt.common import get_padded_prefill_len


class TransformerBlock(LightweightModule):
    def __init__(self, mesh_device, args, weights, layer):
        self.attention = Attention(mesh_device, args, weights, layer)
        self.feed_forward = MLP(mesh_device, args, weights)
        self.args = args

    def forward(self, x, current_pos=None, rot_mats=None, mode="decode", page_table=None):
        h = ttnn.rms_norm(x, epsilon=1e-5)
        attn = self.attention(h, current_pos, rot_mats, mode, page_table)
        h = ttnn.add(x, attn)
        out = ttnn.add(h, self.feed_forward(ttnn.rms_norm(h, epsilon=1e-5), mode))
        return out


class Model(LightweightModule):
    def __init__(self, mesh_device, args, weights):
        self.mesh_device = mesh_device
        self.args = args
        self.layers = [TransformerBlock(mesh_device, args, weights, i) for i in range(args.n_layers)]
        self.debug = False

    def prepare_decode_inputs_host(self, tokens, current_pos, page_table=None):
        tokens = ttnn.from_torch(tokens, dtype=ttnn.uint32)
        current_pos = ttnn.from_torch(current_pos, dtype=ttnn.int32)
        return tokens, current_pos, page_table

    def ttnn_decode_forward(self, tokens, current_pos, rot_mats=None, page_table=None):
        x = ttnn.embedding(tokens, self.args.embedding)
        for layer in self.layers:
            x = layer(x, current_pos, rot_mats, "decode", page_table)
        {decode_hazard}
        return ttnn.linear(ttnn.rms_norm(x, epsilon=1e-5), self.args.output_weight)

    def ttnn_prefill_forward(self, x, rot_mats=None, page_table=None):
        for layer in self.layers:
            x = layer(x, None, rot_mats, "prefill", page_table)
        return x

    def forward(self, x, current_pos=None, mode="decode", page_table=None):
        if mode == "prefill":
            return self.ttnn_prefill_forward(x, page_table=page_table)
        return self.ttnn_decode_forward(x, current_pos, page_table=page_table)
'''

# A hazard in a callee, where real repositories have theirs: only some models have one.
HAZARDS = [
    "",
    "if self.debug:\n            print(ttnn.to_torch(x).abs().max())",
    "",
    "ttnn.synchronize_device(self.mesh_device) if self.debug else None",
    "",
]

FILLER_METHOD = '''
    def helper_{i}(self, x):
        """Configuration helper {i}."""
        scale = {i} % 7 + 1
        if scale > 3:
            x = ttnn.multiply(x, scale)
        else:
            x = ttnn.add(x, scale)
        return x
'''

GENERATOR = '''import torch
import ttnn

from models.common.utils import copy_host_to_device
from models.{family}.{name}.tt.common import get_padded_prefill_len


class Generator:
    def __init__(self, model, mesh_device, tokenizer=None):
        self.model = model
        self.mesh_device = mesh_device
        self.tokenizer = tokenizer
        self.trace_id = None
        self.trace_prefill = {{}}

    def _capture_decode_trace(self, tokens, current_pos, page_table=None):
        host_inputs = self.model.prepare_decode_inputs_host(tokens, current_pos, page_table)
        device_inputs = copy_host_to_device(host_inputs, mesh_device=self.mesh_device)
        # Compile run, then the capture with the same call.
        self.model.ttnn_decode_forward(*device_inputs)
        trace_id = ttnn.begin_trace_capture(self.mesh_device, cq_id=0)
        tt_out = self.model.ttnn_decode_forward(*device_inputs)
        ttnn.end_trace_capture(self.mesh_device, trace_id, cq_id=0)
        return trace_id, tt_out, device_inputs

    def decode_forward(self, tokens, current_pos, page_table=None):
        if self.trace_id is None:
            self.trace_id, self.trace_out, self.trace_inputs = self._capture_decode_trace(tokens, current_pos, page_table)
        host_inputs = self.model.prepare_decode_inputs_host(tokens, current_pos, page_table)
        copy_host_to_device(host_inputs, device_tensors=self.trace_inputs)
        ttnn.execute_trace(self.mesh_device, self.trace_id, cq_id=0, blocking=False)
        return ttnn.to_torch(self.trace_out)

    def _capture_prefill_trace(self, x, seq_len, page_table=None):
        self.model.ttnn_prefill_forward(x, page_table=page_table)
        trace_id = ttnn.begin_trace_capture(self.mesh_device, cq_id=0)
        out = self.model.ttnn_prefill_forward(x, page_table=page_table)
        ttnn.end_trace_capture(self.mesh_device, trace_id, cq_id=0)
        return trace_id, out

    def prefill_forward(self, tokens, page_table=None):
        seq_len = get_padded_prefill_len(tokens.shape[-1])
        if seq_len not in self.trace_prefill:
            x = ttnn.from_torch(tokens, device=self.mesh_device)
            self.trace_prefill[seq_len] = self._capture_prefill_trace(x, seq_len, page_table) + (x,)
        trace_id, out, x = self.trace_prefill[seq_len]
        ttnn.copy_host_to_device_tensor(ttnn.from_torch(tokens), x)
        ttnn.execute_trace(self.mesh_device, trace_id, cq_id=0, blocking=True)
        return torch.argmax(ttnn.to_torch(out), dim=-1)
'''

RUNNER = '''import ttnn

from models.{family}.{name}.tt.model import Model


class PerformantRunner:
    """Two command queues: writes on queue 1, the trace on queue 0, events between them."""

    def __init__(self, device, args, weights):
        self.device = device
        self.model = Model(device, args, weights)

    def _warm_up(self, host_input):
        self.input_tensor = ttnn.allocate_tensor_on_device(host_input.spec, self.device)
        self.op_event = ttnn.record_event(self.device, 0)
        ttnn.wait_for_event(1, self.op_event)
        ttnn.copy_host_to_device_tensor(host_input, self.input_tensor, cq_id=1)
        self.write_event = ttnn.record_event(self.device, 1)
        ttnn.wait_for_event(0, self.write_event)
        self.model(self.input_tensor)

    def capture(self, host_input):
        self._warm_up(host_input)
        self.op_event = ttnn.record_event(self.device, 0)
        ttnn.wait_for_event(1, self.op_event)
        ttnn.copy_host_to_device_tensor(host_input, self.input_tensor, cq_id=1)
        self.write_event = ttnn.record_event(self.device, 1)
        ttnn.wait_for_event(0, self.write_event)
        self.tid = ttnn.begin_trace_capture(self.device, cq_id=0)
        self.output = self.model(self.input_tensor)
        ttnn.end_trace_capture(self.device, self.tid, cq_id=0)
        ttnn.synchronize_device(self.device)

    def execute(self, host_input):
        ttnn.wait_for_event(1, self.op_event)
        ttnn.copy_host_to_device_tensor(host_input, self.input_tensor, cq_id=1)
        self.write_event = ttnn.record_event(self.device, 1)
        ttnn.wait_for_event(0, self.write_event)
        ttnn.execute_trace(self.device, self.tid, cq_id=0, blocking=False)
        self.op_event = ttnn.record_event(self.device, 0)
        return self.output

    def release(self):
        ttnn.release_trace(self.device, self.tid)
'''

TEST_MODEL = '''import pytest
import torch
import ttnn

from models.{family}.{name}.tt.model import Model
from models.{family}.{name}.tt.generator import Generator
from models.{family}.{name}.reference.model import ReferenceModel
from models.common.utils import nearest_32


@pytest.mark.parametrize("batch", [1, 32])
def test_decode_trace(device, batch, args, weights):
    model = Model(device, args, weights)
    generator = Generator(model, device)
    tokens = torch.zeros(batch, 1, dtype=torch.int64)
    out = generator.decode_forward(tokens, torch.zeros(batch, dtype=torch.int32))
    assert out.shape[0] == batch


def test_ops_in_a_trace(device):
    x = ttnn.from_torch(torch.rand(1, 1, 32, nearest_32(30)), device=device, layout=ttnn.TILE_LAYOUT)
    ttnn.relu(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    y = ttnn.relu(x)
    y = ttnn.add(y, x)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
    ttnn.release_trace(device, tid)
    assert torch.allclose(ttnn.to_torch(y), torch.relu(torch.rand(1)) * 0 + ttnn.to_torch(y))


def test_matches_reference(device, args, weights):
    reference = ReferenceModel(args)
    model = Model(device, args, weights)
    x = torch.rand(1, 32, args.dim)
    expected = reference(x)
    got = ttnn.to_torch(model(ttnn.from_torch(x, device=device), mode="prefill"))
    assert torch.allclose(expected, got, atol=1e-2)
'''

REFERENCE = '''import torch


class ReferenceModel(torch.nn.Module):
    def __init__(self, args):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(args.dim, args.dim) for _ in range(args.n_layers))

    def forward(self, x):
        for layer in self.layers:
            x = torch.nn.functional.silu(layer(x))
        return x
'''

MODEL_CONFIG = '''import os

import ttnn


class ModelArgs:
    def __init__(self, mesh_device, max_batch_size=32, max_seq_len=4096):
        self.mesh_device = mesh_device
        self.max_batch_size = max_batch_size
        self.max_seq_len = max_seq_len
        self.dim = 4096
        self.n_heads = 32
        self.n_layers = int(os.environ.get("N_LAYERS", "{layers}"))
        self.model_config = {{}}
{settings}
'''

DEMO = '''import torch

from models.{family}.{name}.tt.generator import Generator
from models.{family}.{name}.tt.model import Model
from models.{family}.{name}.tt.model_config import ModelArgs


def run_demo(mesh_device, prompts, max_new_tokens=128):
    args = ModelArgs(mesh_device)
    model = Model(mesh_device, args, weights={{}})
    generator = Generator(model, mesh_device)
    tokens = torch.tensor([[1] * 32])
    logits = generator.prefill_forward(tokens)
    out = []
    for step in range(max_new_tokens):
        token = generator.decode_forward(logits, torch.tensor([step]))
        out.append(token)
    return out
'''

# Files of a model that hold no capture code at all (most of a real repository).
PLAIN = '''

def {fn}_{k}(x, y=None):
    """Plain helper {k}: data preparation, no device code."""
    if y is None:
        y = torch.zeros_like(x)
    total = 0
    for i in range(x.shape[0]):
        total += int(x[i].sum()) + {k}
    return x + y * total
'''

DENSE_CAPTURE = '''

def test_capture_{i}(device):
    x = ttnn.ones([32, 32], device=device)
    y = ttnn.relu(x)
    tid = ttnn.begin_trace_capture(device, cq_id=0)
    y = ttnn.add(x, y)
    y = ttnn.relu(y)
    ttnn.end_trace_capture(device, tid, cq_id=0)
    ttnn.execute_trace(device, tid, cq_id=0, blocking=True)
    ttnn.release_trace(device, tid)
'''

FAMILIES = ("demos", "experimental", "tt_transformers")
# Big file of the dense tree that the language server benchmark edits (lines).
LSP_FILE_LINES = 2000
DENSE_FILE = "models/demos/op_captures/tests/test_dense_captures.py"
# The base class every model imports.
BASE_FILE = "models/common/lightweightmodule.py"
# A generator (captures in a method returning the trace id); every model has one like it.
GENERATOR_FILE = "models/demos/model_0/tt/generator.py"
PLAIN_FILES_PER_MODEL = 18


def model_dir(index: int) -> tuple[str, str]:
    return FAMILIES[index % len(FAMILIES)], f"model_{index}"


def lsp_file(root: Path) -> Path:
    family, name = model_dir(0)
    return root / "models" / family / name / "tt" / "model.py"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _settings(count: int) -> str:
    return "".join(f"        self.model_config[\"OP_{k}\"] = ttnn.L1_MEMORY_CONFIG if {k} % 2 else ttnn.DRAM_MEMORY_CONFIG\n" for k in range(count))


def generate(root: Path, models: int = 90, dense_captures: int = 4546) -> Path:
    """The tree under `root` (created): `models` model folders of about 30 files each."""
    base = root / "models"
    _write(root / "pyproject.toml", "[tool.trace-lint]\n")
    _write(root / BASE_FILE, LIGHTWEIGHT)
    _write(base / "common" / "utils.py", COMMON_UTILS)
    for index in range(models):
        family, name = model_dir(index)
        folder = base / family / name
        fields = {"family": family, "name": name, "n": index}
        hazard = HAZARDS[index % len(HAZARDS)]
        model = MODEL.format(**fields, decode_hazard=hazard or "pass")
        if index == 0:  # the editor's file: padded to LSP_FILE_LINES lines with helpers
            lines = model.count("\n")
            helpers = []
            i = 0
            while lines < LSP_FILE_LINES:
                text = FILLER_METHOD.format(i=i)
                helpers.append(text)
                lines += text.count("\n")
                i += 1
            model += "\n\nclass ModelHelpers(LightweightModule):\n    def forward(self, x):\n        return x\n" + "".join(helpers)
        _write(folder / "tt" / "model.py", model)
        _write(folder / "tt" / "attention.py", ATTENTION.format(**fields))
        _write(folder / "tt" / "mlp.py", MLP.format(**fields))
        _write(folder / "tt" / "common.py", COMMON.format(**fields))
        _write(folder / "tt" / "generator.py", GENERATOR.format(**fields))
        _write(folder / "tt" / "model_config.py", MODEL_CONFIG.format(layers=index % 80 + 1, settings=_settings(60 + index % 40)))
        _write(folder / "tt" / "utils.py", UTILS)
        _write(folder / "reference" / "model.py", REFERENCE)
        _write(folder / "reference" / "common.py", UTILS)
        _write(folder / "demo" / "demo.py", DEMO.format(**fields))
        _write(folder / "tests" / "test_model.py", TEST_MODEL.format(**fields))
        if index % 2 == 0:
            _write(folder / "runner" / "performant_runner.py", RUNNER.format(**fields))
        if index % 10 == 0:  # a few real packages among the namespace ones
            _write(folder / "__init__.py", "")
            _write(folder / "tt" / "__init__.py", "")
        for k in range(PLAIN_FILES_PER_MODEL):
            sub = ("scripts", "data", "tools")[k % 3]
            _write(folder / sub / f"{('utils', 'common', 'prep', 'loader', 'metrics', 'plot')[k % 6]}_{k}.py", "import torch\n" + "".join(PLAIN.format(fn=f"step{j}", k=k) for j in range(24)))
    dense = "import ttnn\n" + "".join(DENSE_CAPTURE.format(i=i) for i in range(dense_captures))
    _write(root / DENSE_FILE, dense)
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--models", type=int, default=90)
    parser.add_argument("--dense-captures", type=int, default=4546)
    args = parser.parse_args()
    generate(args.out, args.models, args.dense_captures)
    files = list(args.out.rglob("*.py"))
    print(f"{len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB")
