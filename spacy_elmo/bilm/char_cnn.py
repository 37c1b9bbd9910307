"""The context-independent token encoder of ELMo: char embedding, convolutions, max-pool,
activation, highway layers, linear projection (Peters et al. 2018, section 3.4; Kim et al. 2016;
bilm-tf ``bilm/model.py`` ``_build_word_char_embeddings``).

Shapes: input id rows (..., width) int64 from the model's indexer (:mod:`.indexer`; bilm-tf's
byte ids, width 50, see :mod:`.chars`), output (..., proj) float32. The parameters are laid out
for speed in PyTorch; :mod:`.weights` maps them to and from the bilm-tf file layout.

With a word embedding (ELMoForManyLangs models, ``word_dim`` > 0) the id row carries the word id
(+1) in one more column, and the projection reads ``[word vector; highway output]``
(``ConvTokenEmbedder`` of ``elmoformanylangs/modules/token_embedder.py``).
"""
from typing import List, Sequence, Tuple

import torch
from torch import nn

from ..errors import ElmoConfigError, ElmoDataError
from . import int8, onednn
from .chars import MAX_CHARS, N_CHARACTERS, PAD_ID, char_lengths

# Tokens per convolution call: tokens are sorted by length and cut into chunks of this size, so
# each chunk's convolutions skip the padding positions that none of its tokens reaches.
CHUNK = 256
# Rows (tokens x window positions) of one convolution product: each filter reads a chunk in groups
# of whole tokens of at most this many rows, so every full group runs on the same row count and
# the number of distinct product shapes (each one a cached oneDNN primitive, see
# :mod:`.onednn`) stays small; the last group of a chunk is rounded up to a row bucket of at
# least CONV_LEAST_ROWS rows.
CONV_ROWS = 1024
CONV_LEAST_ROWS = 64


def _int8_dense(x: torch.Tensor, weight: "int8.QWeight", bias: torch.Tensor) -> torch.Tensor:
    """x (m, in) float32 @ W + bias through :func:`.int8.linear` (x quantized per row)."""
    return int8.linear(int8.quantize_rows(x), weight, bias)


