"""viz.explorer: the data it stores (against hand-computed bytes and an independent computation of
the attention), its errors, and the page itself in a real headless Chromium (skipped where
chromium and chromedriver are not installed; .ci/run installs them)."""
import base64
import json
import math
import xml.etree.ElementTree as ET
import zlib

import pytest

import tinyattn as ta
from tinyattn import nn, viz
from tinyattn.viz.explorer import from_run, quantise_scores, quantise_weights


def unpack(b64):
    return zlib.decompress(base64.b64decode(b64))


def weights_of(block):
    return [(q / 255) ** 2 for q in unpack(block)]


# ----------------------------------------------------------------------- the stored data

def test_weights_are_one_byte_each_on_a_square_root_scale():
    # round(255 sqrt(w)): 0 -> 0, 0.25 -> 128 (127.5 rounds up), 1 -> 255, 0.01 -> 26 (25.5)
    assert list(unpack(quantise_weights([[0.0, 0.25], [1.0, 0.01]]))) == [0, 128, 255, 26]
    vals = [[i / 97 for i in range(98)]]
    back = weights_of(quantise_weights(vals))
    assert max(abs(a - b) for a, b in zip(vals[0], back)) < 0.004
    # small weights keep their relative precision far better than a linear byte would
    assert abs(weights_of(quantise_weights([[0.001]]))[0] - 0.001) < 1e-4


def test_scores_are_scaled_per_head_and_infinite_ones_marked():
    s = quantise_scores([[-1.0, 0.0], [3.0, -math.inf]])
    assert (s["lo"], s["hi"]) == (-1.0, 3.0)
    # (v - lo) / (hi - lo) * 254, rounded: -1 -> 0, 0 -> 63.5 -> 64, 3 -> 254; -inf -> 255
    assert list(unpack(s["q"])) == [0, 64, 254, 255]


def test_a_mask_shared_by_every_head_is_stored_once():
    T = 4
    w = ta.softmax(ta.randn(2, 3, T, T) + ta.triu(ta.full((T, T), -math.inf), 1), -1)
    ex = viz.explorer({"causal": {"weights": w, "mask": ta.ones(T, T, dtype=ta.bool).triu(1)}})
    g = ex.doc["groups"][0]
    assert len(ex.doc["masks"]) == 1 and g["masks"] == [0] * 6
    bits = unpack(ex.doc["masks"][0])
    flat = [(bits[k >> 3] >> (k & 7)) & 1 for k in range(T * T)]
    assert flat == [int(j > i) for i in range(T) for j in range(T)]
    # no mask at all when nothing is masked
    assert viz.explorer({"x": ta.softmax(ta.randn(2, 2), -1)}).doc["groups"][0]["masks"] == [-1]


def test_shapes_and_labels():
    w = [[0.5, 0.5], [0.1, 0.9], [1.0, 0.0]]                                   # (T=3, S=2)
    ex = viz.explorer({"one": w}, ("a b".split(), "x y z".split()))
    g = ex.doc["groups"][0]
    assert (g["layers"], g["heads"]) == (1, 1)
    # a (source, target) pair: a group that is neither encoder, decoder nor cross is labelled by
    # length: queries from the list with T items, keys from the one with S items
    assert g["queries"] == ["x", "y", "z"] and g["keys"] == ["a", "b"]
    assert weights_of(g["weights"][0]) == pytest.approx([0.5, 0.5, 0.1, 0.9, 1.0, 0.0], abs=4e-3)
    ex = viz.explorer({"l": [ta.softmax(ta.randn(2, 3, 3), -1)] * 4}, "p q r")
    g = ex.doc["groups"][0]
    assert (g["layers"], g["heads"], g["queries"]) == (4, 2, ["p", "q", "r"])
    assert g["layer_names"][3] == "layer 3" and g["head_names"][1] == "head 1"


def small_transformer():
    ta.manual_seed(0)
    return nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                          dim_feedforward=16, dropout=0.1, batch_first=True)


