"""Pure-PyTorch ELMo biLM (no spaCy here): char ids, char CNN, biLSTM, weight files.

    from spacy_elmo.bilm import BiLM, batch_to_ids
    bilm = BiLM.from_files("options.json", "weights.hdf5")          # or BiLM(options_dict)
    out = bilm(batch_to_ids([["The", "cat", "sat"], ["Hi"]]))
    out.layers  # (num_layers + 1, batch, max_len, 2 * projection_dim); out.mask (batch, max_len)
    vecs = bilm.embed_sentences(sentences, batch_size=64)            # list of numpy arrays

Reusing char-CNN vectors: ``bilm.embed_tokens(char_ids)`` gives the vectors of distinct tokens,
``bilm.forward_indexed(table, index)`` runs the LSTMs from such a table, and
``bilm(token_vectors=..., mask=...)`` from padded precomputed vectors. Batching of many
sentences (distinct-token table, length sort, padding, per-sentence slices), with or without
autograd: :func:`.batching.embed_batches`, which ``embed_sentences`` and the spaCy layer use.
Files: :mod:`.options`, :mod:`.weights` (bilm-tf HDF5 layout), :mod:`.sizes` (a model's size from
its options, checked before anything is read), :mod:`.files` (small files: regular and capped).
Errors: the kinds of :mod:`spacy_elmo.errors` (:class:`~spacy_elmo.errors.ElmoModelFileError`,
:class:`~spacy_elmo.errors.ElmoMemoryError`, :class:`~spacy_elmo.errors.ElmoFileError`,
:class:`~spacy_elmo.errors.ElmoConfigError`, :class:`~spacy_elmo.errors.ElmoDataError`,
:class:`~spacy_elmo.errors.ElmoTypeError`), each a :class:`~spacy_elmo.errors.ElmoError`.
Token ids come from the model's own indexer (``bilm.indexer``, :mod:`.indexer`): bilm-tf's bytes,
or the learned character vocabulary of a converted ELMoForManyLangs model; for any model,
``bilm(bilm.batch_to_ids(sentences))`` (``batch_to_ids`` alone is the bilm-tf byte scheme).
Reduced precision (opt-in, inference): ``BiLM.from_files(..., precision="bfloat16")``, see
:mod:`.precision`.

This package imports nothing of spacy_elmo outside itself but :mod:`spacy_elmo.errors`, which
imports nothing (tests/test_architecture.py): model
names (packaged or downloaded) given to ``BiLM.from_pretrained`` resolve through the hook in
:mod:`.resolver`, which ``import spacy_elmo`` points at :mod:`spacy_elmo.hub.resolve`.
"""
# Loaded on first access (torch is imported then), so that importing the package is light.
_LAZY = {"BiLM": ".model", "BiLMOutput": ".model", "batch_to_ids": ".chars"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'spacy_elmo.bilm' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(_LAZY[name], __name__)
    return getattr(module, name)


__all__ = ["BiLM", "BiLMOutput", "batch_to_ids"]
