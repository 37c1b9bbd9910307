"""The biLM as trained: :class:`spacy_elmo.bilm.BiLM` (char CNN, highway, LSTMs) plus a softmax
head (:class:`SoftmaxHead`) shared by both directions.

Training objective (Peters et al. 2018, section 3.1): maximise
    sum_k log p(t_k | t_1..t_{k-1}) + log p(t_k | t_{k+1}..t_N)
with the token representation (char CNN) and the softmax shared by both directions and separate
LSTMs. Sentences are [<S>, t_1..t_N, </S>]: the forward LM reads <S>..t_N and predicts
t_1..</S>; the backward LM reads </S>..t_1 and predicts t_N..<S>.

The biLM is the inference module itself: the same parameters, options (cell and projection
clipping, skip connections) and LSTM (:class:`spacy_elmo.bilm.lstm.ElmoLstm`, run on the path
:func:`spacy_elmo.bilm.lstm_paths.choose` picks under autograd), so a checkpoint's biLM is
written with :meth:`BiLM.save <spacy_elmo.bilm.BiLM.save>` and any biLM that
``BiLM.from_pretrained`` loads can be trained further (:mod:`.train`, ``[training] init_from``).
``lstm_impl`` picks how it runs:

- ``"fused"`` (default): the LSTMs on the training path (:mod:`spacy_elmo.bilm.lstm_train`,
  products in ``gemm_dtype``: float32, or bfloat16 on CPUs that have it:
  :func:`.hardware.resolve_precision`); with the native ops (:mod:`spacy_elmo.bilm.native`,
  ``compile`` true, on CPU) the LSTMs' recurrence, the char CNN's convolutions
  (:func:`.token_encoder.encode_types`) and the softmax's loss (:func:`fused_adaptive_nll`) run
  as C++ ops;
- ``"torch"``: plain torch modules under autograd (the LSTMs step by step), float32 (the reference).
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from torch import nn
from torch.nn import functional as F

from ..bilm import BiLM, lstm_train
from ..bilm.indexer import ByteIndexer
from ..bilm.options import BiLMOptions
from ..errors import ElmoConfigError
from .token_encoder import encode_types

LSTM_IMPLS = ("fused", "torch")


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
    ``cross_entropy_rows`` op (:mod:`spacy_elmo.bilm.native`): per chunk one product for the
    logits (in ``dtype``, as autocast runs it), one pass for the cross-entropy that overwrites
    them with their gradient ``scale * (softmax - onehot)``, rounded once to ``dtype`` (what
    autocast's backward feeds its products), and two products for the gradients of h and W, which are kept for backward
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


# The [model] keys of the pretraining config that shape the biLM: fields of BiLMOptions, the same
# names (options.json keeps them at spacy_elmo.bilm.options.JSON_KEYS).
MODEL_KEYS = ("char_dim", "filters", "n_highway", "activation", "lstm_dim", "projection_dim", "n_layers",
              "use_skip_connections")


def model_options(model_cfg: dict) -> dict:
    """options.json (bilm-tf layout) of a new biLM of the [model] section ``model_cfg``
    (:meth:`BiLMOptions.new <spacy_elmo.bilm.options.BiLMOptions.new>`): byte characters (as
    bilm-tf), no cell or projection clipping. Raises ElmoModelFileError (a ValueError) for a
    value options.json does not accept."""
    return BiLMOptions.new(**{key: model_cfg[key] for key in MODEL_KEYS}).to_json()


def model_config(options: dict) -> dict:
    """The [model] values (:data:`MODEL_KEYS`) of a biLM's options.json (the inverse of
    :func:`model_options` on these keys; ``activation`` defaults to "relu" and
    ``use_skip_connections`` to false, as in :mod:`spacy_elmo.bilm.options`)."""
    return BiLMOptions.from_json(options).fields(MODEL_KEYS)


def check_cross_entropy(ops, dtype: torch.dtype) -> None:
    """RuntimeError where the native ``cross_entropy_rows`` (of :func:`fused_adaptive_nll`)
    disagrees with torch's cross-entropy, loss or gradient (7 rows of 50 logits in ``dtype``;
    tolerance 1e-5 in float32, 1e-2 in bfloat16)."""
    gen = torch.Generator().manual_seed(1)
    logits = (torch.randn(7, 50, generator=gen) * 4).to(dtype)
    target = torch.randint(0, 50, (7,), generator=gen)
    ref = logits.float().requires_grad_(True)
    want = F.cross_entropy(ref, target, reduction="none")
    (want.sum() * 0.25).backward()
    got_grad = logits.clone()
    got = ops.cross_entropy_rows(got_grad, target, 0.25, True)
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    if not (torch.allclose(got, want.detach(), atol=tol, rtol=tol)
            and torch.allclose(got_grad.float(), ref.grad, atol=tol, rtol=tol)):
        raise RuntimeError(f"the native cross-entropy disagrees with torch's ({dtype})")


_LOSS_OPS: dict = {}


def native_ops():
    """The native ops of :mod:`spacy_elmo.bilm.native` for the char CNN and the fused loss: those
    of :func:`spacy_elmo.bilm.lstm_train.native_recurrence` (built on first use, the LSTM ops
    checked) whose cross-entropy also passes :func:`check_cross_entropy` in float32 and bfloat16,
    once per process; None where they cannot be built or disagree (a warning then says why)."""
    if "ops" not in _LOSS_OPS:
        native = lstm_train.native_recurrence()
        ops = None if native is None else native.ops
        if ops is not None and not lstm_train.passes_check(lambda dtype: check_cross_entropy(ops, dtype),
                                                           "native kernels"):
            ops = None
        _LOSS_OPS["ops"] = ops
    return _LOSS_OPS["ops"]


class SoftmaxHead(nn.AdaptiveLogSoftmaxWithLoss):
    """The language models' output layer, shared by both directions: an adaptive softmax (Grave et
    al. 2017, ``torch.nn.AdaptiveLogSoftmaxWithLoss``, no head bias) over ``vocab_size`` words
    for inputs of ``in_features`` (the biLM's projection_dim). softmax_cfg: the [softmax]
    section (``cutoffs``, kept where they fit: :func:`softmax_cutoffs`; ``div_value``). Its
    state dict is what ``lm_head.hdf5`` holds (:mod:`.export`)."""

    def __init__(self, in_features: int, vocab_size: int, softmax_cfg: dict):
        cutoffs, _ = softmax_cutoffs(softmax_cfg["cutoffs"], vocab_size)
        super().__init__(in_features, vocab_size, cutoffs=cutoffs, div_value=float(softmax_cfg["div_value"]))

    def settings(self) -> dict:
        """{"cutoffs", "div_value"}: the [softmax] values that rebuild this head's shapes."""
        return {"cutoffs": [int(c) for c in self.cutoffs[:-1]], "div_value": float(self.div_value)}

    def nll(self, x: torch.Tensor, target: torch.Tensor, dtype: torch.dtype, ops) -> Tuple[torch.Tensor, torch.Tensor]:
        """(mean NLL, differentiable; NLL per row (N,) float32, detached) of target (N,) int64
        given x (N, in_features) float32: fused (:func:`fused_adaptive_nll`, products in
        ``dtype``) with the native ``ops``, else :func:`adaptive_nll` under ``dtype``'s autocast."""
        if ops is not None and target.shape[0]:
            return fused_adaptive_nll(self, x, target, dtype, ops)
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            nll = adaptive_nll(self, x, target)
        return nll.mean(), nll.detach()


def _init_lstm(bilm: BiLM) -> None:
    """A new biLM's LSTM weights ~ U(-1/sqrt(C), 1/sqrt(C)) (torch.nn.LSTM's rule, that of the
    first trainer), biases 0 (bilm-tf's; the forget gate's 1.0 is added at run time)."""
    bound = bilm.lstm.dim ** -0.5
    with torch.no_grad():
        for name, p in bilm.lstm.named_parameters():
            p.zero_() if name.startswith("bias") else p.uniform_(-bound, bound)


class LanguageModel(nn.Module):
    """The training biLM: ``bilm`` (a :class:`~spacy_elmo.bilm.BiLM`, set to require grad) and
    ``softmax`` (a :class:`SoftmaxHead` of in_features = ``bilm.projection_dim``).

    dropout: probability on each LSTM layer's input and on the top layer's output (training
    mode only); lstm_impl: "fused" or "torch" (module docstring); gemm_dtype: torch.float32 or
    torch.bfloat16 for the products of the LSTMs' training path, the char CNN and the softmax
    with "fused"; ops: the native ops (:func:`native_ops`) or None; recurrence: the LSTMs'
    ``train_recurrence`` with "fused" (:data:`spacy_elmo.bilm.lstm_train.RECURRENCES`; "torch"
    runs them on the autograd path). Raises ElmoConfigError (a ValueError) for an unknown
    lstm_impl, bfloat16 with "torch", or a head whose in_features is not the biLM's projection_dim.
    """

    def __init__(self, bilm: BiLM, softmax: SoftmaxHead, dropout: float = 0.0, lstm_impl: str = "fused",
                 gemm_dtype: torch.dtype = torch.float32, ops=None, recurrence: str = "eager"):
        super().__init__()
        if lstm_impl not in LSTM_IMPLS:
            raise ElmoConfigError(f"lstm_impl = {lstm_impl!r}: expected one of {', '.join(LSTM_IMPLS)}")
        if lstm_impl == "torch" and gemm_dtype != torch.float32:
            raise ElmoConfigError("lstm_impl = 'torch' runs in float32 only; use 'fused' for bfloat16")
        if softmax.in_features != bilm.projection_dim:
            raise ElmoConfigError(f"the softmax head reads {softmax.in_features} features, the biLM gives "
                                      f"{bilm.projection_dim} (projection_dim)")
        self.lstm_impl, self.gemm_dtype = lstm_impl, gemm_dtype
        self.bilm = bilm.requires_grad_(True)
        bilm.lstm.train_recurrence = "autograd" if lstm_impl == "torch" else recurrence
        bilm.lstm.train_gemm_dtype = gemm_dtype
        self.softmax = softmax
        self.dropout = nn.Dropout(float(dropout))
        # native char CNN and loss: "fused" with byte characters (the native convolution reads
        # bilm-tf's 50 byte ids)
        use_native = lstm_impl == "fused" and isinstance(bilm.indexer, ByteIndexer)
        self.native_ops = ops if use_native else None
        # Data-parallel training (:mod:`.distributed`): every tail cluster joins each loss's graph
        # (with weight 0 when no target falls in it), and the clusters that had targets since the
        # last reset are recorded, so DDP needs no search for unused parameters.
        self.all_clusters_in_graph = False
        self.clusters_used: Optional[torch.Tensor] = None

    @classmethod
    def new(cls, options: dict, softmax_cfg: dict, vocab_size: int, **kwargs) -> "LanguageModel":
        """A randomly initialised model: a BiLM of ``options`` (e.g. :func:`model_options`; char
        CNN as torch initialises its layers, LSTMs as :func:`_init_lstm`) and a new head for
        ``vocab_size`` words. kwargs: as the constructor."""
        bilm = BiLM(options)
        _init_lstm(bilm)
        return cls(bilm, SoftmaxHead(bilm.projection_dim, vocab_size, softmax_cfg), **kwargs)

    def options(self) -> dict:
        """The biLM's options.json (bilm-tf layout)."""
        return self.bilm.options

    @property
    def projection_dim(self) -> int:
        return self.bilm.projection_dim

    @property
    def lstm_dim(self) -> int:
        return self.bilm.lstm.dim

    @property
    def device(self) -> torch.device:
        """The device of the parameters."""
        return self.bilm.device

    def char_table(self, types: Sequence[str]) -> numpy.ndarray:
        """(len(types), width) id rows of the biLM's indexer for the corpus types, whose first two
        are the sentence boundaries: their rows are the indexer's boundary rows (int16 for byte
        characters, as :func:`.corpus.type_char_ids`; else int64)."""
        from .corpus import type_char_ids

        if isinstance(self.bilm.indexer, ByteIndexer):
            return type_char_ids(types)
        return numpy.concatenate([self.bilm.indexer.boundary_ids(), self.bilm.indexer.ids(list(types[2:]))])

    def _autocast(self):
        """bfloat16 autocast for the char CNN with bfloat16 products; a no-op otherwise."""
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.gemm_dtype == torch.bfloat16)

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

    def _encode(self, char_ids: torch.Tensor) -> torch.Tensor:
        """char_ids (U, width) -> (U, P) float32 char-CNN vectors (native convolutions in training
        where the native ops run)."""
        native = self.native_ops if char_ids.device.type == "cpu" else None
        with self._autocast():
            if native is not None and torch.is_grad_enabled():
                # convolutions in float32 (with bfloat16 ones, the max's winner is often a near-tie's
                # wrong one: measured 13% vs 1.7% gradient error); highway and projection autocast
                return encode_types(self.bilm.char_cnn, char_ids, torch.float32, native).float()
            return self.bilm.char_cnn(char_ids).float()

    @staticmethod
    def _targets(targets: torch.Tensor, row, positions) -> List[torch.Tensor]:
        """Per direction (N,) int64: the word each packed output predicts (forward: the next
        position's, backward: the previous one's), -1 where there is none."""
        B, W = targets.shape
        padded = torch.nn.functional.pad(targets, (1, 1), value=-1).reshape(-1)  # (B * (W + 2),)
        base = torch.from_numpy(row * (W + 2) + 1).to(targets.device)
        return [padded[base + torch.from_numpy(positions[0] + 1).to(targets.device)],
                padded[base + torch.from_numpy(positions[1] - 1).to(targets.device)]]

    def forward(self, char_ids: torch.Tensor, index: torch.Tensor, targets: torch.Tensor) -> Dict[str, torch.Tensor]:
        """One batch (:func:`.batching.make_batch`).

        char_ids (2 + U, width) int64: rows 0 and 1 the sentence boundaries (<S>, </S>), then the
        distinct tokens of the batch; index (B, T) int64: row of the token in ``char_ids[2:]``,
        -1 = padding (after the tokens); targets (B, T + 2) int64: softmax word ids of
        <S> t_1 .. t_n </S>, -1 = padding.
        Returns {"loss": mean NLL over both directions, "fwd_nll": sum, "bwd_nll": sum,
        "fwd_count": n, "bwd_count": n} (nats).
        """
        vectors = self._encode(char_ids)
        dropout = self.dropout if self.training and self.dropout.p > 0 else None
        top, row, positions = self.bilm.forward_lm(vectors[2:], index, boundary=vectors[:2], dropout=dropout)
        top = self.dropout(top)
        want = self._targets(targets, row, positions)
        keep = [w >= 0 for w in want]
        x = torch.cat([top[0][keep[0]], top[1][keep[1]]])
        target = torch.cat([want[0][keep[0]], want[1][keep[1]]])
        n_fwd = int(keep[0].sum())
        loss, nll = self.softmax.nll(x, target, self.gemm_dtype, self.native_ops if x.device.type == "cpu" else None)
        if self.all_clusters_in_graph and torch.is_grad_enabled():
            loss = loss + self._touch_unused_clusters(target)
        return {
            "loss": loss,
            "fwd_nll": nll[:n_fwd].sum(),
            "bwd_nll": nll[n_fwd:].sum(),
            "fwd_count": n_fwd,
            "bwd_count": nll.shape[0] - n_fwd,
        }