def test_a_model_is_run_once_and_its_attention_matches_the_layers_own_record():
    model = small_transformer()
    src, tgt = ta.randn(2, 5, 8), ta.randn(2, 4, 8)
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    src_tok, tgt_tok = list("abcde"), list("WXYZ")
    ex = viz.explorer(model, (src_tok, tgt_tok), inputs=(src, tgt, None, mask), index=1)
    names = [g["name"] for g in ex.doc["groups"]]
    assert names == ["encoder self-attention", "decoder self-attention",
                     "decoder cross-attention"]
    enc, dec, cross = ex.doc["groups"]
    assert (enc["layers"], enc["heads"], enc["queries"], enc["keys"]) == (2, 2, src_tok, src_tok)
    assert (dec["queries"], dec["keys"]) == (tgt_tok, tgt_tok)
    assert (cross["queries"], cross["keys"]) == (tgt_tok, src_tok)
    assert model.training, "the explorer must give the model back in training mode"
    # the same weights through the layers' own recording (nn.record_attention), in eval mode
    model.eval()
    nn.record_attention(model)
    with ta.no_grad():
        model(src, tgt, tgt_mask=mask)
    maps = nn.attention_maps(model)
    nn.record_attention(model, False)
    for g, key in ((enc, "encoder.layers.1.self_attn"), (dec, "decoder.layers.0.self_attn"),
                   (cross, "decoder.layers.0.multihead_attn")):
        layer = 1 if key.startswith("encoder") else 0
        for h in range(2):
            want = maps[key][1, h].reshape(-1).tolist()
            got = weights_of(g["weights"][layer * 2 + h])
            assert got == pytest.approx(want, abs=4e-3)
    # the decoder's causal mask: one bitmap, upper triangle
    assert len(ex.doc["masks"]) == 1 and dec["masks"] == [0, 0]
    assert enc["masks"] == [-1] * 4


def test_the_scores_are_q_dot_k_over_sqrt_d_computed_by_hand():
    ta.manual_seed(1)
    E, H = 4, 2
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    x = ta.randn(1, 3, E)
    ex = viz.explorer(mha, "a b c", inputs=(x, x, x))
    g = ex.doc["groups"][0]
    W, b = mha.in_proj_weight.tolist(), mha.in_proj_bias.tolist()
    rows = x[0].tolist()

    def proj(r, part, h):
        return [sum(W[part * E + h * 2 + i][j] * r[j] for j in range(E)) + b[part * E + h * 2 + i]
                for i in range(2)]
    for h in range(H):
        q = [proj(r, 0, h) for r in rows]
        k = [proj(r, 1, h) for r in rows]
        want = [sum(a * c for a, c in zip(q[i], k[j])) / math.sqrt(2)
                for i in range(3) for j in range(3)]
        s = g["scores"][h]
        got = [s["lo"] + v / 254 * (s["hi"] - s["lo"]) for v in unpack(s["q"])]
        assert got == pytest.approx(want, abs=(s["hi"] - s["lo"]) / 254 + 1e-6)
        # and the weights are their softmax, row by row
        soft = []
        for i in range(3):
            row = want[3 * i:3 * i + 3]
            m = max(row)
            e = [math.exp(v - m) for v in row]
            soft += [v / sum(e) for v in e]
        assert weights_of(g["weights"][h]) == pytest.approx(soft, abs=4e-3)
    assert mha.recorded is None


def test_snapshots_keep_each_step_and_must_match_the_final_shapes():
    snaps = viz.Snapshots()
    snaps.add(0, {"g": [[0.5, 0.5], [0.5, 0.5]]})
    snaps.add(10, {"g": [[1.0, 0.0], [0.0, 1.0]]}, label="after 10 steps")
    ex = viz.explorer({"g": [[0.9, 0.1], [0.2, 0.8]]}, "a b", snapshots=snaps)
    steps = ex.doc["snapshots"]
    assert [s["step"] for s in steps] == [0, 10] and steps[1]["label"] == "after 10 steps"
    assert weights_of(steps[1]["weights"]["g"][0]) == [1.0, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="'other'"):
        viz.explorer({"g": [[1.0]]}, snapshots=viz.Snapshots().add(0, {"other": [[1.0]]}))
    with pytest.raises(ValueError, match="shape"):
        viz.explorer({"g": [[1.0]]}, snapshots=viz.Snapshots().add(0, {"g": [[0.5, 0.5]]}))
    model = small_transformer()
    src, tgt = ta.randn(1, 3, 8), ta.randn(1, 2, 8)
    s = viz.Snapshots().add(5, model, inputs=(src, tgt))
    assert set(s.steps[0]["weights"]) == {"encoder self-attention", "decoder self-attention",
                                          "decoder cross-attention"}


