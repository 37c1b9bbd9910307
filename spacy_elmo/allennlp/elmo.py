"""``Elmo`` and its biLM wrapper ``ElmoBiLm``, as AllenNLP's ``allennlp.modules.elmo`` (2.10.1).

``ElmoBiLm`` plays AllenNLP's ``_ElmoBiLm``: :class:`spacy_elmo.bilm.BiLM` with the outputs at the
sentence boundaries kept, returned as ``{"activations": [...], "mask": ...}``, and AllenNLP's
cache of char-CNN vectors for a vocabulary. ``Elmo`` mixes those layers with one
:class:`~.scalar_mix.ScalarMix` per output representation, removes the boundaries and applies
dropout, exactly as AllenNLP. Stateless unless ``stateful=True``.
"""
import logging
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..bilm import BiLM
from ..errors import ElmoConfigError, ElmoDataError, ElmoTypeError
from .files import PathLike, model_files
from .ids import batch_to_ids, boundary_tokens
from .scalar_mix import ScalarMix

logger = logging.getLogger("spacy_elmo")


class ElmoBiLm(torch.nn.Module):
    """The pretrained biLM for :class:`Elmo`: ``forward(inputs, word_inputs=None)`` returns
    ``{"activations": num_layers tensors (batch, T + 2, 2P) float32, "mask": (batch, T + 2) bool}``
    with ``<S>`` / ``</S>`` included (row b: ``<S>`` w_1 .. w_n ``</S>`` then zeros).

    ``options_file`` / ``weight_file``: files, a model name or directory, or an official AllenNLP
    URL (see :mod:`.files`; raises as :func:`.files.model_files` and ``BiLM.from_files``).
    ``num_layers`` counts the char-CNN layer (L + 1). ``vocab_to_cache``: see
    :meth:`create_cached_cnn_embeddings`. ``stateful``: carry the LSTM state between calls
    (AllenNLP's behaviour), see :class:`~spacy_elmo.bilm.BiLM`. The biLM is ``self._elmo_lstm``
    (AllenNLP's attribute name: ``elmo._elmo_lstm._elmo_lstm.reset_states()`` still works).
    """

    def __init__(self, options_file: PathLike, weight_file: Optional[PathLike], requires_grad: bool = False,
                 vocab_to_cache: Optional[List[str]] = None, stateful: bool = False) -> None:
        super().__init__()
        self._elmo_lstm = BiLM.from_files(*model_files(options_file, weight_file), stateful=stateful)
        self._elmo_lstm.requires_grad_(requires_grad)
        self._requires_grad = requires_grad
        self.num_layers = self._elmo_lstm.num_layers + 1
        self.register_buffer("_word_vectors", None, persistent=False)
        self.register_buffer("_boundary_vectors", None, persistent=False)
        if vocab_to_cache:
            if requires_grad:
                logger.warning("fine-tuning ELMo with a vocabulary cache: the cached char-CNN vectors stay fixed")
            self.create_cached_cnn_embeddings(vocab_to_cache)

    @property
    def bilm(self) -> BiLM:
        """The :class:`~spacy_elmo.bilm.BiLM`."""
        return self._elmo_lstm

    def get_output_dim(self) -> int:
        """2 * projection_dim."""
        return self._elmo_lstm.output_dim

    def create_cached_cnn_embeddings(self, tokens: List[str]) -> None:
        """Keep the char-CNN vectors of ``tokens`` (a vocabulary; word id k = ``tokens[k]``, id 0
        being padding), so that ``forward`` can take word ids instead of running the char CNN.
        The vectors are fixed (a buffer, recomputed by calling this again)."""
        ids = batch_to_ids([boundary_tokens() + list(tokens)])[0].to(self._elmo_lstm.device)
        with torch.no_grad():
            vectors = self._elmo_lstm.embed_tokens(ids)
        self._boundary_vectors, self._word_vectors = vectors[:2].clone(), vectors[2:].clone()

    def _cached(self, word_inputs: Optional[torch.Tensor]) -> bool:
        if self._word_vectors is None or word_inputs is None:
            return False
        return bool(((word_inputs >= 0) & (word_inputs < self._word_vectors.shape[0])).all())

    def forward(self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
                ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """``inputs`` (batch, T, 50) int64 char ids (:func:`~.ids.batch_to_ids`); ``word_inputs``
        (batch, T) int64 ids into the cached vocabulary, 0 = padding: used when every id is in
        it, else the char CNN runs on ``inputs`` (AllenNLP's fallback). Raises ElmoDataError
        for bad shapes or padding before a token."""
        if self._cached(word_inputs):
            index = torch.where(word_inputs > 0, word_inputs, torch.full_like(word_inputs, -1))
            out = self._elmo_lstm.forward_indexed(self._word_vectors, index, boundary=self._boundary_vectors,
                                                  sentence_boundaries=True)
        else:
            out = self._elmo_lstm(inputs, sentence_boundaries=True)
        return {"activations": list(out.layers.unbind(0)), "mask": out.mask}


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """AllenNLP's ``remove_sentence_boundaries``: (batch, T + 2, dim) with ``<S>`` / ``</S>`` ->
    (batch, T, dim), exactly zero past each sentence's tokens, and the (batch, T) bool mask."""
    lengths = mask.sum(dim=1) - 2
    new_mask = torch.arange(tensor.shape[1] - 2, device=mask.device) < lengths[:, None]
    inner = tensor[:, 1:-1]
    return torch.where(new_mask.unsqueeze(-1), inner, torch.zeros((), dtype=inner.dtype, device=inner.device)), new_mask


class Elmo(torch.nn.Module):
    """ELMo representations (Peters et al. 2018), AllenNLP's ``Elmo`` with its arguments and
    defaults; ``stateful`` (keyword) is ours.

    ``options_file`` / ``weight_file``: files, a model name or directory (``weight_file`` None:
    the same model), or one of the four official AllenNLP URLs, which name a model of our
    download cache (FileNotFoundError with the download command when it is missing; nothing
    downloads). ``num_output_representations``: the number of scalar mixes
    ``scalar_mix_{k}`` (parameters ``scalar_mix_{k}.gamma``, ``scalar_mix_{k}.scalar_parameters.{j}``).
    ``requires_grad``: fine-tune the biLM. ``do_layer_norm``: see :mod:`.scalar_mix`. ``dropout``:
    on each representation (the module is in train mode after construction, as in AllenNLP).
    ``vocab_to_cache``: see :meth:`ElmoBiLm.create_cached_cnn_embeddings`.
    ``keep_sentence_boundaries``: T + 2 positions. ``scalar_mix_parameters``: fixed
    (pre-softmax) weights, nothing trainable. ``module``: a biLM of your own with ``num_layers``,
    ``get_output_dim()`` and ``forward(inputs, word_inputs) -> {"activations", "mask"}`` (then
    both files must be None). ``stateful=False`` (default): equal inputs give equal outputs;
    True: AllenNLP's LSTM state carried from call to call.

    Raises ElmoConfigError (a ValueError) for files given with ``module``, ``stateful`` with
    ``module``, mix parameters of the wrong length; the errors of :class:`ElmoBiLm` otherwise.
    """

    def __init__(self, options_file: Optional[PathLike], weight_file: Optional[PathLike],
                 num_output_representations: int, requires_grad: bool = False, do_layer_norm: bool = False,
                 dropout: float = 0.5, vocab_to_cache: Optional[List[str]] = None,
                 keep_sentence_boundaries: bool = False, scalar_mix_parameters: Optional[Sequence[float]] = None,
                 module: Optional[torch.nn.Module] = None, *, stateful: bool = False) -> None:
        super().__init__()
        if module is not None:
            if options_file is not None or weight_file is not None:
                raise ElmoConfigError("Elmo takes module= or options_file / weight_file, not both (pass None for both)")
            if stateful:
                raise ElmoConfigError("stateful=True applies to the biLM loaded from files, not to module=")
            self._elmo_lstm = module
        else:
            self._elmo_lstm = ElmoBiLm(options_file, weight_file, requires_grad=requires_grad,
                                       vocab_to_cache=vocab_to_cache, stateful=stateful)
        self._has_cached_vocab = vocab_to_cache is not None
        self._keep_sentence_boundaries = keep_sentence_boundaries
        self._dropout = torch.nn.Dropout(p=dropout)
        self._scalar_mixes: List[ScalarMix] = []
        for k in range(num_output_representations):
            mix = ScalarMix(self._elmo_lstm.num_layers, do_layer_norm=do_layer_norm,
                            initial_scalar_parameters=scalar_mix_parameters,
                            trainable=scalar_mix_parameters is None)
            self.add_module(f"scalar_mix_{k}", mix)
            self._scalar_mixes.append(mix)

    def get_output_dim(self) -> int:
        """The width of each representation (2 * projection_dim)."""
        return self._elmo_lstm.get_output_dim()

    def forward(self, inputs: torch.Tensor, word_inputs: Optional[torch.Tensor] = None
                ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """``inputs``: (..., T, 50) int64 char ids (:func:`~.ids.batch_to_ids`; more than three
        dimensions are flattened and reshaped back). ``word_inputs``: (..., T) ids into
        ``vocab_to_cache`` (ignored, with a warning, without it).

        Returns ``{"elmo_representations": num_output_representations float32 tensors
        (..., T, dim), "mask": (..., T) bool}`` (T + 2 with ``keep_sentence_boundaries``);
        exactly zero past each sentence's tokens when the boundaries are removed. Raises
        ElmoTypeError for inputs that are not a tensor, ElmoDataError for bad shapes."""
        if not isinstance(inputs, torch.Tensor):
            raise ElmoTypeError(f"Elmo expects a tensor of char ids (batch_to_ids), got {type(inputs).__name__}")
        if inputs.dim() < 3:
            raise ElmoDataError(f"Elmo inputs must be (batch, timesteps, 50) char ids, got {tuple(inputs.shape)}")
        lead = inputs.shape[:-2]
        words = word_inputs
        if word_inputs is not None:
            if word_inputs.dim() > 2:
                lead = word_inputs.shape[:-1]
            if not self._has_cached_vocab:
                logger.warning("Word inputs were passed to ELMo but it does not have a cached vocab.")
                words = None
            else:
                words = word_inputs.reshape(-1, word_inputs.shape[-1])
        output = self._elmo_lstm(inputs.reshape(-1, *inputs.shape[-2:]), words)
        layers, mask = output["activations"], output["mask"]
        representations = []
        for mix in self._scalar_mixes:
            representation = mix(layers, mask)
            out_mask = mask
            if not self._keep_sentence_boundaries:
                representation, out_mask = remove_sentence_boundaries(representation, mask)
            representations.append(self._dropout(representation))
        width = out_mask.shape[-1]
        return {"elmo_representations": [r.reshape(*lead, width, r.shape[-1]) for r in representations],
                "mask": out_mask.reshape(*lead, width)}
