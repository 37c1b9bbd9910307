"""Pure-PyTorch ELMo biLM (no spaCy here): char ids, char CNN, biLSTM, weight files.

    from spacy_elmo.bilm import BiLM, batch_to_ids
    bilm = BiLM.from_files("options.json", "weights.hdf5")
    out = bilm(batch_to_ids([["The", "cat", "sat"], ["Hi"]]))
    out.layers  # (num_layers + 1, batch, max_len, 2 * projection_dim); out.mask (batch, max_len)
"""
from .chars import batch_to_ids
from .errors import ElmoWeightsError
from .model import BiLM, BiLMOutput

__all__ = ["BiLM", "BiLMOutput", "ElmoWeightsError", "batch_to_ids"]
