"""The ELMo biLM (Peters et al. 2018, section 3): char CNN token encoder + forward and backward
LSTM language models, with the weights of bilm-tf / AllenNLP.

Outputs follow AllenNLP's ``_ElmoBiLm``: layer 0 is the char-CNN token vector duplicated
``[x; x]``; layer l = 1..L is LSTM layer l's output ``[forward; backward]`` (after the residual
add when ``use_skip_connections``). ``<S>`` / ``</S>`` are added around every sentence for the
LSTMs and removed from the outputs (kept with ``forward(..., sentence_boundaries=True)``).

The model owns its token indexer (:attr:`BiLM.indexer`, :mod:`.indexer`): bilm-tf's byte ids, or
the learned character (and word) vocabulary of a converted ELMoForManyLangs model, whose
sentence boundaries are ``<bos>`` / ``<eos>``, whose char CNN may add a word embedding before its
projection, and whose LSTM layers have residual connections (``options.json`` format_version 2,
see :mod:`.options`).
"""
import os
from typing import List, NamedTuple, Optional, Sequence, Union

import numpy
import torch
from torch import nn

from ..errors import ElmoConfigError, ElmoDataError, ElmoTypeError
from . import integrity, resolver
from .batching import embed_batches
from .char_cnn import CharCNN
from .indexer import make_indexer
from .lstm import ElmoLstm
from .options import BiLMOptions, check_options, read_options, write_options
from .packing import pack
from .precision import Resolved, check_precision, resolve as resolve_precision
from .sizes import out_of_memory
from .weights import from_state_dict, read_vocab, read_weights, to_state_dict, write_vocab, write_weights


class BiLMOutput(NamedTuple):
    """layers: float32 (num_layers + 1, batch, max_len, 2 * projection_dim), zero at padding;
    mask: bool (batch, max_len), True at real tokens. With ``sentence_boundaries=True`` (see
    :meth:`BiLM.forward_indexed`) both have max_len + 2 positions and include ``<S>`` / ``</S>``."""

    layers: torch.Tensor
    mask: torch.Tensor


