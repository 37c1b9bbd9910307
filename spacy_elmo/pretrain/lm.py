"""The biLM as trained: shared char CNN, forward and backward LSTM stacks, shared softmax.

Training objective (Peters et al. 2018, section 3.1): maximise
    sum_k log p(t_k | t_1..t_{k-1}) + log p(t_k | t_{k+1}..t_N)
with the token representation (char CNN) and the softmax shared by both directions and separate
LSTMs. Sentences are [<S>, t_1..t_N, </S>]: the forward LM reads <S>..t_N and predicts
t_1..</S>; the backward LM reads </S>..t_1 and predicts t_N..<S>.

The LSTMs are LSTMs with projection without clipping: bilm-tf's LSTMP with ``cell_clip`` and
``proj_clip`` off, so the exported options.json declares both as null and the inference biLM
computes the same function (see :mod:`.export`). ``lstm_impl`` picks how they run, with the same
parameters under the same names either way (checkpoints are interchangeable):

- ``"fused"`` (default): :class:`.recurrent.ProjectedLSTM`, both directions of a layer in one pass,
  hand-written backward, matrix products in ``gemm_dtype`` (float32, or bfloat16 on CPUs that
  have it; see :func:`.hardware.resolve_precision`); with ``compile`` true the recurrences run as
  native C++ ops (:mod:`.native`), else with element-wise steps fused by torch.compile, else eager
  (:func:`.recurrent.recurrence`);
- ``"torch"``: ``torch.nn.LSTM(proj_size=...)``, the trainer of the first release (float32).
"""
import warnings
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F

from ..bilm.char_cnn import CharCNN
from ..bilm.chars import MAX_CHARS, N_CHARACTERS
from ..errors import ElmoConfigError
from .recurrent import NativeRecurrence, ProjectedLSTM, recurrence, run_layers
from .token_encoder import encode_types

LSTM_IMPLS = ("fused", "torch")

# torch warns once that LSTM(proj_size=...) does not use oneDNN; it still runs at ~130 GFLOP/s here.
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")


