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
Files: :mod:`.options`, :mod:`.weights` (bilm-tf HDF5 layout), errors :class:`ElmoWeightsError`.
Token ids come from the model's own indexer (``bilm.indexer``, :mod:`.indexer`): bilm-tf's bytes,
or the learned character vocabulary of a converted ELMoForManyLangs model; for any model,
``bilm(bilm.batch_to_ids(sentences))`` (``batch_to_ids`` alone is the bilm-tf byte scheme).
Reduced precision (opt-in, inference): ``BiLM.from_files(..., precision="bfloat16")``, see
:mod:`.precision`.
"""
from .chars import batch_to_ids
from .errors import ElmoWeightsError
from .model import BiLM, BiLMOutput
from .pretrained import DEFAULT_MODEL, available as available_models

__all__ = ["BiLM", "BiLMOutput", "DEFAULT_MODEL", "ElmoWeightsError", "available_models", "batch_to_ids"]
