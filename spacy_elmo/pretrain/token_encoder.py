"""The char CNN (:class:`spacy_elmo.bilm.char_cnn.CharCNN`) as the trainer runs it on the native ops
(:mod:`spacy_elmo.bilm.native`): same parameters, same function, a faster backward.

Each filter's convolution is one product over the unfolded windows of a chunk of tokens (in the
given dtype; the trainer uses float32), and its max over positions keeps the position of each
maximum (``max_positions``). The backward then sends each filter's gradient to the
one window that won (``conv_max_backward``): T x n_filters x (width x char_dim) multiply-adds,
instead of a dense (T, n, positions) gradient through ``amax`` and a convolution's backward.
Ties go to the first position (``amax`` would share the gradient among them: both are
subgradients of the max). In float32 ties are rare, except among all-padding windows, whose
input is the zero padding embedding; in bfloat16 near-ties round to ties, and the first is often
not the true winner: measured on a batch of the corpus (885 types, random weights), the
convolution weights' gradient was 13% (RMS, relative) off the float32 one with bfloat16 products
here, 5-6% under autocast with ``amax``, 1.7% with float32 products here (the highway and
projection layers under bfloat16 autocast in all three). Hence float32 for the trainer.

The chunking is :meth:`CharCNN.forward`'s: tokens sorted by length, near-equal chunks of at most
``CHUNK``, each convolution only over the positions its longest token reaches. The bias, the
activation, the highway layers and the projection run as in :meth:`CharCNN._encode_nn` (under the
caller's autocast); the biases are added after the max (exact: max(x + b) = max(x) + b).
"""
from typing import List

import torch
from torch.nn import functional as F

from ..bilm.char_cnn import CHUNK, CharCNN
from ..bilm.chars import char_lengths


class _ConvMax(torch.autograd.Function):
    """forward(emb (T, K, d) float32, longest, dtype, ops, *weights (n_i, d, w_i) float32) ->
    (T, sum n_i) float32: per filter the max over the positions of the convolution (no bias) of
    emb's first min(K, longest + w_i) positions, with products in ``dtype``."""

    @staticmethod
    def forward(ctx, emb, longest: int, dtype, ops, *weights):
        T, K, d = emb.shape
        emb_low = emb.to(dtype).contiguous()
        values, indices, filters = [], [], []
        for weight in weights:
            n, _, w = weight.shape
            keep = min(K, longest + w)
            windows = emb_low[:, :keep].unfold(1, w, 1).transpose(2, 3)  # (T, pos, w, d), a view
            pos = windows.shape[1]
            wt = weight.permute(0, 2, 1).reshape(n, w * d).to(dtype)  # row c: taps, then channels
            with torch.autocast(emb.device.type, enabled=False):  # the product runs in `dtype`
                y = torch.mm(windows.reshape(T * pos, w * d), wt.t()).view(T, pos, n)
            v, ix = ops.max_positions(y)
            values.append(v)
            indices.append(ix)
            filters.append(wt.contiguous())
        ctx.save_for_backward(emb_low, *indices, *filters)
        ctx.ops, ctx.n_filters = ops, len(weights)
        ctx.shapes = [tuple(w.shape) for w in weights]
        return torch.cat(values, 1)

    @staticmethod
    def backward(ctx, d_out):
        emb_low, *rest = ctx.saved_tensors
        k = ctx.n_filters
        indices, filters = rest[:k], rest[k:]
        d_emb = torch.zeros(emb_low.shape, dtype=torch.float32, device=emb_low.device)
        d_weights: List[torch.Tensor] = []
        col = 0
        for ix, wt, (n, d, w) in zip(indices, filters, ctx.shapes):
            g = d_out[:, col: col + n].float().contiguous()
            d_wt = ctx.ops.conv_max_backward(g, ix, emb_low, wt, d_emb)
            d_weights.append(d_wt.view(n, w, d).permute(0, 2, 1).contiguous())
            col += n
        return (d_emb, None, None, None, *d_weights)


def encode_types(cnn: CharCNN, char_ids: torch.Tensor, dtype: torch.dtype, ops) -> torch.Tensor:
    """``cnn(char_ids)`` for training: char_ids (U, 50) int64 -> (U, projection_dim) float32 (or
    the caller's autocast dtype), with autograd, the convolutions and their max on the native ops."""
    n = char_ids.shape[0]
    if n == 0:
        return cnn(char_ids)
    lengths = char_lengths(char_ids)
    bias = torch.cat([conv.bias for conv in cnn.convs])
    weights = [conv.weight for conv in cnn.convs]

    def encode(ids: torch.Tensor, longest: int) -> torch.Tensor:
        keep = min(ids.shape[1], longest + cnn.max_width)
        emb = cnn.char_embedding(ids[:, :keep])
        x = _ConvMax.apply(emb, longest, dtype, ops, *weights) + bias
        x = F.relu(x) if cnn.activation == "relu" else torch.tanh(x)
        for highway in cnn.highways:
            x = highway(x)
        return cnn.projection(x)

    if n <= CHUNK:
        return encode(char_ids, int(lengths.max()))
    order = torch.argsort(lengths, stable=True)
    out = None
    size = -(-n // -(-n // CHUNK))  # near-equal chunks of <= CHUNK tokens, as CharCNN.forward
    for start in range(0, n, size):
        rows = order[start: start + size]
        part = encode(char_ids[rows], int(lengths[rows[-1]]))
        if out is None:
            out = part.new_empty(n, part.shape[1])
        out[rows] = part
    return out
