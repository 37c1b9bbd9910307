"""Tokenised sentences -> biLM batches: the one batching routine, used by
:meth:`~.model.BiLM.embed_sentences` and by the pipeline's Thinc layer
(``spacy_elmo.pipeline.layers.bilm_layer``).

For one call over a list of sentences:

1. the distinct tokens of all sentences form one table: each goes through the model's indexer
   (``bilm.indexer``) and the char CNN once, together with the sentence boundaries (one char-CNN
   call);
2. the non-empty sentences are sorted by length, longest first (stable), and cut into batches of
   ``batch_size`` (so rows of a batch have similar lengths and the LSTM's active batch stays full);
3. each batch is an index matrix into the table, -1 after a sentence's tokens, run through
   :meth:`~.model.BiLM.forward_indexed` with ``stateless=True``;
4. :meth:`Batch.split` slices each sentence's (L + 1, n, dim) layers out of its batch.

``grad`` is the autograd switch: False (default) runs under ``torch.inference_mode()`` (the
biLM's in-place fast paths); True runs under ``torch.enable_grad()`` with the parameters
requiring grad, so the outputs carry the graph for fine-tuning. Stateless and exact either way:
a sentence's layers do not depend on the other sentences of the call.
"""
from typing import Any, Iterator, List, NamedTuple, Protocol, Sequence, Tuple

import numpy
import torch

from ..errors import ElmoConfigError, ElmoTypeError


class Embedder(Protocol):
    """What batching needs of a biLM (:class:`~.model.BiLM` has it; named here so that this
    module does not import the model, which imports it)."""

    indexer: Any
    device: torch.device

    def embed_tokens(self, char_ids: torch.Tensor) -> torch.Tensor: ...

    def forward_indexed(self, table: torch.Tensor, index: torch.Tensor, stateless: bool = ...,
                        boundary: Any = ...) -> Any: ...

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...

    def requires_grad_(self, requires_grad: bool = ...) -> Any: ...


class Batch(NamedTuple):
    """One biLM call: ``members[b]`` is the position (in the caller's list) of the sentence in row
    ``b``, ``lengths[b]`` its token count; ``layers`` (L + 1, B, T, dim) float32, zero at padding
    (with autograd history when made with ``grad=True``)."""

    members: List[int]
    lengths: List[int]
    layers: torch.Tensor

    def split(self, layers: Any = None) -> Iterator[Tuple[int, Any]]:
        """``(position, layers[:, b, :lengths[b]])`` for each row ``b``: views of ``layers``
        (default: :attr:`layers`; or any array of the same layout, e.g. its numpy or cupy copy)."""
        layers = self.layers if layers is None else layers
        for b, (i, n) in enumerate(zip(self.members, self.lengths)):
            yield i, layers[:, b, :n]


def embed_batches(bilm: Embedder, sentences: Sequence[Sequence[str]], batch_size: int = 64,
                  grad: bool = False) -> Iterator[Batch]:
    """Run ``bilm`` (a :class:`~.model.BiLM`) over ``sentences`` (lists or tuples of str) batch by
    batch, as the module docstring says, yielding a :class:`Batch` per biLM call; empty
    sentences are in no batch. The grad mode is set around the work of each step only, not
    while the caller holds a batch.

    The arguments are checked, and the char ids of the distinct tokens made, at the call; the
    biLM runs as the batches are consumed. Raises TypeError if ``sentences`` or one of them is
    a str, or a token is not a str; ValueError if ``batch_size < 1``.
    """
    if isinstance(sentences, str):
        raise ElmoTypeError("expected a list of tokenised sentences (lists of str), got a str")
    if batch_size < 1:
        raise ElmoConfigError(f"batch_size must be >= 1, got {batch_size}")
    vocab = {}
    rows = []
    for sent in sentences:
        if isinstance(sent, str):
            raise ElmoTypeError(f"expected each sentence as a list of str tokens, got a str: {sent[:40]!r}")
        rows.append(numpy.fromiter((vocab.setdefault(t, len(vocab)) for t in sent), dtype=numpy.int64,
                                   count=len(sent)))
    order = sorted((i for i in range(len(rows)) if len(rows[i])), key=lambda i: -len(rows[i]))
    indexer = bilm.indexer  # the model's own token -> ids scheme (bytes for bilm-tf models)
    char_ids = numpy.concatenate([indexer.ids(list(vocab)), indexer.boundary_ids()])
    return _batches(bilm, rows, order, char_ids, batch_size, grad)


def _batches(bilm: Embedder, rows, order, char_ids: numpy.ndarray, batch_size: int, grad: bool) -> Iterator[Batch]:
    if not order:
        return
    mode = torch.enable_grad if grad else torch.inference_mode
    if grad and not all(p.requires_grad for p in bilm.parameters()):
        bilm.requires_grad_(True)
    device = bilm.device
    with mode():
        vectors = bilm.embed_tokens(torch.from_numpy(char_ids).to(device))
        table, boundary = vectors[:-2], vectors[-2:]
    for start in range(0, len(order), batch_size):
        members = order[start: start + batch_size]
        lengths = [len(rows[i]) for i in members]
        index = numpy.full((len(members), lengths[0]), -1, dtype=numpy.int64)
        for b, i in enumerate(members):
            index[b, : lengths[b]] = rows[i]
        with mode():
            out = bilm.forward_indexed(table, torch.from_numpy(index).to(device), stateless=True,
                                       boundary=boundary)
        yield Batch(members, lengths, out.layers)
