import ttnn

from .model import Decoder


class Generator:
    def __init__(self, weights, n_layers=2):
        self.device = ttnn.open_device(device_id=0)
        self.model = Decoder(self.device, weights, n_layers)
        self.trace_id = None

    def capture(self, tokens):
        self.input = ttnn.from_torch(tokens, device=self.device, layout=ttnn.TILE_LAYOUT)
        self.trace_id = ttnn.begin_trace_capture(self.device, cq_id=0)
        self.output = self.model.forward(self.input)
        ttnn.end_trace_capture(self.device, self.trace_id, cq_id=0)

    def generate(self, prompt, steps):
        tokens = ttnn.from_torch(prompt, device=self.device)
        self.model.forward(tokens)
        tid = ttnn.begin_trace_capture(self.device, cq_id=0)
        try:
            logits = self.model.forward(tokens)
        finally:
            ttnn.end_trace_capture(self.device, tid, cq_id=0)
        outputs = []
        for _ in range(steps):
            ttnn.execute_trace(self.device, tid, cq_id=0, blocking=True)
            outputs.append(ttnn.to_torch(logits))
            tokens = ttnn.from_torch(outputs[-1].argmax(-1), device=self.device)
        ttnn.release_trace(self.device, tid)
        return outputs
