"""The basic layers. Linear follows the source notes' convention Y = X.A + b.

    Linear      weight (in_features, out_features), y = x @ W + b
    Embedding   weight (num_embeddings, dim),       y = W[ids]
    LayerNorm   weight, bias (dim,),                y = norm(x) * weight + bias
    Dropout     a seeded mask, identity in eval()
"""
from minimegatron.autodiff import functional as F
from minimegatron.backend import host_rng, xp
from minimegatron.autodiff.guards import check_ids
from minimegatron.nn.init import linear_init
from minimegatron.nn.module import Module, Parameter
from minimegatron.autodiff.ops import embedding
from minimegatron.autodiff.tensor import unwrap


class Linear(Module):
    """y = x @ W + b, W of shape (in_features, out_features)."""

    def __init__(self, in_features, out_features, bias=True, seed=0, dtype="float64"):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        weight, b = linear_init(in_features, out_features, seed, dtype)
        self.weight = Parameter(weight)
        self.bias = Parameter(b) if bias else None

    def forward(self, x):
        y = x @ self.weight                      # (..., in) @ (in, out) -> (..., out)
        return y + self.bias if self.bias is not None else y


class Embedding(Module):
    """y = W[ids], W of shape (num_embeddings, embedding_dim); ids outside [0, V): ValueError."""

    def __init__(self, num_embeddings, embedding_dim, dtype="float64"):
        super().__init__()
        self.weight = Parameter(xp.zeros((num_embeddings, embedding_dim), dtype=dtype))

    def forward(self, ids):
        ids = unwrap(ids)
        check_ids(ids, self.weight.shape[0])     # no IndexError, no wrap-around of -1
        return embedding(self.weight, ids)       # (B, T) -> (B, T, dim)


class LayerNorm(Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last axis."""

    def __init__(self, dim, eps=1e-5, dtype="float64"):
        super().__init__()
        self.eps = eps
        self.weight = Parameter(xp.ones((dim,), dtype=dtype))
        self.bias = Parameter(xp.zeros((dim,), dtype=dtype))

    def forward(self, x):
        return F.layer_norm(x, self.weight, self.bias, self.eps)


class Dropout(Module):
    """Zero with probability p, scale by 1/(1-p); its own seeded mask stream."""

    def __init__(self, p=0.0, seed=0, name="dropout"):
        super().__init__()
        self.p = p
        self.rng = host_rng(seed, name)

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.rng)