def test_bad_input_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(ValueError, match="3 tokens but the weights have 2"):
        viz.explorer({"g": [[1.0, 0.0], [0.0, 1.0]]}, "a b c")
    with pytest.raises(ValueError, match="dimension"):
        viz.explorer({"g": [1.0, 0.0]})
    with pytest.raises(ValueError, match="layer 1 head 0 is not 2 x 2"):
        viz.explorer({"g": [[[[1.0, 0.0], [0.0, 1.0]]], [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]]]})
    with pytest.raises(ValueError, match="unknown entries"):
        viz.explorer({"g": {"weights": [[1.0]], "colour": "red"}})
    with pytest.raises(ValueError, match="no attention groups"):
        viz.explorer({})
    with pytest.raises(TypeError, match="Module or a mapping"):
        viz.explorer([[1.0]])
    with pytest.raises(ValueError, match="no MultiheadAttention"):
        viz.explorer(nn.Linear(2, 2), inputs=(ta.randn(1, 2),))
    with pytest.raises(ValueError, match="needs inputs"):
        viz.explorer(small_transformer())
    with pytest.raises(IndexError, match="index 3"):
        viz.explorer(small_transformer(), inputs=(ta.randn(2, 3, 8), ta.randn(2, 2, 8)), index=3)
    with pytest.raises(ValueError, match="grid has 6 cells"):
        viz.explorer({"g": {"weights": [[0.25] * 4], "image": [[0.0] * 4] * 4, "grid": (2, 3)}})
    with pytest.raises(FileNotFoundError, match="does not exist"):
        viz.explorer({"g": [[1.0]]}, path=tmp_path / "no" / "such" / "x.html")
    with pytest.raises(FileNotFoundError, match="explorer.json"):
        from_run(tmp_path)
    (tmp_path / "explorer.json").write_text(json.dumps({"something": "else"}))
    with pytest.raises(ValueError, match="not an explorer document"):
        viz.explorer.from_run(tmp_path)


