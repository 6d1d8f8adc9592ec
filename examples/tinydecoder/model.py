import ttnn

from .layers import DecoderLayer


class Decoder:
    def __init__(self, device, weights, n_layers):
        self.device = device
        self.layers = [DecoderLayer(device, weights[i]) for i in range(n_layers)]
        self.norm = NormHead(device, weights["head"])

    def forward(self, x):
        for layer in self.layers:
            x = layer.forward(x)
        return self.norm.forward(x)


class NormHead:
    def __init__(self, device, head_weight):
        self.device = device
        self.head_weight = head_weight

    def forward(self, x):
        logits = ttnn.matmul(ttnn.rms_norm(x), self.head_weight)
        top = ttnn.to_torch(logits).argmax(-1)
        print(f"next token: {top}")
        return logits
