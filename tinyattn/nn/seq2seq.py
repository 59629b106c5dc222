"""An RNN encoder-decoder with attention (Bahdanau 2015, Luong 2015) -- and without, to show why.

    source tokens (B, S) -> Embedding -> bidirectional GRU -> encoder outputs h (B, S, C), C = 2H_enc
                                                              final state  (B, C)
    decoder, one target token per step t (B,):
        bahdanau  c_t = attend(s_{t-1}, h);   s_t = GRUCell([emb(y_{t-1}); c_t], s_{t-1})
                  logits_t = W_out [s_t; c_t; emb(y_{t-1})]
        luong     s_t = GRUCell([emb(y_{t-1}); ht_{t-1}], s_{t-1});   c_t = attend(s_t, h)
                  ht_t = tanh(W_c [c_t; s_t]);   logits_t = W_out ht_t        (input feeding of ht)
        none      c = the final encoder state, the same for every step (Cho et al., 2014):
                  s_t = GRUCell([emb(y_{t-1}); c], s_{t-1});   logits_t = W_out [s_t; c; emb(y_{t-1})]
    s_0 = tanh(W_bridge [final state]).

Without attention the whole source must squeeze through one fixed vector c, and accuracy falls as
sentences grow; with it each step looks back at every source position (`demos/long_sequences.py`).

Token conventions: `pad_idx` (default 0) pads both sides and is ignored by the loss; `bos_idx`
(default 1), distinct from padding, starts every decoder input; `eos_idx` (default 2) ends a target
and stops decoding. A training target batch `tgt` (B, T+1) is [bos, y_1, ..., y_n, eos, pad, ...];
the decoder reads tgt[:, :-1] and predicts tgt[:, 1:] (teacher forcing): see `Seq2Seq.loss`.

Speed: the encoder is two whole-sequence GRU nodes; the encoder side of attention (U h) is computed
once per batch; per decoder step the work is a handful of ops on (B, H) tensors; the output layer
runs once over all steps.

Chapter 4 of the tour (docs/04-seq2seq.md) walks through this file.
"""
import math
from collections import namedtuple

from .. import dtypes as _dt
from ..autograd import no_grad
from ..creation import tensor, zeros
from ..tensor import Tensor
from ..ops.compare import eq
from ..ops.unary import tanh
from ..ops.indexing import index_select
from ..ops.layout import cat, reshape, stack
from ..ops.reduce import argmax, sum
from ..ops.softmax import log_softmax
from . import functional as F
from .linear import Linear
from .module import Module
from .rnn import GRU, GRUCell
from .attention import padding_mask
from .rnn_attention import AdditiveAttention, LuongAttention
from .sparse import Embedding

Memory = namedtuple("Memory", ["keys", "projected_keys", "mask", "final"])
Memory.__doc__ = """What the decoder reads of the source: keys (B, S, C) encoder outputs, projected_keys
(the attention's precomputed encoder side, or None), mask (B, S) bool True at padding (or None),
final (B, C) the final encoder state."""

Hypothesis = namedtuple("Hypothesis", ["tokens", "score", "attention"])
Hypothesis.__doc__ = """A decoded sequence: tokens (list of ints, without bos and eos), score (sum of
log-probabilities, eos included, divided by length ** alpha), attention ((len(tokens), S_b) tensor
of weights for the emitted tokens over this source's own S_b = src_lengths[b] positions, padding
cut off; None for the no-attention decoder or when no token was emitted)."""


def pad_sequences(seqs, pad_idx=0, bos_idx=None, eos_idx=None):
    """Lists of token ids -> (int64 tensor (B, L) padded with pad_idx, lengths list).

    bos_idx / eos_idx, when given, are put before / after every sequence (and counted in lengths)."""
    seqs = [([bos_idx] if bos_idx is not None else []) + list(s) +
            ([eos_idx] if eos_idx is not None else []) for s in seqs]
    lengths = [len(s) for s in seqs]
    width = max(lengths) if lengths else 0
    return tensor([s + [pad_idx] * (width - len(s)) for s in seqs], dtype=_dt.int64), lengths