def softmax_cutoffs(cutoffs, vocab_size: int) -> Tuple[List[int], List[int]]:
    """(kept, dropped): the configured ``softmax.cutoffs`` that fit a softmax vocabulary of
    ``vocab_size`` words (below ``vocab_size - 1``) and those that do not. When none fits (a small
    vocabulary with the default 2000/10000/40000), one cluster boundary at half the vocabulary is
    kept instead, so ``nn.AdaptiveLogSoftmaxWithLoss`` always gets a valid list."""
    cutoffs = [int(x) for x in cutoffs]
    kept = [c for c in cutoffs if c < vocab_size - 1]
    dropped = [c for c in cutoffs if c >= vocab_size - 1]
    if not kept:
        kept = [max(1, vocab_size // 2)]
    return kept, dropped


def adaptive_nll(softmax: nn.AdaptiveLogSoftmaxWithLoss, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """-log p(target | x) (N,) float32 under an adaptive softmax (Grave et al. 2017): the same
    function as ``-softmax(x, target).output``, written with ``cross_entropy`` so that its linear
    layers follow an enclosing autocast (torch's module mixes dtypes under bfloat16 autocast).
    x (N, in_features); target (N,) int64 in [0, n_classes)."""
    head_target = target.clone()
    nll = torch.zeros(target.shape[0], device=x.device)
    for i, tail in enumerate(softmax.tail):
        low, high = softmax.cutoffs[i], softmax.cutoffs[i + 1]
        rows = ((target >= low) & (target < high)).nonzero().squeeze(1)
        if rows.numel():
            head_target[rows] = softmax.shortlist_size + i
            logits = tail(x[rows]).float()
            nll = nll.index_add(0, rows, F.cross_entropy(logits, target[rows] - low, reduction="none"))
    return nll + F.cross_entropy(softmax.head(x).float(), head_target, reduction="none")


# Rows per chunk of the fused loss: about this many logits at a time (2 MB in bfloat16), so that a
# chunk's logits stay in cache between its product, its cross-entropy and its two gradient products.
FUSED_LOSS_LOGITS = 1 << 20


class _LinearCrossEntropy(torch.autograd.Function):
    """``scale * sum_n nll_n`` and ``nll`` (M,) float32 (not differentiable), where
    nll_n = -log softmax(h_n W^T)[target_n], computed chunk by chunk of rows with the native
    ``cross_entropy_rows`` op (:mod:`.native`): per chunk one product for the logits (in ``dtype``,
    as autocast runs it), one pass for the cross-entropy that overwrites them with their gradient
    ``scale * (softmax - onehot)``, rounded once to ``dtype`` (what autocast's backward feeds its
    products), and two products for the gradients of h and W, which are kept for backward
    (which only scales them). The (M, V) logits are never stored whole nor in float32.

    forward(h (M, K), weight (V, K) float32, target (M,) int64, dtype, scale, want_grad, ops)."""

    @staticmethod
    def forward(ctx, h, weight, target, dtype, scale, want_grad, ops):
        M, K = h.shape
        w = weight.to(dtype)
        chunk = max(16, FUSED_LOSS_LOGITS // weight.shape[0])
        nll = h.new_empty(M, dtype=torch.float32)
        d_h = torch.empty_like(h) if want_grad else None
        d_w = torch.zeros_like(weight) if want_grad else None
        for start in range(0, M, chunk):
            h_c = h[start: start + chunk].to(dtype)
            logits = torch.mm(h_c, w.t())
            nll[start: start + chunk] = ops.cross_entropy_rows(logits, target[start: start + chunk], scale, want_grad)
            if want_grad:  # logits now hold their gradient
                d_h[start: start + chunk] = torch.mm(logits, w)
                d_w += torch.mm(logits.t(), h_c)
        ctx.save_for_backward(d_h, d_w)
        ctx.mark_non_differentiable(nll)
        return nll.sum() * scale, nll

    @staticmethod
    def backward(ctx, d_loss, d_nll):
        d_h, d_w = ctx.saved_tensors
        return d_h * d_loss.to(d_h.dtype), d_w * d_loss, None, None, None, None, None


def fused_adaptive_nll(softmax: nn.AdaptiveLogSoftmaxWithLoss, x: torch.Tensor, target: torch.Tensor,
                       dtype: torch.dtype, ops):
    """(mean NLL, differentiable; NLL per row (N,) float32, detached) under an adaptive softmax
    without head bias: the function of :func:`adaptive_nll` (products in ``dtype``, as under
    autocast), with each cluster's last linear layer and cross-entropy fused
    (:class:`_LinearCrossEntropy`). x (N, in_features) float32, N > 0; ops: the native ops."""
    want_grad = torch.is_grad_enabled()
    scale = 1.0 / target.shape[0]
    head_target = target.clone()
    nll = torch.zeros(target.shape[0], device=x.device)
    losses = []
    for i, tail in enumerate(softmax.tail):
        low, high = softmax.cutoffs[i], softmax.cutoffs[i + 1]
        rows = ((target >= low) & (target < high)).nonzero().squeeze(1)
        if rows.numel():
            head_target[rows] = softmax.shortlist_size + i
            z = F.linear(x[rows].to(dtype), tail[0].weight.to(dtype))  # the cluster's projection
            loss, tail_nll = _LinearCrossEntropy.apply(z, tail[1].weight, target[rows] - low, dtype, scale,
                                                       want_grad, ops)
            losses.append(loss)
            nll.index_add_(0, rows, tail_nll)
    loss, head_nll = _LinearCrossEntropy.apply(x, softmax.head.weight, head_target, dtype, scale, want_grad, ops)
    return sum(losses, loss), nll + head_nll


class LanguageModel(nn.Module):
    """The training biLM. model_cfg: the [model] section; softmax_cfg: [softmax]; vocab_size: rows
    of the softmax. lstm_impl: "fused" or "torch" (see the module docstring); gemm_dtype:
    torch.float32 or torch.bfloat16 for the fused LSTM's products; compile: run its recurrences as
    native ops, else with torch.compile'd steps (falls back to eager where neither is available:
    :func:`.recurrent.recurrence`). Raises PretrainConfigError (a ValueError) for an
    unknown lstm_impl, or bfloat16 with "torch"."""

    def __init__(self, model_cfg: dict, softmax_cfg: dict, vocab_size: int, lstm_impl: str = "fused",
                 gemm_dtype: torch.dtype = torch.float32, compile: bool = False):
        super().__init__()
        if lstm_impl not in LSTM_IMPLS:
            raise ElmoConfigError(f"lstm_impl = {lstm_impl!r}: expected one of {', '.join(LSTM_IMPLS)}")
        if lstm_impl == "torch" and gemm_dtype != torch.float32:
            raise ElmoConfigError("lstm_impl = 'torch' runs in float32 only; use 'fused' for bfloat16")
        self.lstm_impl, self.gemm_dtype = lstm_impl, gemm_dtype
        c = model_cfg
        self.n_layers = int(c["n_layers"])
        self.use_skip_connections = bool(c["use_skip_connections"])
        self.projection_dim = int(c["projection_dim"])
        self.lstm_dim = int(c["lstm_dim"])
        self.char_cnn = CharCNN(
            filters=c["filters"],
            char_dim=int(c["char_dim"]),
            n_highway=int(c["n_highway"]),
            projection_dim=self.projection_dim,
            activation=c["activation"],
        )
        P, C = self.projection_dim, self.lstm_dim

        def make_lstm():
            if lstm_impl == "torch":
                return nn.LSTM(P, C, proj_size=P, batch_first=True)
            lstm = ProjectedLSTM(P, C, P, gemm_dtype)
            if compile:
                lstm.cells = recurrence(gemm_dtype)
            return lstm

        self.forward_lstms = nn.ModuleList(make_lstm() for _ in range(self.n_layers))
        self.backward_lstms = nn.ModuleList(make_lstm() for _ in range(self.n_layers))
        self.dropout = nn.Dropout(float(c.get("dropout", 0.0)))
        cutoffs, _ = softmax_cutoffs(softmax_cfg["cutoffs"], vocab_size)
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(
            P, vocab_size, cutoffs=cutoffs, div_value=float(softmax_cfg["div_value"])
        )
        # the native ops (:mod:`.native`) where the LSTMs run on them, else None: then the char CNN's
        # convolutions (in training) and the softmax's loss run on them too (encode_types,
        # fused_adaptive_nll)
        cells = self.forward_lstms[0].cells if lstm_impl == "fused" else None
        self.native_ops = cells.ops if isinstance(cells, NativeRecurrence) else None
        # Data-parallel training (:mod:`.distributed`): every tail cluster joins each loss's graph
        # (with weight 0 when no target falls in it), and the clusters that had targets since the
        # last reset are recorded, so DDP needs no search for unused parameters.
        self.all_clusters_in_graph = False
        self.clusters_used: Optional[torch.Tensor] = None

    def _touch_unused_clusters(self, target: torch.Tensor) -> torch.Tensor:
        """0 (a float32 scalar on the graph) times the parameters of each tail cluster without a
        target in ``target``: their gradients become exact zeros instead of None, as DDP's
        averaging treats a parameter unused on one rank. ORs the clusters with targets into
        ``clusters_used`` ((n_clusters,) bool)."""
        cut = self.softmax.cutoffs
        used = torch.stack([((target >= cut[i]) & (target < cut[i + 1])).any()
                            for i in range(len(self.softmax.tail))])
        self.clusters_used = used if self.clusters_used is None else self.clusters_used | used
        zero = target.new_zeros((), dtype=torch.float32)
        for i in (~used).nonzero().flatten().tolist():
            zero = zero + sum(p.sum() for p in self.softmax.tail[i].parameters()) * 0.0
        return zero

    def options(self) -> dict:
        """options.json of the exported biLM (bilm-tf layout)."""
        cnn = self.char_cnn
        return {
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "use_skip_connections": self.use_skip_connections,
                "cell_clip": None,
                "proj_clip": None,
            },
            "char_cnn": {
                "embedding": {"dim": cnn.char_embedding.embedding_dim},
                "filters": [[w, n] for w, n in cnn.filters],
                "n_highway": len(cnn.highways),
                "activation": cnn.activation,
                "n_characters": N_CHARACTERS,
                "max_characters_per_token": MAX_CHARS,
            },
        }

    @property
    def device(self) -> torch.device:
        """The device of the parameters."""
        return self.char_cnn.projection.weight.device

    def _autocast(self):
        """bfloat16 autocast for the char CNN and the softmax when the LSTMs use bfloat16 products
        (their log-softmax still runs in float32: torch's autocast policy); a no-op otherwise."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.gemm_dtype == torch.bfloat16)

    def _run_lstms(self, x_f: torch.Tensor, x_b: torch.Tensor):
        """x_f, x_b (B, T, P) left-aligned (trailing padding cannot reach earlier positions) ->
        the top layer's outputs of the forward and the backward LM, (B, T, P) each."""
        h_f, h_b = x_f, x_b
        for i, (lstm_f, lstm_b) in enumerate(zip(self.forward_lstms, self.backward_lstms)):
            in_f, in_b = self.dropout(h_f), self.dropout(h_b)
            if self.lstm_impl == "torch":
                out_f, out_b = lstm_f(in_f)[0], lstm_b(in_b)[0]
            else:
                out_f, out_b = run_layers([lstm_f, lstm_b], [in_f, in_b])
            if self.use_skip_connections and i > 0:
                out_f, out_b = out_f + h_f, out_b + h_b
            h_f, h_b = out_f, out_b
        return self.dropout(h_f), self.dropout(h_b)

    def forward(
        self,
        char_ids: torch.Tensor,
        fwd_inputs: torch.Tensor,
        bwd_inputs: torch.Tensor,
        fwd_targets: torch.Tensor,
        bwd_targets: torch.Tensor,
    ) -> Dict[str, torch.Tensor]:
        """One batch.

        char_ids (U, 50) int64: the distinct types of the batch.
        fwd_inputs / bwd_inputs (B, T) int64: row indices into char_ids, -1 = padding.
        fwd_targets / bwd_targets (B, T) int64: softmax word ids, -1 = padding.
        Returns {"loss": mean NLL over both directions, "fwd_nll": sum, "bwd_nll": sum,
        "fwd_count": n, "bwd_count": n} (nats).
        """
        native = self.native_ops if char_ids.device.type == "cpu" else None
        with self._autocast():
            if native is not None and torch.is_grad_enabled():
                # convolutions in float32 (with bfloat16 ones, the max's winner is often a near-tie's
                # wrong one: measured 13% vs 1.7% gradient error); highway and projection autocast
                types = encode_types(self.char_cnn, char_ids, torch.float32, native).float()
            else:
                types = self.char_cnn(char_ids).float()
        types = torch.cat([types, types.new_zeros(1, types.shape[1])])
        pad = types.shape[0] - 1
        x_f = types[torch.where(fwd_inputs >= 0, fwd_inputs, pad)]
        x_b = types[torch.where(bwd_inputs >= 0, bwd_inputs, pad)]
        h_f, h_b = self._run_lstms(x_f, x_b)
        mask_f, mask_b = fwd_targets >= 0, bwd_targets >= 0
        outs = [h_f[mask_f], h_b[mask_b]]
        targets = [fwd_targets[mask_f], bwd_targets[mask_b]]
        n_fwd = targets[0].shape[0]
        x, target = torch.cat(outs), torch.cat(targets)
        if native is not None and target.shape[0]:
            loss, nll = fused_adaptive_nll(self.softmax, x, target, self.gemm_dtype, native)
        else:
            with self._autocast():
                nll = adaptive_nll(self.softmax, x, target)
            loss = nll.mean()
        if self.all_clusters_in_graph and torch.is_grad_enabled():
            loss = loss + self._touch_unused_clusters(target)
        return {
            "loss": loss,
            "fwd_nll": nll[:n_fwd].sum().detach(),
            "bwd_nll": nll[n_fwd:].sum().detach(),
            "fwd_count": n_fwd,
            "bwd_count": nll.shape[0] - n_fwd,
        }