def test_the_page_is_self_contained_and_from_run_rebuilds_it(tmp_path):
    ex = viz.explorer({"g</script>": [[0.3, 0.7], [1.0, 0.0]]}, "a b", tmp_path / "e.html",
                      title="t <b>")
    html = (tmp_path / "e.html").read_text()
    assert html == ex.html()
    assert "<script src" not in html and "<link" not in html and "import(" not in html
    for url in ("https://", "http://"):
        rest = html.replace("http://www.w3.org/2000/svg", "")
        assert url not in rest, "the page must not load anything from the network"
    assert "</script>" not in html.split('id="data">')[1].split("</script>")[0] + "x"
    assert "<title>t &lt;b&gt;</title>" in html
    ex.save(tmp_path / "explorer.json")
    again = from_run(tmp_path)
    assert (tmp_path / "explorer.html").read_text() == html and again.doc == ex.doc
    # Jupyter: the page inside an iframe's srcdoc, which an HTML parser gives back unchanged
    from html.parser import HTMLParser
    found = []

    class Frames(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag == "iframe":
                found.append(dict(attrs)["srcdoc"])
    Frames().feed(ex._repr_html_())
    assert found == [html]


# --------------------------------------------------------------------- in a real browser

@pytest.fixture(scope="module")
def browser():
    from browser import Browser, Unavailable
    try:
        with Browser() as b:
            yield b
    except Unavailable as e:
        pytest.skip(str(e))


def open_page(browser, path):
    import time
    browser.open(path.as_uri())
    for _ in range(100):
        if browser.run("return document.body.dataset.ready === '1'"):
            return
        time.sleep(0.05)
    raise AssertionError(f"the explorer did not render; errors: {browser.console_errors()}")


def lines(browser):
    return browser.run("return [...document.querySelectorAll('#lines line.att')]"
                       ".map(l => [+l.dataset.q, +l.dataset.k, +l.dataset.w])")


# weights with a different, known winner in every row
W_FINAL = [[0.7, 0.2, 0.1, 0.0], [0.05, 0.05, 0.9, 0.0], [0.25, 0.25, 0.25, 0.25],
           [0.0, 0.0, 0.1, 0.9]]
W_START = [[0.25] * 4] * 4
W_MID = [[0.0, 1.0, 0.0, 0.0]] * 4


def test_in_the_browser_hover_pin_scrub_and_export(browser, tmp_path):
    from browser import ELEMENT
    snaps = viz.Snapshots().add(0, {"self": [[W_START, W_START]]})
    snaps.add(50, {"self": [[W_MID, W_FINAL]]})
    scores = [[math.log(v) if v else -math.inf for v in r] for r in W_FINAL]
    viz.explorer({"self": {"weights": [[W_FINAL, W_MID]], "scores": [[scores, scores]]},
                  "other": {"weights": [[0.5, 0.5]], "queries": ["x"], "keys": ["y", "z"]}},
                 "the cat sat down", tmp_path / "e.html",
                 snapshots=snaps)
    open_page(browser, tmp_path / "e.html")
    assert browser.run("return window.__errors") == []
    assert len(browser.find_all(".thumb")) == 2 and len(browser.find_all(".tab")) == 2
    # hover query 1 ("cat"): exactly its row's lines, with its weights
    browser.hover(browser.find("#lines .tok.q[data-i='1']"))
    got = lines(browser)
    assert {q for q, _, _ in got} == {1}
    assert {k: w for _, k, w in got} == pytest.approx({0: 0.05, 1: 0.05, 2: 0.9}, abs=4e-3)
    assert browser.run("return document.querySelector('#readout tr[data-other]').dataset.other") \
        == "2"
    # hover key 3 ("down"): the lines into it, from every query that gives it weight
    browser.hover(browser.find("#lines .tok.k[data-i='3']"))
    got = lines(browser)
    assert {(q, k) for q, k, _ in got} == {(2, 3), (3, 3)}
    assert sorted(w for _, _, w in got) == pytest.approx([0.25, 0.9], abs=4e-3)
    # click pins query 0; hovering elsewhere then changes nothing until it is clicked again
    browser.click(browser.find("#lines .tok.q[data-i='0']"))
    browser.hover(browser.find("#lines .tok.q[data-i='3']"))
    assert {q for q, _, _ in lines(browser)} == {0}
    browser.click(browser.find("#lines .tok.q[data-i='0']"))
    browser.hover(browser.find("#lines .tok.q[data-i='3']"))
    assert {q for q, _, _ in lines(browser)} == {3}
    # the scrubber: a real click at the slider's left end goes to the first snapshot
    slider = browser.find("#scrub")
    width = browser.run("return arguments[0].getBoundingClientRect().width", slider)
    browser._pointer({"type": "pointerMove", "duration": 0, "origin": slider,
                      "x": -int(width / 2) + 3, "y": 0},
                     {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0})
    assert browser.run("return document.getElementById('scrub-label').textContent") == "step 0"
    browser.hover(browser.find("#lines .tok.q[data-i='2']"))
    assert [w for _, _, w in lines(browser)] == pytest.approx([0.25] * 4, abs=4e-3)
    browser.run("explorer.setSnapshot(1)")
    browser.hover(browser.find("#lines .tok.q[data-i='1']"))
    assert [(k, w) for _, k, w in lines(browser)] == [(1, 1.0)]
    browser.run("explorer.setSnapshot(2)")
    assert browser.run("return document.getElementById('scrub-label').textContent") == \
        "end of training"
    # the second head: a click on its thumbnail
    browser.click(browser.find(".thumb[data-layer='0'][data-head='1']"))
    assert "head 1" in browser.run("return document.getElementById('head-title').textContent")
    browser.hover(browser.find("#lines .tok.q[data-i='0']"))
    assert [(k, w) for _, k, w in lines(browser)] == [(1, 1.0)]
    # export: a standalone SVG with the same lines
    svg = browser.run("return explorer.exportSvg()")
    root = ET.fromstring(svg)
    drawn = root.findall(".//{http://www.w3.org/2000/svg}line")
    assert len(drawn) == len(lines(browser)) == 1
    assert root.findall(".//{http://www.w3.org/2000/svg}image")
    png = browser.screenshot(tmp_path / "explorer.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    assert browser.console_errors() == []
    assert isinstance(slider[ELEMENT], str)


def test_in_the_browser_an_image_group_veils_where_the_word_did_not_look(browser, tmp_path):
    img = [[[0.2 + 0.1 * ((x + y) % 3) for x in range(8)] for y in range(8)] for _ in range(3)]
    w = [[0.1, 0.6, 0.2, 0.1], [0.0, 0.0, 0.0, 1.0]]            # 2 words over a 2 x 2 grid
    viz.explorer({"scene": {"weights": w, "queries": ["red", "circle"], "image": img,
                            "grid": (2, 2)}}, path=tmp_path / "i.html")
    open_page(browser, tmp_path / "i.html")
    browser.hover(browser.find(".words .tok.q[data-i='0']"))
    cells = browser.run("return [...document.querySelectorAll('#picture rect.cell')]"
                        ".map(c => [+c.dataset.w, +c.getAttribute('fill-opacity')])")
    assert [c[0] for c in cells] == pytest.approx([0.1, 0.6, 0.2, 0.1], abs=4e-3)
    # 0.82 (1 - w / max w): the cell it looked at most is clear, the others veiled
    assert [c[1] for c in cells] == pytest.approx(
        [0.82 * (1 - v / 0.6) for v in (0.1, 0.6, 0.2, 0.1)], abs=0.01)
    browser.hover(browser.find("#picture rect.cell[data-i='3']"))
    assert browser.run("return document.querySelector('#readout p').textContent").startswith(
        "key 3")
    assert browser.console_errors() == [] and browser.run("return window.__errors") == []


def test_tokens_per_group():
    w = {"enc": [[0.5, 0.5], [0.5, 0.5]], "cross": [[1.0, 0.0]]}
    ex = viz.explorer(w, {"enc": "a b", "cross": (["->x"], ["a", "b"])})
    (enc, cross) = ex.doc["groups"]
    assert (enc["queries"], enc["keys"]) == (["a", "b"], ["a", "b"])
    assert (cross["queries"], cross["keys"]) == (["->x"], ["a", "b"])
    with pytest.raises(ValueError, match="no entry for the group 'cross'"):
        viz.explorer(w, {"enc": "a b"})