class Seq2SeqEncoder(Module):
    """Embedding + GRU (bidirectional by default) over a padded batch src (B, S) of token ids.

    forward(src, lengths=None) -> (outputs (B, S, C), final (B, C)), C = D * hidden_size: the last
    layer's outputs (zero past each length) and its final states of both directions concatenated
    (the forward direction at the last real token, the backward one at the first)."""

    def __init__(self, vocab_size, embed_size, hidden_size, num_layers=1, bidirectional=True,
                 dropout=0.0, padding_idx=0, dtype=None):
        super().__init__()
        self.embedding = Embedding(vocab_size, embed_size, padding_idx=padding_idx, dtype=dtype)
        self.rnn = GRU(embed_size, hidden_size, num_layers=num_layers, batch_first=True,
                       dropout=dropout, bidirectional=bidirectional, dtype=dtype)
        self.num_directions = 2 if bidirectional else 1
        self.output_size = self.num_directions * hidden_size

    def forward(self, src, lengths=None):
        emb = self.embedding(src)  # (B, S, E)
        outputs, h_n = self.rnn(emb, lengths=lengths)  # (B, S, C), (layers * D, B, H)
        D = self.num_directions
        last = [h_n[h_n.shape[0] - D + d] for d in range(D)]  # the top layer's directions
        final = last[0] if D == 1 else cat(last, 1)  # (B, C)
        return outputs, final


class AttentionDecoder(Module):
    """A GRU-cell decoder with 'bahdanau', 'luong' or 'none' attention (equations: module docstring).

    `step(tokens (B,), state, memory) -> (features (B, F), state, weights (B, S) or None)`;
    logits = `out(features)`. The state is a tuple of (B, .) tensors, so beam search can reorder it
    by rows."""

    def __init__(self, vocab_size, embed_size, hidden_size, enc_size, attention="bahdanau",
                 luong_score="general", attn_size=None, padding_idx=0, dtype=None):
        super().__init__()
        if attention not in ("bahdanau", "luong", "none"):
            raise ValueError(f"AttentionDecoder: attention must be 'bahdanau', 'luong' or 'none', "
                             f"got {attention!r}")
        self.kind = attention
        self.hidden_size = hidden_size
        E, H, C = embed_size, hidden_size, enc_size
        self.embedding = Embedding(vocab_size, E, padding_idx=padding_idx, dtype=dtype)
        self.bridge = Linear(C, H, dtype=dtype)
        if attention == "luong":
            self.attention = LuongAttention(H, C, score=luong_score, hidden_size=attn_size,
                                            dtype=dtype)
            self.cell = GRUCell(E + H, H, dtype=dtype)
            self.combine = Linear(C + H, H, bias=False, dtype=dtype)  # W_c
            self.out = Linear(H, vocab_size, dtype=dtype)
        else:
            if attention == "bahdanau":
                self.attention = AdditiveAttention(H, C, hidden_size=attn_size, dtype=dtype)
            self.cell = GRUCell(E + C, H, dtype=dtype)
            self.out = Linear(H + C + E, vocab_size, dtype=dtype)

    def memory(self, enc_outputs, enc_final, mask=None):
        """Everything per-source the decoder needs, computed once (incl. the attention's U h)."""
        pk = None if self.kind == "none" else self.attention.precompute_keys(enc_outputs)
        return Memory(enc_outputs, pk, mask, enc_final)

    def initial_state(self, memory):
        s0 = tanh(self.bridge(memory.final))  # (B, H)
        if self.kind == "luong":
            return (s0, zeros(s0.shape[0], self.hidden_size, dtype=s0.dtype))
        return (s0,)

    def step(self, tokens, state, memory):
        e = self.embedding(tokens)  # (B, E)
        s_prev = state[0]  # (B, H)
        if self.kind == "bahdanau":
            c, a = self.attention(s_prev, memory.keys, memory.mask, memory.projected_keys)
            s = self.cell(cat([e, c], 1), s_prev)  # (B, H)
            return cat([s, c, e], 1), (s,), a
        if self.kind == "luong":
            s = self.cell(cat([e, state[1]], 1), s_prev)
            c, a = self.attention(s, memory.keys, memory.mask, memory.projected_keys)
            h_tilde = tanh(self.combine(cat([c, s], 1)))  # (B, H)
            return h_tilde, (s, h_tilde), a
        c = memory.final  # the fixed context: all the decoder ever sees of the source
        s = self.cell(cat([e, c], 1), s_prev)
        return cat([s, c, e], 1), (s,), None


