// tinyattn's attention explorer: the page script, inlined into every explorer.html by
// tinyattn/viz/explorer.py together with the data (JSON in <script id="data">). No network, no
// libraries. Reading order: decoding the data, colours, the state and render(), then the views
// (tabs and scrubber, the layers x heads grid, the head view, the heatmaps, the readout) and the
// SVG export. window.explorer exposes the state and actions (the browser test drives them).
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";

  // ------------------------------------------------------------------ decoding the data
  const cache = new Map();
  function raw(b64) {
    const s = atob(b64), a = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  // every block of weights, scores and masks is zlib-compressed: inflate them all once, at load
  const inflated = new Map();
  function blocks() {
    const out = [...D.masks];
    for (const g of D.groups) {
      out.push(...g.weights);
      for (const s of g.scores) if (s) out.push(s.q);
    }
    for (const s of D.snapshots) for (const w of Object.values(s.weights)) out.push(...w);
    return out;
  }
  async function inflate(b64) {
    const stream = new Blob([raw(b64)]).stream().pipeThrough(new DecompressionStream("deflate"));
    inflated.set(b64, new Uint8Array(await new Response(stream).arrayBuffer()));
  }
  const bytes = (b64) => inflated.get(b64);
  function memo(key, make) {
    if (!cache.has(key)) cache.set(key, make());
    return cache.get(key);
  }
  // a weight is stored as round(255 sqrt(w)): w = (q / 255)^2
  function decodeWeights(b64) {
    return memo(b64, () => {
      const q = bytes(b64), w = new Float32Array(q.length);
      for (let i = 0; i < q.length; i++) { const v = q[i] / 255; w[i] = v * v; }
      return w;
    });
  }
  // a score is lo + q / 254 (hi - lo); 255 marks a score that is not finite (masked: -inf)
  function decodeScores(s) {
    if (!s) return null;
    return memo("s" + s.q, () => {
      const q = bytes(s.q), v = new Float32Array(q.length);
      for (let i = 0; i < q.length; i++) v[i] = q[i] === 255 ? NaN : s.lo + q[i] / 254 * (s.hi - s.lo);
      return v;
    });
  }
  function decodeMask(index, n) {
    if (index < 0) return null;
    return memo("m" + index, () => {
      const b = bytes(D.masks[index]), m = new Uint8Array(n);
      for (let k = 0; k < n; k++) m[k] = (b[k >> 3] >> (k & 7)) & 1;
      return m;
    });
  }
  const groups = D.groups;
  function snapsFor(gi) {
    return D.snapshots.filter((s) => groups[gi].name in s.weights);
  }
  function headIndex(g, layer, head) { return layer * g.heads + head; }
  // the weights shown: the chosen snapshot's, or the final ones
  function weightBlock(gi, layer, head) {
    const g = groups[gi], k = headIndex(g, layer, head), snaps = snapsFor(gi);
    return state.snap < snaps.length ? snaps[state.snap].weights[g.name][k] : g.weights[k];
  }
  const weights = (gi, layer, head) => decodeWeights(weightBlock(gi, layer, head));

  // ------------------------------------------------------------------------------ colours
  // weights: white -> deep blue, on sqrt(w) so small weights stay visible; scores: blue-white-red
  const BLUES = [[255, 255, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
  const DIVERGE = [[33, 102, 172], [146, 197, 222], [247, 247, 247], [244, 165, 130], [178, 24, 43]];
  function ramp(stops, t) {
    t = Math.max(0, Math.min(1, t)) * (stops.length - 1);
    const i = Math.min(stops.length - 2, Math.floor(t)), f = t - i, a = stops[i], b = stops[i + 1];
    return [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f));
  }
  const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;
  const weightColor = (w) => ramp(BLUES, Math.sqrt(w));
  const MASKED = [190, 190, 190];
  // a stored weight byte q is 255 sqrt(w), which is just where the colour ramp is read
  const WEIGHT_LUT = Array.from({ length: 256 }, (_, q) => ramp(BLUES, q / 255));
  // pixels (one per cell) of a T x S map from its stored bytes and a 256-entry colour table
  function pixels(ctx, T, S, q, lut, mask) {
    const img = ctx.createImageData(S, T), d = img.data;
    for (let k = 0; k < T * S; k++) {
      const c = mask && mask[k] ? MASKED : lut[q[k]];
      d[4 * k] = c[0]; d[4 * k + 1] = c[1]; d[4 * k + 2] = c[2]; d[4 * k + 3] = 255;
    }
    return img;
  }

  // -------------------------------------------------------------------------------- state
  const state = { group: 0, layer: 0, head: 0, snap: 0, hover: null, pin: null, playing: null };
  function resetSnap() { state.snap = snapsFor(state.group).length; }   // = the final weights
  resetSnap();
  const focus = () => state.pin || state.hover;

  const app = document.getElementById("app");
  function el(tag, attrs, ...kids) {
    const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else if (v !== null && v !== undefined) e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  }

  function render() {
    const g = groups[state.group];
    app.replaceChildren(header(), el("main", {}, gridView(g), headView(g)));
    document.body.dataset.ready = "1";
  }
  // hover and pin change only what depends on the focus, in place: replacing the element under
  // the pointer would make the browser send the next mousedown to its parent (seen in Chromium)
  let refreshers = [];
  function update() { for (const fn of refreshers) fn(); }

  // ------------------------------------------------------------------- tabs and scrubber
  function header() {
    const tabs = groups.map((g, i) => el("button", {
      class: "tab" + (i === state.group ? " on" : ""), "data-group": i,
      on: { click: () => { state.group = i; state.layer = state.head = 0; state.pin = state.hover = null; resetSnap(); render(); } },
    }, g.name));
    const snaps = snapsFor(state.group);
    const bar = el("div", { class: "bar" }, el("h1", {}, D.title), el("nav", {}, ...tabs));
    if (snaps.length) {
      const label = el("span", { id: "scrub-label" }, snapLabel(snaps));
      const slider = el("input", {
        id: "scrub", type: "range", min: 0, max: snaps.length, step: 1, value: state.snap,
        title: "training snapshots: drag to watch the attention form",
        on: { input: (e) => setSnapshot(+e.target.value) },
      });
      const play = el("button", { id: "play", on: { click: togglePlay } }, state.playing ? "pause" : "play");
      bar.append(el("div", { class: "scrub" }, el("span", {}, "training:"), play, slider, label));
    }
    bar.append(el("button", { id: "export", on: { click: download } }, "export SVG"));
    return bar;
  }
  function snapLabel(snaps) {
    return state.snap < snaps.length ? snaps[state.snap].label : "end of training";
  }
  function setSnapshot(k) {
    const n = snapsFor(state.group).length;
    state.snap = Math.max(0, Math.min(n, k));
    render();
  }
  function togglePlay() {
    if (state.playing) { clearInterval(state.playing); state.playing = null; render(); return; }
    const n = snapsFor(state.group).length;
    if (state.snap >= n) state.snap = 0;
    state.playing = setInterval(() => {
      if (state.snap >= n) { clearInterval(state.playing); state.playing = null; render(); return; }
      setSnapshot(state.snap + 1);
    }, 400);
    render();
  }

  // ------------------------------------------------------------- layers x heads grid
  function thumbnail(g, layer, head) {
    const T = g.queries.length, S = g.keys.length, q = bytes(weightBlock(state.group, layer, head));
    const c = el("canvas", {
      class: "thumb" + (layer === state.layer && head === state.head ? " on" : ""),
      width: S, height: T, "data-layer": layer, "data-head": head,
      title: `${g.layer_names[layer]}, ${g.head_names[head]}`,
      on: { click: () => { state.layer = layer; state.head = head; render(); } },
    });
    const size = Math.max(40, Math.min(96, 8 * Math.max(T, S)));
    c.style.width = (S >= T ? size : size * S / T) + "px";
    c.style.height = (T >= S ? size : size * T / S) + "px";
    const ctx = c.getContext("2d");
    ctx.putImageData(pixels(ctx, T, S, q, WEIGHT_LUT, null), 0, 0);
    return c;
  }
  function gridView(g) {
    const table = el("table", { id: "grid" });
    table.append(el("tr", {}, el("th"), ...g.head_names.map((h) => el("th", {}, h))));
    for (let l = 0; l < g.layers; l++) {
      const row = el("tr", {}, el("th", {}, g.layer_names[l]));
      for (let h = 0; h < g.heads; h++) row.append(el("td", {}, thumbnail(g, l, h)));
      table.append(row);
    }
    return el("section", { class: "grid" }, el("h2", {}, "layers \u00d7 heads (click one)"), table);
  }

  // ------------------------------------------------------------------------ head view
  function setFocus(side, i, pin) {
    const f = side === null ? null : { side, i };
    if (pin) state.pin = state.pin && f && state.pin.side === side && state.pin.i === i ? null : f;
    else if (JSON.stringify(f) === JSON.stringify(state.hover)) return;
    else state.hover = f;
    update();
  }
  function tokenHandlers(side, i) {
    return {
      mouseenter: () => setFocus(side, i, false),
      mouseleave: () => setFocus(null, 0, false),
      click: () => setFocus(side, i, true),
    };
  }
  function headView(g) {
    const T = g.queries.length, S = g.keys.length;
    const w = weights(state.group, state.layer, state.head);
    const k = headIndex(g, state.layer, state.head);
    const scores = decodeScores(g.scores[k]);
    const mask = decodeMask(g.masks[k], T * S);
    const snaps = snapsFor(state.group);
    const title = `${g.name} \u00b7 ${g.layer_names[state.layer]} \u00b7 ${g.head_names[state.head]}` +
      (snaps.length ? ` \u00b7 ${snapLabel(snaps)}` : "");
    refreshers = [];
    const left = g.image ? imagePanel(g, w) : linesPanel(g, w);
    const maps = el("div", { class: "maps" },
      heatmap("weights", "weights (softmax)", g, w, null, null),
      scores ? heatmap("scores", "scores q\u00b7k/\u221ad (grey: masked)", g, null, scores, mask)
        : mask ? heatmap("scores", "mask (grey: may not attend)", g, null, null, mask) : "");
    const view = el("section", { id: "head" }, el("h2", { id: "head-title" }, title),
      el("div", { class: "row" }, left, maps), readout(g, w, scores, mask));
    update();
    return view;
  }

  function linesPanel(g, w) {
    const T = g.queries.length, S = g.keys.length;
    const rowH = Math.max(12, Math.min(20, Math.floor(560 / Math.max(T, S))));
    const maxLen = (a) => Math.max(...a.map((t) => t.length));
    const qw = Math.max(58, 12 + 7 * Math.min(16, maxLen(g.queries)));
    const kw = Math.max(44, 12 + 7 * Math.min(16, maxLen(g.keys)));
    const gap = 160, W = qw + gap + kw, H = rowH * Math.max(T, S) + 24;
    const svg = el("svg:svg", { id: "lines", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
    svg.append(el("svg:text", { x: qw - 4, y: 12, "text-anchor": "end", class: "axis" }, "queries"),
      el("svg:text", { x: qw + gap + 4, y: 12, class: "axis" }, "keys"));
    const y = (i) => 24 + rowH * i + rowH / 2;
    const lines = el("svg:g", { class: "lines" });
    svg.append(lines);
    const tokens = { q: [], k: [] };
    const token = (side, i, text, x, anchor) => {
      const box = el("svg:rect", {
        x: side === "q" ? 2 : qw + gap + 2, y: y(i) - rowH / 2 + 1, width: (side === "q" ? qw : kw) - 4,
        height: rowH - 2, rx: 3, fill: "transparent",
      });
      const label = el("svg:text", { x, y: y(i), dy: "0.35em", "text-anchor": anchor },
        text.length > 16 ? text.slice(0, 15) + "\u2026" : text);
      const node = el("svg:g", { class: `tok ${side}`, "data-i": i, on: tokenHandlers(side, i) },
        el("svg:title", {}, `${side === "q" ? "query" : "key"} ${i}: ${text}`), box, label);
      tokens[side].push({ node, box, label });
      svg.append(node);
    };
    g.queries.forEach((t, i) => token("q", i, t, qw - 6, "end"));
    g.keys.forEach((t, j) => token("k", j, t, qw + gap + 6, "start"));
    const hint = el("p", { class: "hint" }, "");
    refreshers.push(() => {
      const f = focus(), drawn = [];
      const add = (i, j) => {
        const v = w[i * S + j];
        if (v < 0.005) return;
        drawn.push(el("svg:line", {
          class: "att", x1: qw, y1: y(i), x2: qw + gap, y2: y(j), "stroke-opacity": v.toFixed(4),
          "data-q": i, "data-k": j, "data-w": v.toFixed(4),
        }));
      };
      if (f && f.side === "q") for (let j = 0; j < S; j++) add(f.i, j);
      else if (f && f.side === "k") for (let i = 0; i < T; i++) add(i, f.i);
      else if (T * S <= 4096) for (let i = 0; i < T; i++) for (let j = 0; j < S; j++) add(i, j);
      lines.replaceChildren(...drawn);
      hint.textContent = T * S > 4096 && !f ? "hover a token to draw its lines" : "";
      for (const side of ["q", "k"]) {
        tokens[side].forEach(({ node, box, label }, i) => {
          const on = !!f && f.side === side && f.i === i;
          // how strongly this token takes part in the focused row (a query) or column (a key)
          const s = !f || f.side === side ? null : side === "k" ? w[f.i * S + i] : w[i * S + f.i];
          box.setAttribute("fill", s === null ? (on ? "#ffd54f" : "transparent") : rgb(weightColor(s)));
          label.setAttribute("fill", s !== null && s > 0.3 ? "#fff" : "#111");
          node.classList.toggle("on", on);
          node.classList.toggle("pinned", !!state.pin && state.pin.side === side && state.pin.i === i);
        });
      }
    });
    return el("div", { class: "panel" }, svg, hint);
  }

  function imagePanel(g, w) {
    const S = g.keys.length, [gh, gw] = g.image.grid;
    const scale = Math.max(4, Math.floor(320 / Math.max(g.image.width, g.image.height)));
    const W = g.image.width * scale, H = g.image.height * scale;
    const svg = el("svg:svg", { id: "picture", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
    svg.append(el("svg:image", {
      href: "data:image/png;base64," + g.image.png, width: W, height: H,
      preserveAspectRatio: "none", style: "image-rendering:pixelated",
    }));
    const cw = W / gw, ch = H / gh, cells = [];
    for (let j = 0; j < S; j++) {
      const title = el("svg:title", {}, g.keys[j]);
      const rect = el("svg:rect", {
        class: "cell", "data-i": j, x: (j % gw) * cw, y: Math.floor(j / gw) * ch, width: cw, height: ch,
        fill: "#000", "fill-opacity": 0, "stroke-width": 2, on: tokenHandlers("k", j),
      }, title);
      cells.push({ rect, title });
      svg.append(rect);
    }
    const words = g.queries.map((t, i) => el("span", { class: "tok q", "data-i": i, on: tokenHandlers("q", i) }, t));
    refreshers.push(() => {
      const f = focus();
      // the look of viz.image: bright where the focused word looked, veiled elsewhere
      const row = f && f.side === "q" ? Array.from({ length: S }, (_, j) => w[f.i * S + j]) : null;
      const top = row ? Math.max(...row) : 0;
      cells.forEach(({ rect, title }, j) => {
        const rel = row && top > 0 ? row[j] / top : 1;
        rect.setAttribute("fill-opacity", row ? (0.82 * (1 - rel)).toFixed(3) : 0);
        rect.setAttribute("stroke", f && f.side === "k" && f.i === j ? "#ffd54f" : "none");
        if (row) rect.setAttribute("data-w", row[j].toFixed(4)); else rect.removeAttribute("data-w");
        title.textContent = row ? `${g.keys[j]}: ${row[j].toFixed(3)}` : g.keys[j];
      });
      words.forEach((span, i) => {
        span.classList.toggle("on", !!f && f.side === "q" && f.i === i);
        span.style.background = f && f.side === "k" ? rgb(weightColor(w[i * S + f.i])) : "";
      });
    });
    return el("div", { class: "panel" }, el("div", { class: "words" }, ...words), svg,
      el("p", { class: "hint" }, "hover a word to see where it looked, a cell to see which words looked there"));
  }

  // --------------------------------------------------------------------------- heatmaps
  function heatmap(id, caption, g, w, scores, mask) {
    const T = g.queries.length, S = g.keys.length, k0 = headIndex(g, state.layer, state.head);
    const cell = Math.max(1, Math.min(22, Math.floor(300 / Math.max(T, S))));
    const c = el("canvas", { id, width: S * cell, height: T * cell, class: "map" });
    const ctx = c.getContext("2d");
    let q, lut;
    if (w) { q = bytes(weightBlock(state.group, state.layer, state.head)); lut = WEIGHT_LUT; }
    else if (scores) {   // diverging about 0: the byte q stands for lo + q / 254 (hi - lo)
      const s = g.scores[k0], lim = Math.max(Math.abs(s.lo), Math.abs(s.hi)) || 1;
      q = bytes(s.q);
      lut = Array.from({ length: 256 }, (_, b) => b === 255 ? MASKED : ramp(DIVERGE, 0.5 + (s.lo + b / 254 * (s.hi - s.lo)) / (2 * lim)));
    } else { q = new Uint8Array(T * S); lut = [[255, 255, 255]]; }
    const small = el("canvas", { width: S, height: T });
    small.getContext("2d").putImageData(pixels(ctx, T, S, q, lut, w ? null : mask), 0, 0);
    refreshers.push(() => {
      const f = focus();
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(small, 0, 0, S * cell, T * cell);
      if (f) {   // the focused row (a query) or column (a key)
        ctx.strokeStyle = "#e65100";
        ctx.lineWidth = 2;
        if (f.side === "q") ctx.strokeRect(1, f.i * cell + 1, S * cell - 2, cell - 2);
        else ctx.strokeRect(f.i * cell + 1, 1, cell - 2, T * cell - 2);
      }
    });
    const at = (e) => {
      const r = c.getBoundingClientRect();
      return [Math.floor((e.clientY - r.top) / r.height * T), Math.floor((e.clientX - r.left) / r.width * S)];
    };
    c.addEventListener("mousemove", (e) => {
      const [i, j] = at(e);
      if (i < 0 || j < 0 || i >= T || j >= S) return;
      const k = i * S + j, parts = [`${g.queries[i]} \u2192 ${g.keys[j]}`];
      if (w) parts.push(`weight ${w[k].toFixed(3)}`);
      if (scores) parts.push(scores[k] === scores[k] ? `score ${scores[k].toFixed(3)}` : "masked");
      else if (mask) parts.push(mask[k] ? "masked" : "allowed");
      c.title = parts.join(", ");
    });
    c.addEventListener("click", (e) => { const [i] = at(e); if (i >= 0 && i < T) setFocus("q", i, true); });
    return el("figure", {}, c, el("figcaption", {}, caption));
  }

  // ---------------------------------------------------------------------------- readout
  function readout(g, w, scores, mask) {
    const S = g.keys.length, box = el("div", { id: "readout" });
    refreshers.push(() => {
      const f = focus();
      if (!f) {
        box.replaceChildren("Hover a token to see what it attends to (a query) or what attends to it (a key); click to pin.");
        return;
      }
      const isQ = f.side === "q", others = isQ ? g.keys : g.queries;
      const items = others.map((t, o) => {
        const k = isQ ? f.i * S + o : o * S + f.i;
        return { t, o, w: w[k], s: scores ? scores[k] : null, m: mask ? mask[k] : 0 };
      }).sort((a, b) => b.w - a.w).slice(0, 8);
      const who = isQ ? g.queries[f.i] : g.keys[f.i];
      const table = el("table", {}, el("tr", {}, el("th", {}, isQ ? "key" : "query"), el("th", {}, "weight"), el("th", {}, "score")));
      for (const it of items) {
        table.append(el("tr", { "data-other": it.o }, el("td", {}, `${it.o} ${it.t}`), el("td", {}, it.w.toFixed(3)),
          el("td", {}, it.m || (it.s !== null && it.s !== it.s) ? "masked" : it.s === null ? "" : it.s.toFixed(3))));
      }
      box.replaceChildren(el("p", {}, isQ ? `query ${f.i} \u201c${who}\u201d attends to:` : `key ${f.i} \u201c${who}\u201d is attended by:`), table);
    });
    return box;
  }

  // ------------------------------------------------------------------------- SVG export
  function exportSvg() {
    const head = document.getElementById("head");
    const left = head.querySelector("#lines, #picture");
    const maps = [...head.querySelectorAll("canvas.map")];
    const pad = 12, titleH = 28, lw = +left.getAttribute("width"), lh = +left.getAttribute("height");
    let x = pad + lw + 24, H = lh;
    const images = maps.map((c) => {
      const cap = c.nextSibling ? c.nextSibling.textContent : "";
      const part = `<image x="${x}" y="${titleH + 16}" width="${c.width}" height="${c.height}" href="${c.toDataURL()}" style="image-rendering:pixelated"/>` +
        `<text x="${x}" y="${titleH + 8}" font-size="11">${esc(cap)}</text>`;
      x += c.width + 24;
      H = Math.max(H, c.height + 24);
      return part;
    });
    const inner = new XMLSerializer().serializeToString(left);
    const W = x + pad - 24, title = document.getElementById("head-title").textContent;
    return `<svg xmlns="${NS}" width="${W}" height="${H + titleH + pad}" viewBox="0 0 ${W} ${H + titleH + pad}" font-family="system-ui, sans-serif" font-size="12">` +
      `<rect width="100%" height="100%" fill="#fff"/><text x="${pad}" y="18" font-size="14" font-weight="bold">${esc(title)}</text>` +
      `<g transform="translate(${pad} ${titleH})">${inner.replace(/ on[a-z]+="[^"]*"/g, "")}</g>${images.join("")}</svg>`;
  }
  function esc(s) { return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function download() {
    const blob = new Blob([exportSvg()], { type: "image/svg+xml" });
    const a = el("a", { href: URL.createObjectURL(blob), download: "attention.svg" });
    document.body.append(a);
    a.click();
    a.remove();
  }

  window.explorer = {
    data: D, state, render, exportSvg, setSnapshot,
    select(group, layer, head) { state.group = group; state.layer = layer; state.head = head; state.pin = state.hover = null; resetSnap(); render(); },
    weights: (layer, head) => Array.from(weights(state.group, layer, head)),
  };

  const css = `
  body { font: 13px system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #111; background: #fafafa; }
  .bar { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; padding: 8px 14px; background: #fff; border-bottom: 1px solid #ddd; position: sticky; top: 0; z-index: 1; }
  h1 { font-size: 15px; margin: 0 8px 0 0; } h2 { font-size: 13px; margin: 0 0 6px; color: #444; }
  button { font: inherit; border: 1px solid #bbb; background: #fff; border-radius: 4px; padding: 3px 9px; cursor: pointer; }
  nav { display: flex; flex-wrap: wrap; gap: 4px; }
  .tab.on { background: #0b3d91; color: #fff; border-color: #0b3d91; }
  .scrub { display: flex; gap: 6px; align-items: center; } #scrub { width: 220px; }
  main { display: flex; flex-wrap: wrap; gap: 16px; padding: 12px 14px; align-items: flex-start; }
  section { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 10px; }
  #grid th { font-weight: normal; color: #555; font-size: 11px; padding: 2px 4px; }
  .thumb { image-rendering: pixelated; border: 2px solid transparent; cursor: pointer; display: block; }
  .thumb.on { border-color: #e65100; }
  .panel { max-height: 78vh; overflow: auto; }
  .row { display: flex; flex-wrap: wrap; gap: 18px; align-items: flex-start; }
  #lines line.att { stroke: #1f5fbf; stroke-width: 2; }
  #lines .axis { fill: #777; font-size: 11px; }
  .tok { cursor: pointer; } .tok.pinned rect { stroke: #e65100; stroke-width: 1.5; }
  .words { display: flex; flex-wrap: wrap; gap: 4px; margin-bottom: 8px; max-width: 360px; }
  .words .tok { padding: 2px 6px; border-radius: 3px; border: 1px solid #ccc; } .words .tok.on { background: #ffd54f; }
  canvas.map { image-rendering: pixelated; border: 1px solid #ccc; display: block; cursor: crosshair; }
  figure { margin: 0 0 10px; } figcaption { color: #555; font-size: 11px; margin-top: 3px; }
  .hint { color: #777; font-size: 11px; }
  #readout { margin-top: 8px; } #readout table { border-collapse: collapse; }
  #readout td, #readout th { padding: 1px 10px 1px 0; text-align: left; font-variant-numeric: tabular-nums; }
  `;
  document.head.append(el("style", {}, css));
  if (typeof DecompressionStream === "undefined") {
    app.textContent = "This browser cannot inflate the explorer's data (it has no DecompressionStream); " +
      "use a current Chrome, Firefox or Safari.";
    return;
  }
  app.textContent = "loading\u2026";
  Promise.all([...new Set(blocks())].map(inflate)).then(render, (e) => {
    app.textContent = "The explorer's data could not be read: " + e;
    throw e;
  });
})();
