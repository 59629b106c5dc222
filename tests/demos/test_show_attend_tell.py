"""The visual-attention demo's pieces (demos/show_attend_tell.py) and the image pictures
(tinyattn/viz/image.py): scenes, captions, the localisation score, the decoder's shapes and
gradients, and the PNG / SVG / terminal output. The demo's training run is in test_demos.py.

What holds: shapes and localisation scores worked out by hand, attention rows that sum to 1, a
gradient that reaches the attention's parameters (through REINFORCE for hard attention),
Gumbel-max samples drawn from the attention, and pictures that decode (PNG) and parse (SVG)."""
import pathlib
import random
import struct
import sys
import zlib

import pytest

import tinyattn as ta
from tinyattn import viz
from tinyattn.viz.image import png_bytes

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "demos"))
import show_attend_tell as sat  # noqa: E402


def test_shapes_by_hand():
    # a 5x5 cross has a bar of thickness 1 through the middle row and column
    cross = ["".join("#" if sat._inside("cross", 5, x, y) else "." for x in range(5))
             for y in range(5)]
    assert cross == ["..#..", "..#..", "#####", "..#..", "..#.."]
    triangle = ["".join("#" if sat._inside("triangle", 5, x, y) else "." for x in range(5))
                for y in range(5)]
    assert triangle == ["..#..", ".###.", ".###.", "#####", "#####"]   # half-width (dy + 1) / 2
    circle = ["".join("#" if sat._inside("circle", 6, x, y) else "." for x in range(6))
              for y in range(6)]
    assert circle[0] == ".####." and circle[2] == "######"
    assert all(sat._inside("square", 5, x, y) for x in range(5) for y in range(5))


def test_scenes_and_captions():
    rng = random.Random(0)
    for _ in range(200):
        pixels, objects = sat.scene(rng)
        assert len(pixels) == 3 * sat.SIZE * sat.SIZE
        assert 2 <= len(objects) <= sat.MAX_OBJECTS
        centres = [o["box"][0] + o["box"][2] for o in objects]
        assert centres == sorted(centres) and len(set(centres)) == len(centres)
        for k, o in enumerate(objects):
            x0, y0, x1, y1 = o["box"]
            assert 0 <= x0 <= x1 < sat.SIZE and 0 <= y0 <= y1 < sat.SIZE
            assert x1 - x0 + 1 in sat.SIZES[o["size"]]
            for p in objects[k + 1:]:     # boxes keep a pixel of space between them
                a, b = o["box"], p["box"]
                assert a[2] + 1 < b[0] or b[2] + 1 < a[0] or a[3] + 1 < b[1] or b[3] + 1 < a[1]
            if o["shape"] == "square":    # its centre pixel has the object's colour
                cx, cy = (x0 + x1) // 2, (y0 + y1) // 2
                rgb = [pixels[c * sat.SIZE * sat.SIZE + cy * sat.SIZE + cx] for c in range(3)]
                assert max(abs(a - b) for a, b in zip(rgb, sat.COLOURS[o["colour"]])) <= 0.081
        words = sat.caption_words(objects)
        assert len(words) == 4 * len(objects) - 1
        assert words[3::4] == [","] * (len(objects) - 1)
        assert words[0::4] == [o["size"] for o in objects]
        assert sat.word_objects(objects) == [k if w != "," else -1
                                             for k, w in zip(sum(([i, i, i, -1] for i in range(
                                                 len(objects))), []), words)] + [-1]


def test_dataset_tokens():
    images, tokens, objects = sat.dataset(5, seed=1)
    assert images.shape == (5, 3, sat.SIZE, sat.SIZE) and tokens.shape == (5, sat.MAX_LEN + 1)
    for row, objs in zip(tokens.tolist(), objects):
        n = 4 * len(objs)                  # <bos>, the words, <eos>
        assert row[0] == sat.BOS and row[n] == sat.EOS and set(row[n + 1:]) <= {sat.PAD}
        assert [sat.VOCAB[i] for i in row[1:n]] == sat.caption_words(objs)


def _one_hot_alpha(cells, T):
    alpha = [[0.0] * (sat.GRID * sat.GRID) for _ in range(T)]
    for t, cell in enumerate(cells):
        alpha[t][cell] = 1.0
    return ta.tensor([alpha])


def test_localisation_by_hand():
    objects = [dict(size="small", colour="red", shape="square", box=(4, 4, 8, 8)),
               dict(size="small", colour="blue", shape="cross", box=(20, 24, 25, 29))]
    T = len(sat.word_objects(objects))          # 7 words + <eos>
    inside = 1 * sat.GRID + 1                   # cell (1, 1): pixels 4..7, inside box 0
    touching = 2 * sat.GRID + 2                 # cell (2, 2): pixels 8..11, touches box 0
    far = 7 * sat.GRID + 0                      # cell (7, 0): pixels x 0..3, y 28..31
    box1 = 6 * sat.GRID + 5                     # cell (6, 5): pixels x 20..23, y 24..27
    cells = [inside, touching, inside, far, box1, box1, box1, far]
    assert sat.localisation(_one_hot_alpha(cells, T), [objects]) == 1.0
    cells = [far, inside, inside, inside, inside, box1, box1, far]   # 2 of 6 object words wrong
    assert sat.localisation(_one_hot_alpha(cells, T), [objects]) == pytest.approx(4 / 6)