class Seq2Seq(Module):
    """Encoder + attention decoder for token sequences.

        model = Seq2Seq(src_vocab, tgt_vocab, embed_size=32, hidden_size=64, attention="bahdanau")
        loss = model.loss(src, tgt, src_lengths)       # teacher forcing, cross-entropy
        hyps = model.greedy_decode(src, src_lengths, max_len=20)
        hyps = model.beam_search(src, src_lengths, beam_size=5, alpha=0.7)

    attention: 'bahdanau', 'luong' (with luong_score 'dot' | 'general' | 'concat') or 'none'.
    src (B, S) int64 padded with pad_idx; src_lengths (B,) (derived from the padding when None)."""

    def __init__(self, src_vocab_size, tgt_vocab_size, embed_size=32, hidden_size=64,
                 attention="bahdanau", luong_score="general", num_layers=1, bidirectional=True,
                 dropout=0.0, attn_size=None, pad_idx=0, bos_idx=1, eos_idx=2, dtype=None):
        super().__init__()
        if len({pad_idx, bos_idx, eos_idx}) != 3:
            raise ValueError(f"Seq2Seq: pad_idx, bos_idx and eos_idx must be distinct, got "
                             f"{pad_idx}, {bos_idx}, {eos_idx}")
        self.pad_idx, self.bos_idx, self.eos_idx = pad_idx, bos_idx, eos_idx
        self.tgt_vocab_size = tgt_vocab_size
        self.encoder = Seq2SeqEncoder(src_vocab_size, embed_size, hidden_size, num_layers,
                                      bidirectional, dropout, pad_idx, dtype=dtype)
        self.decoder = AttentionDecoder(tgt_vocab_size, embed_size, hidden_size,
                                        self.encoder.output_size, attention, luong_score,
                                        attn_size, pad_idx, dtype=dtype)

    # ------------------------------------------------------------------ encoding
    def encode(self, src, src_lengths=None):
        """Run the encoder; returns the decoder's Memory for this batch."""
        if not isinstance(src, Tensor) or src.ndim != 2 or src.dtype is not _dt.int64:
            raise ValueError("Seq2Seq: src must be an int64 tensor of shape (B, S)")
        pad = eq(src, self.pad_idx)  # (B, S), True at padding
        if src_lengths is None:
            src_lengths = (src.shape[1] - sum(pad, 1)).tolist()
        elif isinstance(src_lengths, Tensor):
            src_lengths = src_lengths.tolist()
        full = all(n == src.shape[1] for n in src_lengths)
        outputs, final = self.encoder(src, None if full else src_lengths)
        mask = None if full else padding_mask(src_lengths, src.shape[1], convention="mha")  # (B, S), True = pad
        return self.decoder.memory(outputs, final, mask)

    # ------------------------------------------------------------------ training
    def forward(self, src, tgt_in, src_lengths=None, return_attention=False):
        """Teacher forcing: logits (B, T, V) for every position of the decoder input tgt_in (B, T)
        (which starts with bos); with return_attention, also the weights (B, T, S) (None for
        attention='none')."""
        memory = self.encode(src, src_lengths)
        state = self.decoder.initial_state(memory)
        feats, weights = [], []
        for t in range(tgt_in.shape[1]):
            f, state, a = self.decoder.step(tgt_in[:, t], state, memory)
            feats.append(f)
            weights.append(a)
        logits = self.decoder.out(stack(feats, 1))  # (B, T, V): one matmul for all steps
        if not return_attention:
            return logits
        return logits, (None if weights[0] is None else stack(weights, 1))

    def loss(self, src, tgt, src_lengths=None, label_smoothing=0.0):
        """Mean cross-entropy of predicting tgt[:, 1:] from tgt[:, :-1]; tgt (B, T+1) starts with bos
        and is padded with pad_idx (ignored)."""
        logits = self(src, tgt[:, :-1], src_lengths)  # (B, T, V)
        V = logits.shape[2]
        return F.cross_entropy(reshape(logits, (-1, V)), reshape(tgt[:, 1:], (-1,)),
                               ignore_index=self.pad_idx, label_smoothing=label_smoothing)

    # ------------------------------------------------------------------ decoding
    @no_grad()
    def greedy_decode(self, src, src_lengths=None, max_len=50):
        """Pick the most likely token at every step, for the whole batch at once.

        Returns a list of B Hypothesis(tokens, score, attention), like beam_search (alpha = 0)."""
        memory = self.encode(src, src_lengths)
        state = self.decoder.initial_state(memory)
        B = src.shape[0]
        tokens = tensor([self.bos_idx] * B, dtype=_dt.int64)
        out = [[] for _ in range(B)]
        scores = [0.0] * B
        rows = [[] for _ in range(B)]
        done = [False] * B
        for _ in range(max_len):
            f, state, a = self.decoder.step(tokens, state, memory)
            logp = log_softmax(self.decoder.out(f), -1)  # (B, V)
            best = argmax(logp, -1).tolist()
            best_logp = logp.tolist()
            for b in range(B):
                if done[b]:
                    continue
                scores[b] += best_logp[b][best[b]]
                if best[b] == self.eos_idx:
                    done[b] = True
                else:
                    out[b].append(best[b])
                    rows[b].append(None if a is None else a[b])
            if all(done):
                break
            tokens = tensor(best, dtype=_dt.int64)
        return [_trimmed(Hypothesis(out[b], scores[b], _stack_rows(rows[b])), src_lengths, b)
                for b in range(B)]

    @no_grad()
    def beam_search(self, src, src_lengths=None, beam_size=4, max_len=50, alpha=0.0):
        """Keep the beam_size best partial translations at every step (one source at a time).

        Hypotheses are ranked by sum(log p) / length ** alpha (length counts eos; alpha = 0: no
        normalisation, which favours short outputs). Returns a list of B best Hypothesis."""
        memory = self.encode(src, src_lengths)
        results = []
        for b in range(src.shape[0]):
            rows = tensor([b] * beam_size, dtype=_dt.int64)
            mem_b = Memory(*(None if m is None else index_select(m, 0, rows) for m in memory))
            state = self.decoder.initial_state(mem_b)

            def step(tokens, state, mem_b=mem_b):
                f, state, a = self.decoder.step(tokens, state, mem_b)
                return log_softmax(self.decoder.out(f), -1), state, a

            best = beam_search(step, state, self.bos_idx, self.eos_idx, beam_size, max_len, alpha)
            results.append(_trimmed(best, src_lengths, b))
        return results


