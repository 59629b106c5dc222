"""The sinusoidal positional encoding, drawn: what it looks like, and why a dot product of two
positions depends only on how far apart they are.

    python demos/positional_encoding.py             # 64 positions x 64 dimensions
    python demos/positional_encoding.py --quick     # 32 x 32 (the test suite runs this)

Attention alone is blind to order (see order_matters.py), so the transformer adds to the embedding
of the token at position p a vector PE(p) of the same size d (Vaswani et al., 2017):

    PE(p, 2i)   = sin(p * w_i)          w_i = 1 / 10000^(2i / d),   i = 0 .. d/2 - 1
    PE(p, 2i+1) = cos(p * w_i)

Each pair of dimensions (2i, 2i+1) is the hand of a clock that turns by the angle w_i per position:
fast in the first dimensions (w_0 = 1 radian per position), slower and slower towards the last
(the slowest turns once in 2 pi * 10000 positions). Two consequences, which the demo checks:

  1. Moving k positions turns every hand by k * w_i, whatever the start: PE(p + k) = R_k PE(p),
     with R_k a rotation that depends on k only. A linear map -- which attention's W_Q and W_K
     can learn -- can therefore say "the word k places back", the same at every position.
  2. The dot product of two positions adds up the cosines of the angles between their hands:
         PE(p) . PE(q) = sum_i cos((p - q) * w_i)
     It depends on the distance p - q only (not on p), is largest (d/2) at distance 0, and falls
     off with the distance: nearby positions look alike, far ones do not.

Nothing here is random or slow: --seed is accepted for uniformity and changes nothing, --quick
draws smaller pictures. Writes runs/positional_encoding/: encoding.svg (positions x dimensions),
waves.svg (a few dimensions against the position), dot_products.svg (PE(p) . PE(q) for all p, q),
dot_by_distance.svg (PE(p) . PE(p + k) against k, from two starting points), metrics.json.
"""
import math
import time

import common

import tinyattn as ta
from tinyattn import nn, viz


def encoding_table(positions, d):
    """The (positions, d) table of nn.PositionalEncoding (the layer the transformers use), in
    float64 so that the checks below are exact to ~1e-12."""
    pe = nn.PositionalEncoding(d, max_len=positions, dtype=ta.float64)
    return pe.pe.squeeze(1)                                          # buffer (T, 1, d) -> (T, d)


