"""``ElmoEmbedder``: AllenNLP 0.9's class of that name (``allennlp/commands/elmo.py``, removed in
AllenNLP 1.0), on this package's biLM.

The same methods and HDF5 layout; stateless (0.9 carried the LSTM state from batch to batch, so a
sentence's vectors depended on what came before). An empty sentence gives (L + 1, 0, 2P) float32
(0.9: float64 (3, 0, 1024) whatever the model).
"""
import itertools
import json
import logging
import os
from typing import IO, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import torch

from ..errors import ElmoConfigError, ElmoDataError
from ..text_files import text_lines
from .elmo import ElmoBiLm
from .files import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE, PathLike
from .ids import batch_to_ids

logger = logging.getLogger("spacy_elmo")
DEFAULT_BATCH_SIZE = 64
OUTPUT_FORMATS = ("all", "top", "average")


class ElmoEmbedder:
    """Embed tokenised sentences with a pretrained biLM: every layer of each sentence as numpy.

    ``options_file`` / ``weight_file``: files, a model name or directory, or an official AllenNLP
    URL (default: the original model's, as in 0.9: the cached "elmo-original"; see
    :mod:`.files`). ``cuda_device`` >= 0 runs on that GPU. Raises as :class:`~.elmo.ElmoBiLm`.
    ``elmo_bilm`` is the :class:`~.elmo.ElmoBiLm` (its biLM: ``elmo_bilm.bilm``).
    """

    def __init__(self, options_file: PathLike = DEFAULT_OPTIONS_FILE,
                 weight_file: Optional[PathLike] = DEFAULT_WEIGHT_FILE, cuda_device: int = -1) -> None:
        self.elmo_bilm = ElmoBiLm(options_file, weight_file)
        if cuda_device >= 0:
            self.elmo_bilm = self.elmo_bilm.cuda(device=cuda_device)
        self.cuda_device = cuda_device

    def batch_to_embeddings(self, batch: List[List[str]]) -> Tuple[torch.Tensor, torch.Tensor]:
        """(activations (batch, L + 1, T, 2P) float32, zero at padding; mask (batch, T) bool) of
        tokenised sentences (``<S>`` / ``</S>`` read as boundaries, as :func:`~.ids.batch_to_ids`).
        Raises ElmoTypeError (a TypeError) for a str sentence or a token that is not a str."""
        bilm = self.elmo_bilm.bilm
        ids = batch_to_ids(batch).to(bilm.device)
        with torch.no_grad():
            out = bilm(ids)
        return out.layers.transpose(0, 1), out.mask

    def embed_sentence(self, sentence: List[str]) -> numpy.ndarray:
        """One tokenised sentence -> float32 (L + 1, len(sentence), 2P)."""
        return self.embed_batch([sentence])[0]

    def embed_batch(self, batch: List[List[str]]) -> List[numpy.ndarray]:
        """Tokenised sentences -> one float32 array (L + 1, len(sentence), 2P) each, in order."""
        bilm = self.elmo_bilm.bilm
        empty = numpy.zeros((bilm.num_layers + 1, 0, bilm.output_dim), dtype=numpy.float32)
        if not any(len(sentence) for sentence in batch):
            batch_to_ids(batch)  # the type checks
            return [empty.copy() for _ in batch]
        embeddings, mask = self.batch_to_embeddings(batch)
        embeddings, lengths = embeddings.cpu().numpy(), mask.sum(1).tolist()
        return [numpy.ascontiguousarray(embeddings[i, :, :n]) if n else empty.copy() for i, n in enumerate(lengths)]

    def embed_sentences(self, sentences: Iterable[List[str]], batch_size: int = DEFAULT_BATCH_SIZE
                        ) -> Iterator[numpy.ndarray]:
        """Lazily embed an iterable of tokenised sentences, ``batch_size`` at a time, in order (a
        generator of what :meth:`embed_batch` returns). Raises ElmoConfigError (a ValueError)
        here if ``batch_size < 1``."""
        if batch_size < 1:
            raise ElmoConfigError(f"batch_size must be >= 1, got {batch_size}")
        return self._embed_lazily(iter(sentences), batch_size)

    def _embed_lazily(self, sentences: Iterator[List[str]], batch_size: int) -> Iterator[numpy.ndarray]:
        while True:
            batch = list(itertools.islice(sentences, batch_size))
            if not batch:
                return
            yield from self.embed_batch(batch)

    def embed_file(self, input_file: Union[IO, PathLike], output_file_path: PathLike, output_format: str = "all",
                   batch_size: int = DEFAULT_BATCH_SIZE, forget_sentences: bool = False,
                   use_sentence_keys: bool = False) -> None:
        """Embed a file of whitespace-tokenised sentences, one a line, into HDF5, 0.9's layout:
        dataset ``"0"``, ``"1"``, ... (the line numbers; with ``use_sentence_keys`` the stripped
        lines themselves) holding float32 (L + 1, n, 2P) (``output_format`` "all"), the top layer
        (n, 2P) ("top") or the layers' mean (n, 2P) ("average"); plus ``sentence_to_index``, a
        (1,) string dataset holding the JSON {sentence: line number}, unless
        ``forget_sentences`` or ``use_sentence_keys``. ``input_file``: an open text file (closed
        at the end, as in 0.9) or a path (UTF-8, plain or ``.gz``).

        Raises, before anything is written, ElmoConfigError (a ValueError) for an unknown
        ``output_format``, ElmoDataError (a ValueError) for blank lines (naming their indexes),
        with ``use_sentence_keys`` a repeated line, or a path whose bytes are not UTF-8 (naming the
        line, the byte and its offset)."""
        if output_format not in OUTPUT_FORMATS:
            raise ElmoConfigError(f"output_format must be one of {list(OUTPUT_FORMATS)}, got {output_format!r}")
        sentences = _read_lines(input_file)
        _check_lines(sentences, use_sentence_keys)
        if use_sentence_keys:
            logger.warning("Using sentences as keys can fail if sentences contain forward slashes or colons.")
        vectors = self.embed_sentences([s.split() for s in sentences], batch_size)
        keys = sentences if use_sentence_keys else [str(i) for i in range(len(sentences))]
        _write_hdf5(os.fspath(output_file_path), zip(keys, vectors), output_format,
                    None if forget_sentences or use_sentence_keys else sentences)