def _trimmed(h, src_lengths, b):
    """h with its attention cut to source b's real length (the columns past it are padding)."""
    if h.attention is None or src_lengths is None:
        return h
    return h._replace(attention=h.attention[:, :int(src_lengths[b])])


def _cannot_improve(finished, live_scores, max_len, alpha):
    """True when no live hypothesis can end above the best finished one. A score only falls as a
    hypothesis grows (log-probabilities are <= 0) and its length is at most max_len, so the best a
    live score s < 0 can still reach after normalisation is s / max_len ** alpha."""
    if not finished:
        return False
    best_done = max(f[0] / (max(f[3], 1) ** alpha) for f in finished)
    best_live = max(live_scores) / (max_len ** alpha)
    return best_live <= best_done


def _stack_rows(rows):
    """Attention rows of the emitted tokens as (len, S), or None (no attention, or no token)."""
    return None if not rows or rows[0] is None else stack(rows, 0)


def beam_search(step, state, bos, eos, beam_size=4, max_len=50, alpha=0.0):
    """Beam search over any step function (used by Seq2Seq; testable on a hand-made model).

    step(tokens (K,) int64, state) -> (log_probs (K, V), new_state, weights (K, S) or None), where
    K = beam_size and state is a tuple of tensors whose rows are the K hypotheses (the rows of the
    initial state are K copies of the start). Returns the best Hypothesis.

    At each step every live hypothesis is extended by every token; the K best extensions that do not
    end in eos stay alive, those that end in eos are set aside as finished. The search stops when
    no live hypothesis can still beat the best finished one, or after max_len steps (then the live
    ones count as finished). Stopping as soon as K have finished (a common shortcut) would let a
    few unlikely early eos end the search while a far likelier hypothesis is still alive."""
    if beam_size < 1:
        raise ValueError(f"beam_search: beam_size must be at least 1, got {beam_size}")
    K = beam_size
    tokens = [[] for _ in range(K)]
    attns = [[] for _ in range(K)]
    scores = [0.0] + [-math.inf] * (K - 1)  # all K rows start equal: expand only the first
    finished = []
    last = [bos] * K
    for _ in range(max_len):
        logp, state, a = step(tensor(last, dtype=_dt.int64), state)
        lp = logp.tolist()
        candidates = [(scores[k] + lp[k][v], k, v) for k in range(K) if scores[k] > -math.inf
                      for v in range(len(lp[k]))]
        candidates.sort(key=lambda c: -c[0])  # stable: ties keep (beam, token) order, as argmax
        new_tokens, new_attns, new_scores, parents, new_last = [], [], [], [], []
        for score, k, v in candidates:
            if score == -math.inf:
                break
            if v == eos:
                finished.append((score, tokens[k], attns[k], len(tokens[k]) + 1))
                continue
            row = None if a is None else a[k]
            new_tokens.append(tokens[k] + [v])
            new_attns.append(attns[k] + [row])
            new_scores.append(score)
            parents.append(k)
            new_last.append(v)
            if len(new_scores) == K:
                break
        if not new_scores or _cannot_improve(finished, new_scores, max_len, alpha):
            break
        while len(new_scores) < K:  # fewer live extensions than beams: pad with dead rows
            new_tokens.append([])
            new_attns.append([])
            new_scores.append(-math.inf)
            parents.append(parents[0])
            new_last.append(bos)
        idx = tensor(parents, dtype=_dt.int64)
        state = tuple(index_select(s, 0, idx) for s in state)
        tokens, attns, scores, last = new_tokens, new_attns, new_scores, new_last
    else:
        finished += [(scores[k], tokens[k], attns[k], len(tokens[k])) for k in range(K)
                     if scores[k] > -math.inf]
    best = max(finished, key=lambda f: f[0] / (max(f[3], 1) ** alpha))
    score, toks, rows, length = best
    return Hypothesis(toks, score / (max(length, 1) ** alpha), _stack_rows(rows))