def frequencies(d):
    """w_i = 1 / 10000^(2i/d), one per pair of dimensions."""
    return [10000.0 ** (-2 * i / d) for i in range(d // 2)]


def rotation(k, d):
    """R_k (d, d): block diagonal, one 2 x 2 block per pair of dimensions, turning
    (sin(p w), cos(p w)) into (sin((p + k) w), cos((p + k) w)) -- by the angle-sum formulas
    sin(a + b) = sin a cos b + cos a sin b,  cos(a + b) = cos a cos b - sin a sin b."""
    R = [[0.0] * d for _ in range(d)]
    for i, w in enumerate(frequencies(d)):
        c, s = math.cos(k * w), math.sin(k * w)
        R[2 * i][2 * i], R[2 * i][2 * i + 1] = c, s
        R[2 * i + 1][2 * i], R[2 * i + 1][2 * i + 1] = -s, c
    return ta.tensor(R, dtype=ta.float64)


def by_distance(k, d):
    """The closed form of PE(p) . PE(p + k): sum_i cos(k w_i)."""
    return sum(math.cos(k * w) for w in frequencies(d))


def main(argv=None):
    parser = common.parser("positional_encoding", __doc__)
    args = parser.parse_args(argv)
    out = common.output_dir(args, "positional_encoding")
    T, d = (32, 32) if args.quick else (64, 64)
    start = time.perf_counter()

    pe = encoding_table(T, d)                                        # (T, d)
    print(f"positional encoding: PE is a ({T}, {d}) table, row p added to the embedding of the "
          f"token at position p")
    print(f"\n[1/4] the table, positions down, dimensions across ({out / 'encoding.svg'})")
    shown = min(d, 32)
    viz.print_heatmap(pe[:32, :shown], x_labels=[str(j) for j in range(shown)],
                      y_labels=[str(p) for p in range(min(T, 32))],
                      title=f"PE[0:32, 0:{shown}]")
    viz.heatmap(pe, x_labels=[str(j) for j in range(d)], y_labels=[str(p) for p in range(T)],
                title=f"sinusoidal positional encoding ({T} positions x {d} dimensions)",
                x_name="dimension j (even: sin, odd: cos)", y_name="position p", vmin=-1, vmax=1,
                path=out / "encoding.svg")
    print("Columns on the left change fast (dimension 0 is sin(p), one radian per position); "
          "towards the right\nthey turn ever more slowly, and the last ones hardly change over "
          f"{T} positions: each row is a\ndistinct pattern, like the hands of a clock read "
          "together.")

    dims = [j for j in (0, 4, 10, 20, 40) if j < d]
    columns = pe.transpose(0, 1).tolist()                             # (d, T)
    viz.line_chart({f"dimension {j} (w = {frequencies(d)[j // 2]:.3g})":
                    list(enumerate(columns[j])) for j in dims},
                   title="PE(p, j) against the position: one sine per dimension",
                   x_label="position p", y_label="PE(p, j)", y_min=-1.1, y_max=1.1,
                   path=out / "waves.svg")
    print(f"\n[2/4] a few columns against p: sines whose period grows with the dimension "
          f"({out / 'waves.svg'})")

    k = 5
    R = rotation(k, d)
    moved = pe[:T - k] @ R.transpose(0, 1)                           # (T-k, d): row p is R_k PE(p)
    rotation_error = (moved - pe[k:]).abs().max().item()
    print(f"\n[3/4] shifting by k is a rotation: max |R_{k} PE(p) - PE(p + {k})| over all p = "
          f"{rotation_error:.1e}\n(R_{k} is the same matrix for every p, so one linear map "
          f"finds 'the token {k} places back' anywhere)")

    dots = pe @ pe.transpose(0, 1)                                   # (T, T) PE(p) . PE(q)
    closed = ta.tensor([[by_distance(p - q, d) for q in range(T)] for p in range(T)],
                       dtype=ta.float64)
    distance_error = (dots - closed).abs().max().item()
    print(f"\n[4/4] dot products PE(p) . PE(q) ({out / 'dot_products.svg'})")
    viz.print_heatmap(dots[:32, :32], x_labels=[str(q) for q in range(min(T, 32))],
                      y_labels=[str(p) for p in range(min(T, 32))],
                      title=f"PE(p) . PE(q), p down, q across (0 .. {min(T, 32) - 1})")
    viz.heatmap(dots, x_labels=[str(q) for q in range(T)], y_labels=[str(p) for p in range(T)],
                title="PE(p) . PE(q): the same along every diagonal", x_name="position q",
                y_name="position p", cmap="sequential", path=out / "dot_products.svg")
    p0, p1 = 0, T // 3
    viz.line_chart({f"PE({p0}) . PE({p0} + k)": [(j, dots[p0, p0 + j].item())
                                                 for j in range(T - p0)],
                    f"PE({p1}) . PE({p1} + k)": [(j, dots[p1, p1 + j].item())
                                                 for j in range(T - p1)]},
                   title="the dot product depends only on the distance k",
                   x_label="distance k", y_label="dot product", path=out / "dot_by_distance.svg")
    print(f"Every diagonal is constant: PE(p) . PE(q) = sum_i cos((p - q) w_i) to within "
          f"{distance_error:.1e}. It is {d // 2} (= d/2) on\nthe diagonal and falls with the "
          f"distance (at k = 1: {by_distance(1, d):.2f}, k = 4: {by_distance(4, d):.2f}, "
          f"k = 16: {by_distance(16, d):.2f}), the same from\nposition {p0} as from position "
          f"{p1} ({out / 'dot_by_distance.svg'}): attention scores built from PE compare\n"
          f"distances, not absolute places.")

    seconds = time.perf_counter() - start
    common.write_metrics(out, positions=T, d_model=d, rotation_error=rotation_error,
                         distance_error=distance_error, dot_at_distance_0=by_distance(0, d),
                         dot_at_distance_1=by_distance(1, d), seconds=seconds)
    common.summary(f"positional encoding: {T} x {d} table; PE(p) . PE(q) depends on p - q only "
                   f"(max deviation {distance_error:.0e}); shifts are rotations (error "
                   f"{rotation_error:.0e}); {seconds:.1f} s")
    return {"table": pe, "dots": dots, "rotation_error": rotation_error,
            "distance_error": distance_error}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