class BiLM(nn.Module):
    """ELMo biLM. ``BiLM(options)`` builds a randomly initialised model from an options dict or a
    :class:`~.options.BiLMOptions` (see :mod:`.options`); :meth:`from_files` loads bilm-tf /
    AllenNLP files.

    Stateless by default: a sentence's vectors do not depend on the rest of the batch or on
    earlier calls. With ``stateful=True``, :meth:`forward` starts each row's LSTMs from the final
    state of the same row in the previous call (bilm-tf / AllenNLP behaviour; rows beyond the
    stored batch start from zeros, stored rows beyond the current batch are kept) until
    :meth:`reset_states`. :meth:`embed_sentences` is always stateless.

    Parameters are frozen (``requires_grad=False``); call ``requires_grad_(True)`` to train, which
    makes :meth:`forward` use the (slower) autograd-friendly LSTM path. The module is in eval mode.
    Attributes: ``spec`` (:class:`~.options.BiLMOptions`), ``options`` (its options.json object,
    ``spec.to_json()``), ``indexer`` (token strings -> id rows, see
    :mod:`.indexer`), ``num_layers``, ``projection_dim``, ``output_dim`` (2P).

    ``precision``: "float32" (default, exact), "bfloat16" or "int8" (opt-in, inference without
    autograd). bfloat16: the matrix products read bfloat16 operands and accumulate in float32,
    everything element-wise and the outputs stay float32; on a CPU without AVX512-BF16 / AMX it
    falls back to float32 with a warning, on CUDA it uses autocast (bfloat16, or float16 where
    unsupported). int8 (CPU): the LSTM, highway and token projection products in int8 with int32
    accumulation (per-channel weights, per-row activations; :mod:`.int8`); float32 with a warning
    on a CPU without VNNI / AMX-INT8 and on other devices. See :mod:`.precision`. Settable later
    (``bilm.precision = "int8"``); not saved in the files.
    """

    def __init__(self, options: Union[dict, BiLMOptions], stateful: bool = False, precision: str = "float32") -> None:
        super().__init__()
        self._precision = check_precision(precision, "BiLM precision")
        self._resolved = {}  # device type -> precision.Resolved (resolved on first use there)
        self.spec = options if isinstance(options, BiLMOptions) else BiLMOptions.from_json(options)
        self.options = self.spec.to_json()
        self.indexer = make_indexer(self.options)
        self.char_cnn = CharCNN.from_options(self.options, pad_id=self.indexer.pad_id)
        self.lstm = ElmoLstm.from_options(self.options)
        self.num_layers = self.lstm.n_layers
        self.projection_dim = self.lstm.projection_dim
        self.output_dim = 2 * self.projection_dim
        self.stateful = stateful
        self._state = None  # (h (L, 2, B, P), c (L, 2, B, C)), original row order
        self.requires_grad_(False)
        self.eval()

    def __getstate__(self):  # copies and pickles resolve the precision again where they are used
        state = self.__dict__.copy()
        state["_resolved"] = {}
        return state

    @property
    def precision(self) -> str:
        """The requested precision, "float32", "bfloat16" or "int8" (see :attr:`effective_precision`)."""
        return self._precision

    @precision.setter
    def precision(self, value: str) -> None:
        self._precision = check_precision(value, "BiLM precision")
        self._resolved = {}
        self.char_cnn.gemm_dtype = self.lstm.gemm_dtype = torch.float32

    @property
    def effective_precision(self) -> str:
        """What the products run in on the parameters' device: "float32", "bfloat16", "float16" or
        "int8" (resolving, and warning about a fallback, on first use there)."""
        return self._apply_precision(self.device).name

    def _apply_precision(self, device: torch.device) -> Resolved:
        resolved = self._resolved.get(device.type)
        if resolved is None:
            resolved = self._resolved[device.type] = resolve_precision(self._precision, device)
        self.char_cnn.gemm_dtype = self.lstm.gemm_dtype = resolved.gemm_dtype
        return resolved

    @classmethod
    def from_files(cls, options_file: Union[str, os.PathLike], weight_file: Union[str, os.PathLike],
                   stateful: bool = False, precision: str = "float32") -> "BiLM":
        """Load ``options.json`` and a bilm-tf/AllenNLP ``weights.hdf5`` (float32 or float16).
        ``precision``: see the class docstring.

        Raises :class:`~spacy_elmo.errors.ElmoModelFileError` (a ValueError) naming the file and dataset for a
        missing/non-HDF5/truncated file, a missing dataset, a shape that disagrees with the options,
        bad options, or a file whose sha256 differs from the one recorded beside it
        (:mod:`.integrity`; files without a recorded digest load unchecked), or options that imply
        more than 374,403,392 parameters (4x the original ELMo), vocabularies included (checked
        before any allocation; set $SPACY_ELMO_MAX_PARAMS to raise the limit, see
        :func:`.sizes.check_size`). :class:`~spacy_elmo.errors.ElmoMemoryError` (a ValueError and a
        MemoryError) for a model larger than the physical memory, and for a MemoryError while
        loading.
        """
        for path in (options_file, weight_file):
            if os.path.isfile(path):
                integrity.verify(path)
        options = read_options(options_file)
        weight_file = os.fspath(weight_file)
        with out_of_memory(weight_file, options):
            vocab = options.get("vocab")
            if vocab is not None and vocab.get("chars") is None:  # format_version 2: stored in the weights
                vocab.update(read_vocab(weight_file, options))
                options = check_options(options, options_file)
            arrays = read_weights(weight_file, options)
            sd = {k: torch.from_numpy(v) for k, v in to_state_dict(arrays, options, consume=True).items()}
            return cls.from_state_dict(options, sd, stateful=stateful, precision=precision)

    @classmethod
    def from_state_dict(cls, options: dict, state_dict: dict, stateful: bool = False,
                        precision: str = "float32") -> "BiLM":
        """Build from options and a complete ``state_dict`` of float32 tensors, without random
        init (the parameters become the given tensors). Raises RuntimeError on missing or
        mismatched keys (``load_state_dict(strict=True)``)."""
        with torch.device("meta"):
            bilm = cls(options, stateful=stateful, precision=precision)
        bilm.load_state_dict(state_dict, strict=True, assign=True)
        bilm.requires_grad_(False)
        return bilm

    @classmethod
    def from_pretrained(cls, name_or_path: Optional[str] = None, stateful: bool = False,
                        precision: str = "float32") -> "BiLM":
        """Load a model by name: shipped in the package (None or ``spacy_elmo.DEFAULT_MODEL`` =
        "en_elmo_small") or downloaded into the cache with ``python -m spacy_elmo download NAME``
        (e.g. "elmo-original"), or a directory holding ``options.json`` + ``weights.hdf5``. Nothing
        is downloaded here; names resolve through :mod:`.resolver` (:mod:`spacy_elmo.hub.resolve`).

        Raises FileNotFoundError if there is no such model (for a catalog name not yet
        downloaded, the message gives the download command);
        :class:`~spacy_elmo.errors.ElmoModelFileError` if its files are malformed or fail their sha256.
        """
        options_file, weight_file = resolver.model_files(name_or_path)
        return cls.from_files(options_file, weight_file, stateful=stateful, precision=precision)

    @property
    def device(self) -> torch.device:
        """The device of the parameters (they all live on one)."""
        return self.char_cnn.projection.weight.device

    def save(self, directory: Union[str, os.PathLike]) -> None:
        """Write ``options.json`` and ``weights.hdf5`` (float32, bilm-tf layout) into ``directory``,
        and their sha256 into ``sha256.json``. A model with a vocabulary (format_version 2) keeps
        it in ``weights.hdf5`` (:func:`~.weights.write_vocab`), not in ``options.json``."""
        directory = os.fspath(directory)
        os.makedirs(directory, exist_ok=True)
        sd = {k: v.detach().cpu().float().numpy() for k, v in self.state_dict().items()}
        options, vocab = self.options, self.options.get("vocab")
        if vocab is not None:
            options = {**options, "vocab": {k: v for k, v in vocab.items() if k not in ("chars", "words")}}
        write_options(options, os.path.join(directory, "options.json"))
        weights = os.path.join(directory, "weights.hdf5")
        write_weights(weights, from_state_dict(sd, self.options))
        if vocab is not None:
            write_vocab(weights, vocab)
        integrity.record(directory)

    def weights_changed(self) -> None:
        """Drop the cached oneDNN copies of the weights so the next call repacks them.

        Needed only when parameter memory was modified behind PyTorch's back (e.g. an optimizer
        writing through numpy/cupy/DLPack views, as Thinc does): changes made with torch
        operations (``load_state_dict``, in-place ops, torch optimizers) are detected
        automatically through the tensors' version counters.
        """
        for module in self.modules():
            cache = getattr(module, "_packed", None)
            if cache is not None:
                cache.clear()

    def reset_states(self) -> None:
        """Forget the carried LSTM state (stateful mode)."""
        self._state = None

    # ----------------------------------------------------------------------------------------
    def embed_tokens(self, char_ids: torch.Tensor) -> torch.Tensor:
        """Char-CNN token vectors: id rows (U, width) int64 from ``self.indexer.ids(tokens)``
        (width 50 for bilm-tf models) -> (U, projection_dim) float32.

        Context-independent (layer 0 before duplication); exact, in input order (the CNN sorts
        long inputs by token length internally to skip padding positions). With ``precision``
        "bfloat16", not exact: see :mod:`.precision` (the result is float32 either way).
        """
        self._apply_precision(self.device)
        return self.char_cnn(char_ids)

    def batch_to_ids(self, batch: Sequence[Sequence[str]]) -> torch.Tensor:
        """Id rows of tokenised sentences for :meth:`forward`, made by this model's indexer:
        (len(batch), max_len, width) int64 on the CPU, zero rows past a sentence's tokens (for a
        bilm-tf model the same as :func:`~.chars.batch_to_ids`). Raises TypeError if ``batch`` or
        a sentence is a str, or a token is not a str."""
        if isinstance(batch, str) or any(isinstance(s, str) for s in batch):
            raise ElmoTypeError("batch_to_ids expects a list of tokenised sentences (lists of str tokens)")
        max_len = max((len(s) for s in batch), default=0)
        out = numpy.zeros((len(batch), max_len, self.indexer.width), dtype=numpy.int64)
        for i, sentence in enumerate(batch):
            if len(sentence):
                out[i, : len(sentence)] = self.indexer.ids(list(sentence))
        return torch.from_numpy(out)

    def boundary_vectors(self) -> torch.Tensor:
        """Char-CNN vectors of the sentence boundaries (``<S>`` and ``</S>``; ``<bos>`` and
        ``<eos>`` with a vocabulary): (2, projection_dim) float32."""
        ids = torch.from_numpy(self.indexer.boundary_ids()).to(self.device)
        return self.embed_tokens(ids)

    def forward(self, char_ids: Optional[torch.Tensor] = None, *, token_vectors: Optional[torch.Tensor] = None,
                mask: Optional[torch.Tensor] = None, sentence_boundaries: bool = False) -> BiLMOutput:
        """Run the biLM on a batch.

        Either ``char_ids`` (batch, max_len, width) int64 from :func:`~.chars.batch_to_ids` (width
        50; for any model, rows of ``self.indexer.ids``; rows of zeros = padding; each distinct
        token goes through the char CNN once), or precomputed
        char-CNN vectors ``token_vectors`` (batch, max_len, projection_dim) float32 with ``mask``
        (batch, max_len) bool. Padding must come after a sentence's tokens. Returns
        :class:`BiLMOutput`; with ``sentence_boundaries=True`` it also holds the outputs at the
        ``<S>`` / ``</S>`` positions (see :meth:`forward_indexed`). Raises ValueError for bad
        shapes or non-trailing padding.
        """
        if (char_ids is None) == (token_vectors is None):
            raise ElmoConfigError("BiLM.forward takes char_ids or token_vectors (with mask), not both/neither")
        if char_ids is not None:
            width = self.indexer.width
            if char_ids.dim() != 3 or char_ids.shape[-1] != width:
                raise ElmoDataError(f"char_ids must have shape (batch, max_len, {width}), got {tuple(char_ids.shape)}")
            mask = (char_ids > 0).any(-1)
            flat = char_ids[mask]
            index = torch.full(mask.shape, -1, dtype=torch.long, device=char_ids.device)
            if flat.shape[0]:
                uniq, inverse = torch.unique(flat, dim=0, return_inverse=True)
                table = self.embed_tokens(uniq)
                index[mask] = inverse
            else:
                table = self.char_cnn.projection.weight.new_zeros(0, self.projection_dim)
        else:
            if mask is None or token_vectors.dim() != 3 or token_vectors.shape[-1] != self.projection_dim \
                    or tuple(mask.shape) != tuple(token_vectors.shape[:2]):
                raise ElmoDataError("token_vectors must be (batch, max_len, projection_dim) with mask "
                                    "(batch, max_len)")
            mask = mask.bool()
            table = token_vectors[mask]
            index = torch.full(mask.shape, -1, dtype=torch.long, device=token_vectors.device)
            index[mask] = torch.arange(table.shape[0], device=index.device)
        return self.forward_indexed(table, index, sentence_boundaries=sentence_boundaries)

    def forward_indexed(self, table: torch.Tensor, index: torch.Tensor, stateless: bool = False,
                        boundary: Optional[torch.Tensor] = None, sentence_boundaries: bool = False) -> BiLMOutput:
        """Run the biLM on de-duplicated token vectors.

        table: (U, projection_dim) float32 char-CNN vectors of the distinct tokens (e.g. from
        :meth:`embed_tokens`); index: (batch, max_len) int64, ``index[b, t]`` = row of ``table``
        for token t of sentence b, -1 for padding (after the tokens). ``stateless=True`` ignores
        and keeps the stored state even in stateful mode. ``boundary``: optional precomputed
        :meth:`boundary_vectors` (saves two char-CNN rows per call). Returns :class:`BiLMOutput`.

        ``sentence_boundaries=True`` keeps the positions of the boundaries the LSTMs read (as
        AllenNLP's ``_ElmoBiLm`` does): layers (L + 1, batch, max_len + 2, 2P) and mask (batch,
        max_len + 2), row b being ``<S>`` w_1 .. w_n ``</S>`` then zeros (an empty sentence is
        ``<S>`` ``</S>``); layer 0 there is the boundary's char-CNN vector ``[x; x]``.
        """
        if index.dim() != 2:
            raise ElmoDataError(f"index must be (batch, max_len), got {tuple(index.shape)}")
        self._apply_precision(table.device)
        B, T = index.shape
        lengths = self._check_prefix(index)
        mask = index >= 0
        P, L = self.projection_dim, self.num_layers
        pk, positions, inputs = self._packed_inputs(table, index, lengths, boundary)
        width = T + 2 if sentence_boundaries else T  # output positions per row
        dest = []
        for d, pos in enumerate(positions):
            word = pos - 1
            inner = (word >= 0) & (word < pk.length - 2)
            sel = numpy.arange(len(pos)) if sentence_boundaries else numpy.nonzero(inner)[0]
            col = pos[sel] if sentence_boundaries else word[sel]
            dest.append((torch.from_numpy(sel), torch.from_numpy(pk.row[sel] * width + col)))
        device = table.device
        use_state = self.stateful and not stateless
        order = torch.from_numpy(pk.order).to(device)
        init = self._initial_state(B, order) if use_state else None
        hidden, (h, c) = self.lstm(inputs, pk, init)  # (L, 2, N, P)
        if use_state:
            self._store_state(h, c, order)

        layers = table.new_zeros(L + 1, B * width, 2 * P)
        if sentence_boundaries:  # the forward LM reads every position once, boundaries included
            mask = torch.arange(width, device=index.device) < (lengths + 2)[:, None]
            rows, tok = dest[0][1].to(device), inputs[0]
        else:
            rows, tok = mask.reshape(-1), table[index[mask]]
        layers[0, rows, :P] = tok
        layers[0, rows, P:] = tok
        for d, (sel, dst) in enumerate(dest):
            layers[1:, dst.to(device), d * P:(d + 1) * P] = hidden[:, d, sel.to(device)]
        return BiLMOutput(layers.view(L + 1, B, width, 2 * P), mask)

    def _packed_inputs(self, table: torch.Tensor, index: torch.Tensor, lengths: torch.Tensor,
                       boundary: Optional[torch.Tensor]):
        """(packing of the rows ``<S>`` w_1 .. w_n ``</S>``, per direction the (N,) numpy position
        each packed row reads, the LSTM inputs (2, N, P)) of :meth:`forward_indexed`'s arguments."""
        if boundary is None:
            boundary = self.boundary_vectors()
        full = torch.cat([boundary, table])  # row 0 <S>, row 1 </S>, 2 + k token k
        pk = pack(lengths.cpu().numpy() + 2)
        flat_index = index.reshape(-1).cpu().numpy()
        T = index.shape[1]
        positions, inputs_idx = [], []
        for d in range(2):
            pos = pk.positions(d)  # position in <S> w_1 .. w_n </S>
            word = pos - 1
            inner = (word >= 0) & (word < pk.length - 2)
            src = numpy.where(pos == 0, 0, 1)
            src[inner] = 2 + flat_index[pk.row[inner] * T + word[inner]]
            positions.append(pos)
            inputs_idx.append(src)
        return pk, positions, full[torch.from_numpy(numpy.stack(inputs_idx)).to(table.device)]

    def forward_lm(self, table: torch.Tensor, index: torch.Tensor, boundary: Optional[torch.Tensor] = None,
                   dropout: Optional[nn.Module] = None):
        """The top LSTM layer of both language models, packed, for training a language model on it
        (the pretrainer's softmax head; autograd flows when the parameters require grad).

        table, index, boundary: as :meth:`forward_indexed` (stateless). ``dropout``: applied to
        each LSTM layer's input (see :meth:`.lstm.ElmoLstm.forward`), not to the output.
        Returns (top (2, N, P) float32: direction 0 the forward LM, 1 the backward LM; row (N,)
        int64 numpy: the batch row of each packed row; positions: per direction (N,) int64 numpy,
        the position each packed row reads in ``<S>`` w_1 .. w_n ``</S>`` (0 .. n + 1)). The
        forward LM's output at position k predicts the token at k + 1, the backward LM's the token
        at k - 1 (Peters et al. 2018, section 3.1). Raises ElmoDataError as :meth:`forward_indexed`.
        """
        if index.dim() != 2:
            raise ElmoDataError(f"index must be (batch, max_len), got {tuple(index.shape)}")
        self._apply_precision(table.device)
        lengths = self._check_prefix(index)
        pk, positions, inputs = self._packed_inputs(table, index, lengths, boundary)
        hidden, _ = self.lstm(inputs, pk, dropout=dropout)
        return hidden[-1], pk.row, positions

    @staticmethod
    def _check_prefix(index: torch.Tensor) -> torch.Tensor:
        """(B,) lengths of index's rows; ElmoDataError unless each row's tokens precede its padding."""
        mask = index >= 0
        lengths = mask.sum(1)
        if not bool((mask == (torch.arange(index.shape[1], device=index.device) < lengths[:, None])).all()):
            raise ElmoDataError("padding must follow a sentence's tokens (mask must be a prefix of each row)")
        return lengths

    def _initial_state(self, B: int, order: torch.Tensor):
        h, c = self.lstm.zero_state(B)
        if self._state is not None:
            hs, cs = self._state
            k = min(B, hs.shape[2])
            h[:, :, :k], c[:, :, :k] = hs[:, :, :k], cs[:, :, :k]
        return h[:, :, order], c[:, :, order]

    def _store_state(self, h: torch.Tensor, c: torch.Tensor, order: torch.Tensor) -> None:
        B = h.shape[2]
        if self._state is not None and self._state[0].shape[2] > B:
            hs, cs = (t.clone() for t in self._state)
        else:
            hs, cs = torch.empty_like(h), torch.empty_like(c)
        hs[:, :, order], cs[:, :, order] = h, c
        self._state = (hs.detach(), cs.detach())

    # ----------------------------------------------------------------------------------------
    def embed_sentences(self, sentences: Sequence[Sequence[str]], batch_size: int = 64) -> List[numpy.ndarray]:
        """Embed tokenised sentences: list of float32 numpy arrays, one per sentence in input order,
        each (num_layers + 1, len(sentence), 2 * projection_dim); an empty sentence gives
        (num_layers + 1, 0, 2 * projection_dim).

        Stateless and exact (the result for a sentence does not depend on the others): every
        distinct token of the call goes through the char CNN once, sentences are sorted by length
        into batches of ``batch_size``, under ``torch.inference_mode()`` (:mod:`.batching`).
        Raises TypeError if a sentence is a str or a token is not a str.
        """
        if not isinstance(sentences, (list, tuple, str)):
            sentences = list(sentences)
        results: List[Optional[numpy.ndarray]] = [None] * len(sentences)
        for batch in embed_batches(self, sentences, batch_size):
            for i, layers in batch.split(batch.layers.cpu().numpy()):
                results[i] = numpy.ascontiguousarray(layers)
        empty = numpy.zeros((self.num_layers + 1, 0, self.output_dim), dtype=numpy.float32)
        return [empty.copy() if r is None else r for r in results]