class Highway(nn.Module):
    """bilm-tf's highway layer (Srivastava et al. 2015):

        carry = sigmoid(x W_carry + b_carry)
        transform = relu(x W_transform + b_transform)
        y = carry * transform + (1 - carry) * x

    (bilm-tf names the gate that multiplies the transform "carry"; we keep its names.)
    ``linear`` holds [W_transform; W_carry] as one (2 * dim, dim) matrix so that one GEMM computes both.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.linear = nn.Linear(dim, 2 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gate(self.linear(x), x)

    def gate(self, projected: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """The element-wise part, given ``projected`` = x W + b (..., 2 * dim)."""
        transform, carry = projected.split(self.dim, dim=-1)
        carry = torch.sigmoid(carry)
        return carry * torch.relu(transform) + (1.0 - carry) * x


class CharCNN(nn.Module):
    """Char CNN token encoder.

    filters: list of [width, n_filters]; activation: "relu" or "tanh" (applied after the max over
    positions, as bilm-tf does); n_highway highway layers; projection to ``projection_dim``.
    n_characters: char embedding rows (row 0 = "no token", zeros); max_characters_per_token: M,
    the char positions of a row; pad_id: the padding char id (bilm-tf's 261); word_dim / n_words:
    an optional word embedding (n_words + 1 rows, row 0 zeros) read from column M of the rows.
    The defaults are bilm-tf's.
    """

    def __init__(
        self,
        filters: Sequence[Sequence[int]],
        char_dim: int,
        n_highway: int,
        projection_dim: int,
        activation: str = "relu",
        n_characters: int = N_CHARACTERS,
        max_characters_per_token: int = MAX_CHARS,
        pad_id: int = PAD_ID,
        word_dim: int = 0,
        n_words: int = 0,
    ) -> None:
        super().__init__()
        if activation not in ("relu", "tanh"):
            raise ElmoConfigError(f"char_cnn.activation must be 'relu' or 'tanh', got {activation!r}")
        if not 0 < pad_id < n_characters:
            raise ElmoConfigError(f"char_cnn pad_id must be in 1..{n_characters - 1}, got {pad_id}")
        self.max_chars, self.pad_id, self.word_dim = int(max_characters_per_token), int(pad_id), int(word_dim)
        self.filters: List[Tuple[int, int]] = [(int(w), int(n)) for w, n in filters]
        self.activation = activation
        self.n_filters = sum(n for _, n in self.filters)
        self.max_width = max(w for w, _ in self.filters)
        self.projection_dim = projection_dim
        self.char_embedding = nn.Embedding(n_characters, char_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, n, w) for w, n in self.filters)
        self.highways = nn.ModuleList(Highway(self.n_filters) for _ in range(n_highway))
        if self.word_dim:
            self.word_embedding = nn.Embedding(n_words + 1, self.word_dim, padding_idx=0)
        self.projection = nn.Linear(self.word_dim + self.n_filters, projection_dim)
        self._packed = onednn.PackedCache()
        # dtype of the products' operands without autograd: float32 (exact) or, set by
        # BiLM(precision=...), bfloat16 / float16 (see _encode; not exact)
        self.gemm_dtype = torch.float32

    def __getstate__(self):  # deepcopy / pickle: drop the packed weight copies
        state = self.__dict__.copy()
        state["_packed"] = onednn.PackedCache()
        return state

    @classmethod
    def from_options(cls, options: dict, pad_id: int = PAD_ID) -> "CharCNN":
        """Build from the ``char_cnn`` section of options.json plus ``lstm.projection_dim`` and
        the ``vocab`` section's word embedding, if any; ``pad_id``: the indexer's padding id."""
        c, vocab = options["char_cnn"], options.get("vocab") or {}
        return cls(
            filters=c["filters"],
            char_dim=c["embedding"]["dim"],
            n_highway=c["n_highway"],
            projection_dim=options["lstm"]["projection_dim"],
            activation=c.get("activation", "relu"),
            n_characters=c.get("n_characters", N_CHARACTERS),
            max_characters_per_token=c.get("max_characters_per_token", MAX_CHARS),
            pad_id=pad_id,
            word_dim=vocab.get("word_dim", 0),
            n_words=vocab.get("n_words", 0),
        )

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        """char_ids (..., 50) int64 -> token vectors (..., projection_dim) float32.

        Exact shortcut: positions past the longest token are padding in every row, and every
        all-padding window of a filter gives the same value; so a filter of width w runs only
        over the first ``longest + w`` positions (capped at M), which keeps one all-padding
        window whenever the full input had one. The max is unchanged. More than ``CHUNK`` tokens
        are sorted by length and run in near-equal chunks of at most ``CHUNK``, so that short
        tokens skip more positions (and, in the oneDNN path, products have few distinct shapes).
        """
        lead = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.shape[-1])
        n = flat.shape[0]
        if n == 0:
            return flat.new_zeros((*lead, self.projection_dim), dtype=self.projection.weight.dtype)
        if flat.shape[-1] != self.max_chars + (1 if self.word_dim else 0):
            raise ElmoDataError(f"id rows must have {self.max_chars + (1 if self.word_dim else 0)} columns, "
                                f"got {flat.shape[-1]}")
        lengths = char_lengths(flat[:, : self.max_chars], self.pad_id)
        if n <= CHUNK:
            out = self._encode(flat, int(lengths.max()))
        else:
            order = torch.argsort(lengths, stable=True)
            out = self.projection.weight.new_empty(n, self.projection_dim)
            size = -(-n // -(-n // CHUNK))  # ceil(n / chunks): near-equal chunks of <= CHUNK tokens
            for start in range(0, n, size):
                rows = order[start: start + size]
                out[rows] = self._encode(flat[rows], int(lengths[rows[-1]])).to(out.dtype)  # bf16 under autocast
        return out.reshape(*lead, self.projection_dim)

    def _encode(self, flat: torch.Tensor, longest: int) -> torch.Tensor:
        """(T, width) ids whose longest token has ``longest`` non-padding positions -> (T, proj)."""
        grad = torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters())
        fast = onednn.available(flat.device, self.projection.weight.dtype) and not grad
        lowp = self.gemm_dtype != torch.float32 and self.projection.weight.dtype == torch.float32 and not grad
        if lowp and self.gemm_dtype == torch.int8:  # precision "int8": resolved only where oneDNN runs it
            return self._encode_onednn(flat, longest, quantized=True)
        if lowp and fast and self.gemm_dtype == torch.bfloat16:
            return self._encode_onednn_bf16(flat, longest)
        if lowp:  # GPU (or CPU without oneDNN): autocast; float32 result
            with torch.autocast(flat.device.type, dtype=self.gemm_dtype):
                return self._encode_nn(flat, longest).float()
        if fast:
            return self._encode_onednn(flat, longest)
        return self._encode_nn(flat, longest)

    def _encode_nn(self, flat: torch.Tensor, longest: int) -> torch.Tensor:
        """The plain torch path of :meth:`_encode` (nn.Conv1d, nn.Linear): autograd, GPU, float64."""
        keep = min(self.max_chars, longest + self.max_width)
        emb = self.char_embedding(flat[:, :keep]).transpose(1, 2)  # (T, char_dim, keep)
        pooled = [conv(emb).amax(dim=-1) for conv in self.convs]
        x = torch.cat(pooled, dim=-1)
        x = torch.relu(x) if self.activation == "relu" else torch.tanh(x)
        for highway in self.highways:
            x = highway(x)
        return self.projection(self._with_words(x, flat))

    def _with_words(self, x: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
        """The projection's input: x itself, or [word vectors of column M; x] with a word embedding."""
        if not self.word_dim:
            return x
        return torch.cat([self.word_embedding(flat[:, self.max_chars]).to(x.dtype), x], dim=-1)

    def _packed_weights(self, quantized: bool = False):
        """oneDNN copies: per conv (width * char_dim, n) [tap-major], per highway, projection
        (with ``quantized``, the highway and projection weights as int8 :class:`.int8.QWeight`)."""
        dense = int8.quantize_weight if quantized else onednn.pack

        def build():
            convs = [onednn.pack(c.weight.permute(2, 1, 0).reshape(-1, c.out_channels)) for c in self.convs]
            highways = [dense(h.linear.weight.t()) for h in self.highways]
            return convs, highways, dense(self.projection.weight.t())

        return self._packed.get(list(self.parameters()), build, tag="int8" if quantized else None)

    def _encode_onednn(self, flat: torch.Tensor, longest: int, quantized: bool = False) -> torch.Tensor:
        """Same arithmetic as the nn.Conv1d path, as GEMMs over unfolded windows (im2col) with
        pre-packed oneDNN weights (:meth:`_conv_max`); the bias is added after the max (rounding
        is monotonic, so max(x + b) == max(x) + b exactly).

        ``quantized`` (precision "int8", not exact): the highway and projection products in int8
        (:func:`.int8.linear`: inputs quantized per token, weights per output channel, int32
        accumulation; at the original size ~7x the float32 highway product); the convolutions,
        max-pool, activation and highway gates stay float32."""
        convs, highways, projection = self._packed_weights(quantized)
        dense = _int8_dense if quantized else onednn.linear
        T = flat.shape[0]
        emb = self.char_embedding(flat[:, : min(self.max_chars, longest + self.max_width)])  # (T, keep, d)
        pooled = emb.new_empty(T, self.n_filters)
        col = 0
        for (w, n), conv, packed in zip(self.filters, self.convs, convs):
            keep = min(self.max_chars, longest + w)
            out = pooled[:, col: col + n]
            self._conv_max(emb[:, :keep], w, packed, out)
            out.add_(conv.bias)
            col += n
        x = torch.relu_(pooled) if self.activation == "relu" else torch.tanh_(pooled)
        for highway, packed in zip(self.highways, highways):
            x = highway.gate(dense(x, packed, highway.linear.bias), x)
        return dense(self._with_words(x, flat), projection, self.projection.bias)

    def _packed_weights_bf16(self):
        """:meth:`_packed_weights` as bfloat16 copies (replacing any float32 ones in the cache)."""
        def build():
            bf16 = torch.bfloat16
            convs = [onednn.pack(c.weight.permute(2, 1, 0).reshape(-1, c.out_channels), dtype=bf16) for c in self.convs]
            highways = [onednn.pack(h.linear.weight.t(), dtype=bf16) for h in self.highways]
            return convs, highways, onednn.pack(self.projection.weight.t(), dtype=bf16)

        return self._packed.get(list(self.parameters()), build, tag=torch.bfloat16)

    def _encode_onednn_bf16(self, flat: torch.Tensor, longest: int) -> torch.Tensor:
        """:meth:`_encode_onednn` with bfloat16 products (not exact): the char embeddings and the
        inputs of the highway and projection layers are rounded to bfloat16, the weights packed
        as bfloat16; products accumulate in float32 and return bfloat16. The max over positions
        runs on those bfloat16 results; biases, activation, highway gates and the output are
        float32. (T, 50) ids -> (T, proj) float32."""
        bf16 = torch.bfloat16
        convs, highways, projection = self._packed_weights_bf16()
        T = flat.shape[0]
        emb = self.char_embedding(flat[:, : min(self.max_chars, longest + self.max_width)]).to(bf16)
        pooled16 = emb.new_empty(T, self.n_filters)
        col = 0
        for (w, n), packed in zip(self.filters, convs):
            keep = min(self.max_chars, longest + w)
            self._conv_max(emb[:, :keep], w, packed, pooled16[:, col: col + n])
            col += n
        pooled = pooled16.float()
        col = 0
        for (w, n), conv in zip(self.filters, self.convs):
            pooled[:, col: col + n].add_(conv.bias)
            col += n
        x = torch.relu_(pooled) if self.activation == "relu" else torch.tanh_(pooled)
        for highway, packed in zip(self.highways, highways):
            x = highway.gate(onednn.linear(x.to(bf16), packed).float().add_(highway.linear.bias), x)
        return onednn.linear(self._with_words(x, flat).to(bf16), projection).float().add_(self.projection.bias)

    @staticmethod
    def _conv_max(emb: torch.Tensor, w: int, packed: torch.Tensor, out: torch.Tensor) -> None:
        """Write into ``out`` (T, n) the max over positions of the width-``w`` windows of ``emb``
        (T, keep, d) float32 (or bfloat16, with ``out`` and the packed filter bfloat16) times the
        packed (w * d, n) filter (no bias): tokens in groups of at most CONV_ROWS // (keep - w + 1)
        whole tokens, each group's window matrix written into a row-bucket buffer
        (:func:`.onednn.row_buffer`)."""
        T, keep, d = emb.shape
        pos = keep - w + 1
        windows = emb.unfold(1, w, 1).transpose(2, 3)  # (T, pos, w, d), a view
        group = max(1, CONV_ROWS // pos)
        for t0 in range(0, T, group):
            t1 = min(T, t0 + group)
            rows = (t1 - t0) * pos
            buf = onednn.row_buffer(rows, w * d, emb, least=CONV_LEAST_ROWS)
            buf[:rows].view(t1 - t0, pos, w, d).copy_(windows[t0:t1])
            y = onednn.linear(buf, packed)[:rows].view(t1 - t0, pos, -1)
            torch.amax(y, dim=1, out=out[t0:t1])
