"""Self-attention by hand: "I am hungry", every number printed, then the layer and its gradients.

    python demos/attention_by_hand.py           # prints everything, in a second
    python demos/attention_by_hand.py --quick   # the same (it is already quick)

Three tokens with made-up 4-dimensional embeddings, and made-up weights of 0s and 1s, so that a
reader can redo every step with pencil and paper (Vaswani et al., 2017; the layer is
nn.SelfAttention, tokens as rows):

    Q = X W_Q,  K = X W_K,  V = X W_V           X (3, 4), W_Q, W_K, W_V (4, 4)
    S = Q K^T                                   (3, 3): S[i, j] = q_i . k_j
    A = softmax(S / sqrt(d_k))                  row i: how much token i attends to each token
    H = A V                                     (3, 4): row i is a weighted mean of the values

With d_k = 4 the scaling divides by 2, so the scaled scores are halves. Row i of A sums to 1.
Then a causal mask (a decoder's view: token i sees only tokens j <= i), and a check that
nn.SelfAttention loaded with the same weights gives the same output, and that its gradients agree
with finite differences (tinyattn.testing.gradcheck, in float64; --seed picks gradcheck's random
output weighting).

Writes runs/attention_by_hand/: weights.svg and causal_weights.svg (A as heatmaps), metrics.json.
"""
import math
import time

import common

import tinyattn as ta
from tinyattn import nn, viz

TOKENS = ["I", "am", "hungry"]
# made-up embeddings: one row per token
X = [[1, 0, 1, 0],   # I
     [0, 1, 0, 1],   # am
     [1, 1, 0, 1]]   # hungry
# made-up weights, (d_model, d_k) = (4, 4); x W picks and adds rows of W where x has a 1
W_Q = [[1, 0, 0, 1],
       [0, 1, 1, 0],
       [0, 0, 1, 0],
       [0, 0, 0, 1]]
W_K = [[1, 1, 0, 0],
       [0, 0, 1, 0],
       [1, 0, 0, 1],
       [0, 1, 0, 0]]
W_V = [[0, 1, 0, 1],
       [1, 0, 0, 0],
       [0, 1, 1, 0],
       [0, 0, 1, 1]]


def num(v):
    """A number as a reader writes it: 3, 1.5, 0.5741 (four decimals at most), -inf."""
    v = float(v)
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    text = f"{v:.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def show(title, matrix, rows, cols):
    """Print a matrix with its row and column names, e.g. show("Q = X W_Q", Q, TOKENS, dims)."""
    m = matrix.tolist() if hasattr(matrix, "tolist") else matrix
    cells = [[num(v) for v in row] for row in m]
    width = max(7, max(len(c) for row in cells for c in row) + 1, max(len(c) for c in cols) + 1)
    label = max(len(r) for r in rows) + 2
    print(f"\n{title}")
    print(" " * label + "".join(c.rjust(width) for c in cols))
    for r, row in zip(rows, cells):
        print(f"  {r.ljust(label - 2)}" + "".join(c.rjust(width) for c in row))


def vec(values):
    """'[1, 0.5, 2]'"""
    return "[" + ", ".join(num(v) for v in values) + "]"


def dot_expansion(a, b):
    """'2*2 + 1*1 + 1*0 + 1*1 = 6': one dot product written out."""
    terms = " + ".join(f"{num(x)}*{num(y)}" for x, y in zip(a, b))
    return f"{terms} = {num(sum(x * y for x, y in zip(a, b)))}"


def by_hand(x, w_q, w_k, w_v, causal=False):
    """The equations above, one tensor operation each; returns every intermediate."""
    q = x @ w_q                                                      # (T, d_k)
    k = x @ w_k                                                      # (T, d_k)
    v = x @ w_v                                                      # (T, d_v)
    scores = q @ k.transpose(0, 1)                                   # (T, T) q_i . k_j
    scaled = scores / math.sqrt(k.shape[-1])                         # (T, T)
    if causal:
        # key j > query i is the future: -inf there, which softmax turns into weight 0
        scaled = scaled + nn.causal_mask(x.shape[0], dtype=x.dtype)  # (T, T) 0 / -inf
    weights = scaled.softmax(-1)                                     # (T, T) rows sum to 1
    out = weights @ v                                                # (T, d_v)
    return {"Q": q, "K": k, "V": v, "S": scores, "scaled": scaled, "A": weights, "H": out}


