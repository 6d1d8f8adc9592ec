import ttnn


class Attention:
    def __init__(self, device, wq, wk, wv, wo):
        self.device = device
        self.wq, self.wk, self.wv, self.wo = wq, wk, wv, wo
        self.mask = None
        self.calls = 0

    def __call__(self, x):
        q = ttnn.matmul(x, self.wq)
        k = ttnn.matmul(x, self.wk)
        v = ttnn.matmul(x, self.wv)
        if self.mask is None:
            # First use: runs during the warm-up, skipped at capture.
            self.mask = ttnn.ones_like(q)
        scores = ttnn.matmul(q, ttnn.transpose(k, -2, -1))
        probs = ttnn.softmax(ttnn.multiply(scores, self.mask), dim=-1)
        self.calls += 1
        return ttnn.matmul(ttnn.matmul(probs, v), self.wo)


class MLP:
    def __init__(self, w1, w2):
        self.w1, self.w2 = w1, w2

    def __call__(self, x):
        hidden = ttnn.gelu(ttnn.matmul(x, self.w1))
        if ttnn.max(hidden) > 100.0:
            hidden = ttnn.clamp(hidden, -100.0, 100.0)
        return ttnn.matmul(hidden, self.w2)


class DecoderLayer:
    def __init__(self, device, weights):
        self.attention = Attention(device, *weights["attention"])
        self.mlp = MLP(*weights["mlp"])

    def forward(self, x):
        h = ttnn.add(x, self.attention(x))
        return ttnn.add(h, self.mlp(h))