@pytest.mark.parametrize("mode", ["soft", "hard", "none"])
def test_captioner_shapes_and_gradients(mode):
    ta.manual_seed(0)
    images, tokens, _ = sat.dataset(3, seed=2)
    model = sat.Captioner(mode)
    loss, caption_loss, exact = sat.step_loss(model, images, tokens, {}, ds_weight=0.01)
    loss.backward()
    assert 0.0 <= exact <= 1.0 and loss.item() == loss.item() and caption_loss > 0
    touched = {n for n, p in model.named_parameters() if p.grad is not None}
    attention = {"W_a.weight", "W_a.bias", "W_h.weight", "v.weight", "gate.weight", "gate.bias"}
    if mode == "none":
        assert not touched & attention
    else:
        assert attention <= touched        # hard attention too: through REINFORCE
    ids, alpha = model.caption(images)
    assert ids.shape == (3, sat.MAX_LEN)
    assert (alpha is None) == (mode == "none")
    if alpha is not None:
        assert alpha.shape == (3, sat.MAX_LEN, sat.GRID * sat.GRID)
        assert (alpha.sum(-1) - 1).abs().max().item() < 1e-5


def test_gumbel_max_samples_the_attention():
    ta.manual_seed(1)
    alpha = ta.tensor([0.6, 0.3, 0.1])
    u = ta.rand(40000, 3).clamp(1e-9, 1.0)
    s = (alpha.log() - (-u.log()).log()).argmax(-1)
    freq = [(s == k).to(ta.float32).mean().item() for k in range(3)]
    assert max(abs(f - a) for f, a in zip(freq, [0.6, 0.3, 0.1])) < 0.01


# ---------------------------------------------------------------------------- pictures


def test_png_bytes_decode():
    rows = [[(1.0, 0.0, 0.0), (0.0, 0.5, 1.0)], [(0.0, 0.0, 0.0), (1.0, 1.0, 1.0)]]
    png = png_bytes(rows)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", png[8:16])
    w, h, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert (kind, w, h, depth, colour) == (b"IHDR", 2, 2, 8, 2)
    idat = png.index(b"IDAT")
    (n,) = struct.unpack(">I", png[idat - 4:idat])
    raw = zlib.decompress(png[idat + 4:idat + 4 + n])
    assert raw == bytes([0, 255, 0, 0, 0, 128, 255, 0, 0, 0, 0, 255, 255, 255])
    assert png.endswith(b"IEND\xaeB`\x82")


def test_image_attention_svg(tmp_path):
    img = ta.rand(3, 8, 8)
    weights = ta.tensor([[[1.0, 0.0], [0.0, 0.0]], [[0.25, 0.25], [0.25, 0.25]]])
    text = viz.image_attention(img, [("soft", ["red", "circle"], weights)], title="t",
                               path=tmp_path / "a.svg")
    assert (tmp_path / "a.svg").read_text() == text
    assert text.count('<use href="#pixels"') == 3         # the image, then one panel per word
    assert text.count("data:image/png;base64,") == 1       # the pixels are stored once
    assert ">red</text>" in text and ">circle</text>" in text
    # the attended cell is not veiled; a cell of weight 0 is, fully
    assert 'fill-opacity="0"><title>cell (0, 0): 1.000' in text
    assert 'fill-opacity="0.82"><title>cell (0, 1): 0.000' in text
    with pytest.raises(ValueError, match="image_attention: row 'soft' has 1 words but 2"):
        viz.image_attention(img, [("soft", ["red"], weights)])
    with pytest.raises(ValueError, match="image: a 3-d image must be \\(3, H, W\\)"):
        viz.image(ta.rand(2, 4, 4))


def test_terminal_image_without_colour():
    img = ta.zeros(3, 4, 2)
    img[:, 0, 0] = 1.0                                      # one white pixel, top left
    text = viz.terminal_image(img, color=False)
    assert text.splitlines() == ["@@  ", "    "]
    text = viz.terminal_image(img, overlay=ta.tensor([[0.0, 1.0]]), color=False)
    assert text.splitlines()[0] == "..  "   # veiled to 0.18 of white: ramp[1], two chars a pixel
    coloured = viz.terminal_image(img, color="truecolor")
    assert "\x1b[38;2;255;255;255m" in coloured and coloured.count("\u2580") == 4