def _read_lines(input_file: Union[IO, PathLike]) -> List[str]:
    """The stripped lines of an open text file (closed here) or of a path, read as every command
    reads text (:func:`spacy_elmo.text_files.text_lines`: UTF-8, plain or ``.gz``, ElmoDataError
    naming the line of a byte that is not UTF-8)."""
    if isinstance(input_file, (str, os.PathLike)):
        return [line.strip() for line in text_lines(input_file)]
    with input_file:
        return [line.strip() for line in input_file]


def _check_lines(sentences: Sequence[str], use_sentence_keys: bool) -> None:
    blank = [i for i, line in enumerate(sentences) if line == ""]
    if blank:
        raise ElmoDataError(f"the input file has empty lines at indexes {blank}: remove them")
    if use_sentence_keys:
        first = {}
        for i, line in enumerate(sentences):
            if line in first:
                raise ElmoDataError(f"line {i} repeats line {first[line]} ({line[:40]!r}): sentence keys must be "
                                    "unique; to embed repeated sentences, use line numbers (use_sentence_keys=False)")
            first[line] = i


def _write_hdf5(path: str, items: Iterable[Tuple[str, numpy.ndarray]], output_format: str,
                sentences: Optional[Sequence[str]]) -> None:
    import h5py

    sentence_to_index = {}
    with h5py.File(path, "w") as fout:
        for key, embeddings in items:
            if sentences is not None:
                sentence_to_index[sentences[int(key)]] = key
            output = {"all": lambda e: e, "top": lambda e: e[-1],
                      "average": lambda e: numpy.average(e, axis=0)}[output_format](embeddings)
            fout.create_dataset(str(key), output.shape, dtype="float32", data=output)
        if sentences is not None:
            dataset = fout.create_dataset("sentence_to_index", (1,), dtype=h5py.special_dtype(vlen=str))
            dataset[0] = json.dumps(sentence_to_index)
