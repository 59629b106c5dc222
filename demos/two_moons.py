"""Train a small MLP on the two-moons data set with tinyattn's autograd, and draw what it learned.

    python demos/two_moons.py            # 200 steps, about a second after the first compile
    python demos/two_moons.py --quick    # 60 steps (the test suite runs this)

Writes runs/two_moons/: loss.svg (the loss curve), decision.svg (P(y = +1) over the plane),
metrics.json and checkpoint.safetensors.

The model is 2 -> 16 -> 16 -> 1 with tanh, trained by full-batch gradient descent on the logistic
loss log(1 + exp(-y f(x))) with labels y in {-1, +1} -- the same experiment micrograd's demo runs,
here on tensors. The update is written out by hand (p -= lr * p.grad) to show what an optimizer
does; tinyattn.optim wraps exactly this.
"""
import math
import time

import common

import tinyattn as ta
from tinyattn import nn, viz


def make_moons(n, noise, gen):
    """n points on two interleaving half circles, labels -1 / +1."""
    xs, ys = [], []
    angles = ta.rand(n, dtype=ta.float64, generator=gen).tolist()
    jitter = ta.randn(n, 2, dtype=ta.float64, generator=gen).tolist()
    for i in range(n):
        t = math.pi * angles[i]
        if i % 2 == 0:
            x, y, label = math.cos(t), math.sin(t), -1.0
        else:
            x, y, label = 1 - math.cos(t), 0.5 - math.sin(t), 1.0
        xs.append([x + noise * jitter[i][0], y + noise * jitter[i][1]])
        ys.append(label)
    return ta.tensor(xs), ta.tensor(ys)


def logistic_loss(scores, labels):
    """mean log(1 + exp(-y s)), written so that exp() never overflows: softplus(m) for m = -y s
    is max(m, 0) + log(1 + exp(-|m|))."""
    m = -labels * scores
    return (m.relu() + (1 + (-m.abs()).exp()).log()).mean()


def draw(model, X, y, width=60, height=20):
    """The decision regions as text: '.' where the model says -1, '#' where +1, points on top."""
    xs, ys = [p[0] for p in X.tolist()], [p[1] for p in X.tolist()]
    x0, x1, y0, y1 = min(xs) - 0.2, max(xs) + 0.2, min(ys) - 0.2, max(ys) + 0.2
    grid = [[x0 + (x1 - x0) * (c + 0.5) / width, y1 - (y1 - y0) * (r + 0.5) / height]
            for r in range(height) for c in range(width)]
    with ta.no_grad():
        side = (model(ta.tensor(grid)).squeeze(-1) > 0).tolist()
    rows = [["#" if side[r * width + c] else "." for c in range(width)] for r in range(height)]
    for (px, py), label in zip(X.tolist(), y.tolist()):
        c = int((px - x0) / (x1 - x0) * width)
        r = int((y1 - py) / (y1 - y0) * height)
        if 0 <= r < height and 0 <= c < width:
            rows[r][c] = "o" if label > 0 else "x"
    return "\n".join("".join(r) for r in rows)


def main(argv=None):
    parser = common.parser("two_moons", __doc__)
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 200)")
    args = parser.parse_args(argv)
    steps = args.steps or (60 if args.quick else 200)
    out = common.output_dir(args, "two_moons")

    ta.manual_seed(args.seed)
    X, y = make_moons(100, 0.1, ta.Generator(args.seed))
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 1))
    params = list(model.parameters())
    print(f"two moons: 100 points, MLP 2-16-16-1 ({sum(p.numel() for p in params)} parameters)")

    start = time.perf_counter()
    losses = []
    for step in range(1, steps + 1):
        lr = 1.0 - 0.9 * step / steps  # decay so the last steps settle
        scores = model(X).squeeze(-1)
        loss = logistic_loss(scores, y)
        for p in params:
            p.grad = None
        loss.backward()
        with ta.no_grad():
            for p in params:
                p -= lr * p.grad
        losses.append(loss.item())
        acc = ((scores > 0) == (y > 0)).float().mean().item()
        if step == 1 or step % 20 == 0 or step == steps:
            print(f"step {step:4d}  loss {loss.item():.4f}  accuracy {acc:6.1%}", flush=True)
    seconds = time.perf_counter() - start
    print()
    print(draw(model, X, y))

    viz.line_chart({"training loss": list(enumerate(losses, 1))}, title="two moons: loss",
                   x_label="step", y_label="logistic loss", log_y=True, path=out / "loss.svg")
    n = 40
    grid = [[-1.5 + 4 * c / (n - 1), 1.5 - 2.5 * r / (n - 1)] for r in range(n) for c in range(n)]
    with ta.no_grad():
        prob = model(ta.tensor(grid)).sigmoid().reshape(n, n)
    viz.heatmap(prob, x_labels=[f"{grid[c][0]:.1f}" for c in range(n)],
                y_labels=[f"{grid[r * n][1]:.1f}" for r in range(n)],
                title="two moons: P(y = +1) learned by the MLP", x_name="x", y_name="y",
                path=out / "decision.svg")
    common.save_checkpoint(out, model, step=steps)
    common.write_metrics(out, accuracy=acc, final_loss=losses[-1], seconds=seconds)
    common.summary(f"two moons: accuracy {acc:.1%} on the training points, loss "
                   f"{losses[-1]:.4f}, {steps} steps in {seconds:.1f} s")
    return {"losses": losses, "accuracy": acc}


if __name__ == "__main__":
    common.run(main)   # Ctrl-C: one line, not a traceback
