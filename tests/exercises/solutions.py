"""Students' files for the exercise tests: correct ones, and the usual wrong answers (mutants).

Each is the text of a file a student could hand in; the tests write it to tmp_path or give it
to the grader as text. The mutants each make one of the usual mistakes."""

SOFTMAX = '''
import math


def softmax_forward(x, out, O, R, I):
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            m = -math.inf
            for r in range(R):
                m = max(m, x[base + r * I])
            if m == -math.inf:
                for r in range(R):
                    out[base + r * I] = 0.0
                continue
            s = 0.0
            for r in range(R):
                s += math.exp(x[base + r * I] - m)
            for r in range(R):
                out[base + r * I] = math.exp(x[base + r * I] - m) / s


def softmax_backward(g, y, out, O, R, I):
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            s = 0.0
            for r in range(R):
                s += g[base + r * I] * y[base + r * I]
            for r in range(R):
                out[base + r * I] = y[base + r * I] * (g[base + r * I] - s)
'''

# exp() of the raw inputs: right for small logits, overflows for large ones
SOFTMAX_OVERFLOWS = '''
import math


def softmax_forward(x, out, O, R, I):
    for o in range(O):
        for i in range(I):
            base = o * R * I + i
            s = 0.0
            for r in range(R):
                s += math.exp(x[base + r * I])
            for r in range(R):
                out[base + r * I] = math.exp(x[base + r * I]) / s


''' + SOFTMAX[SOFTMAX.index("def softmax_backward"):]

SUM_TO = '''
def sum_to(g, shape):
    lead = g.ndim - len(shape)
    for _ in range(lead):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g.reshape(shape)
'''

# the broadcast gradient handed back as it is
SUM_TO_NOT_SUMMED = '''
def sum_to(g, shape):
    return g
'''

SDPA = '''
import math

import tinyattn as ta


def scaled_dot_product_attention(query, key, value, attn_mask=None, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = query @ key.transpose(-2, -1) * scale
    if attn_mask is not None:
        if attn_mask.dtype == ta.bool:
            attn_mask = ta.where(attn_mask, 0.0, float("-inf"))
        scores = scores + attn_mask
    weights = ta.softmax(scores, -1)
    return weights @ value, weights
'''

SDPA_FLIPPED_MASK = SDPA.replace('ta.where(attn_mask, 0.0, float("-inf"))',
                                 'ta.where(attn_mask, float("-inf"), 0.0)')
SDPA_NO_SCALE = SDPA.replace("scale = 1.0 / math.sqrt(query.shape[-1])", "scale = 1.0")

POSITIONAL = '''
import math

import tinyattn as ta


def sinusoidal_table(max_len, d_model):
    rows = []
    for pos in range(max_len):
        row = []
        for j in range(d_model):
            angle = pos / 10000 ** (2 * (j // 2) / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        rows.append(row)
    if not rows:
        return ta.zeros(0, d_model, dtype=ta.float64)
    return ta.tensor(rows, dtype=ta.float64)
'''

LAYER_NORM = '''
def layer_norm_backward(g, x, weight, mean, rstd):
    xhat = (x - mean) * rstd
    gy = g if weight is None else g * weight
    dx = rstd * (gy - gy.mean(-1, keepdim=True) - xhat * (gy * xhat).mean(-1, keepdim=True))
    return dx, (g * xhat).sum(0), g.sum(0)
'''

# dx as if the mean and the variance were constants
LAYER_NORM_NO_MEAN_TERMS = LAYER_NORM.replace(
    "dx = rstd * (gy - gy.mean(-1, keepdim=True) - xhat * (gy * xhat).mean(-1, keepdim=True))",
    "dx = rstd * gy")

KV_CACHE = '''
import math

import tinyattn as ta


def decode_step(x, W_q, W_k, W_v, cache):
    q, k, v = x @ W_q, x @ W_k, x @ W_v
    for name, new in (("k", k), ("v", v)):
        cache[name] = new if cache.get(name) is None else ta.cat([cache[name], new], 1)
    w = ta.softmax(q @ cache["k"].transpose(-2, -1) / math.sqrt(q.shape[-1]), -1)
    return w @ cache["v"]
'''

# appends the new key and value once before attending and once more after
KV_CACHE_REAPPENDS = KV_CACHE.replace(
    '    return w @ cache["v"]',
    '    out = w @ cache["v"]\n'
    '    cache["k"], cache["v"] = ta.cat([cache["k"], k], 1), ta.cat([cache["v"], v], 1)\n'
    '    return out')