def main(argv=None):
    parser = common.parser("attention_by_hand", __doc__)
    args = parser.parse_args(argv)
    out = common.output_dir(args, "attention_by_hand")
    start = time.perf_counter()
    f64 = ta.float64
    x = ta.tensor(X, dtype=f64)
    w_q, w_k, w_v = (ta.tensor(w, dtype=f64) for w in (W_Q, W_K, W_V))
    dims = [f"d{j}" for j in range(4)]
    T, names = len(TOKENS), TOKENS

    print('attention by hand: "I am hungry", three tokens with made-up embeddings')
    print("\n[1/6] the inputs")
    show("X (3 tokens x 4 dimensions): one embedding per row", x, names, dims)
    qd, kd, vd = ([f"{c}{j}" for j in range(4)] for c in "qkv")
    show("W_Q (rows: embedding dimensions, columns: query dimensions)", w_q, dims, qd)
    show("W_K", w_k, dims, kd)
    show("W_V", w_v, dims, vd)

    r = by_hand(x, w_q, w_k, w_v)
    q, k, v = r["Q"].tolist(), r["K"].tolist(), r["V"].tolist()
    print("\n[2/6] queries, keys and values: each token's embedding times each weight matrix")
    show("Q = X W_Q", r["Q"], names, qd)
    show("K = X W_K", r["K"], names, kd)
    show("V = X W_V", r["V"], names, vd)
    picked = " + ".join(dims[j] for j in range(4) if X[2][j] == 1)
    print(f"\n  e.g. q_hungry = x_hungry W_Q = the sum of the rows {picked} of W_Q "
          f"(where x_hungry has a 1) = {vec(q[2])}")

    print("\n[3/6] scores: every query against every key")
    show("S = Q K^T (row: query token, column: key token)", r["S"], names, names)
    print(f"\n  e.g. S[hungry, I] = q_hungry . k_I = {dot_expansion(q[2], k[0])}")

    print("\n[4/6] scaled scores: divided by sqrt(d_k) = sqrt(4) = 2, so that softmax is not "
          "too peaked when d_k is large")
    show("S / sqrt(d_k)", r["scaled"], names, names)

    print("\n[5/6] attention weights: softmax along each row")
    show("A = softmax(S / sqrt(d_k))", r["A"], names, names)
    row = r["scaled"].tolist()[2]
    exps = [math.exp(s) for s in row]
    powers = ", ".join(f"e^{num(s)}" for s in row)
    print(f"\n  e.g. row hungry: softmax({vec(row)})\n     = [{powers}] / (their sum)"
          f"\n     = {vec(exps)} / {num(sum(exps))}\n     = {vec(e / sum(exps) for e in exps)}")
    a = r["A"].tolist()
    top = max(range(T), key=lambda j: a[2][j])
    print(f"  'hungry' attends most to {names[top]!r} ({a[2][top]:.0%}); every row sums to 1")
    viz.print_heatmap(r["A"], x_labels=names, y_labels=names, title="A (rows: queries)")
    viz.heatmap(r["A"], x_labels=names, y_labels=names, title='attention weights, "I am hungry"',
                x_name="key (attended to)", y_name="query (attending)", fmt=".3f", cell=64,
                path=out / "weights.svg")

    print("\n[6/6] outputs: each row is a weighted mean of the value rows")
    show("H = A V", r["H"], names, vd)
    symbols = " + ".join(f"{num(a[2][j])} * v_{names[j]}" for j in range(T))
    numbers = " + ".join(f"{num(a[2][j])} * {vec(v[j])}" for j in range(T))
    print(f"\n  e.g. h_hungry = {symbols}\n              = {numbers}"
          f"\n              = {vec(r['H'].tolist()[2])}")
    print("  column v2 of V is 1 for every token, so it is 1 in every output: the weights of a row "
          "sum to 1")

    c = by_hand(x, w_q, w_k, w_v, causal=True)
    print("\nWith a causal mask (a decoder generating the sentence left to right): token i may "
          "only attend\nto tokens j <= i, so the scores above the diagonal become -inf and "
          "their weights 0")
    show("S / sqrt(d_k) + causal mask", c["scaled"], names, names)
    show("A = softmax(S / sqrt(d_k) + mask)", c["A"], names, names)
    show("H = A V (masked)", c["H"], names, vd)
    print("  'I' can only look at itself, so h_I = v_I; the last row is unchanged")
    viz.heatmap(c["A"], x_labels=names, y_labels=names,
                title='causal attention weights, "I am hungry"', x_name="key (attended to)",
                y_name="query (attending)", fmt=".3f", cell=64, path=out / "causal_weights.svg")

    print("\nThe layer: nn.SelfAttention(4) with W_Q, W_K, W_V loaded from the made-up weights")
    layer = nn.SelfAttention(4, dtype=f64)
    layer.load_state_dict({"W_Q": w_q, "W_K": w_k, "W_V": w_v})
    h, weights = layer(x)
    h_causal, _ = layer(x, is_causal=True)
    diff = max((h - r["H"]).abs().max().item(), (weights - r["A"]).abs().max().item(),
               (h_causal - c["H"]).abs().max().item())
    print(f"  max |layer - by hand| over H, A and the causal H: {diff:.1e}")

    x.requires_grad_(True)
    checked = [x, layer.W_Q, layer.W_K, layer.W_V]
    ta.testing.gradcheck(lambda *inputs: layer(inputs[0]), checked, seed=args.seed)
    ta.testing.gradcheck(lambda *inputs: layer(inputs[0], is_causal=True)[0], checked,
                          seed=args.seed)
    n = sum(t.numel() for t in checked)
    print(f"  gradcheck: the gradients of H and A with respect to X and the three weight "
          f"matrices ({n} numbers)\n  agree with central finite differences, with and without "
          f"the causal mask")

    seconds = time.perf_counter() - start
    common.write_metrics(out, layer_vs_by_hand_max_diff=diff, weight_hungry_on_I=a[2][0],
                         gradients_checked=n, seconds=seconds)
    common.summary(f"attention by hand: 'hungry' attends {a[2][0]:.1%} to 'I'; nn.SelfAttention "
                   f"matches the hand computation to {diff:.0e}; gradcheck passed on {n} "
                   f"gradients ({seconds:.1f} s)")
    return {**r, "layer_max_diff": diff}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
