"""AllenNLP's ELMo API on this package's biLM: a drop-in for ``allennlp.modules.elmo`` and for
AllenNLP 0.9's ``ElmoEmbedder`` (removed in AllenNLP 1.0). Pure PyTorch: no spaCy here.

    from spacy_elmo.allennlp import Elmo, batch_to_ids   # was: from allennlp.modules.elmo import ...
    elmo = Elmo(options_file, weight_file, 2, dropout=0)
    out = elmo(batch_to_ids([["First", "sentence", "."], ["Another", "."]]))
    out["elmo_representations"]  # 2 tensors (2, 3, 1024); out["mask"] (2, 3)

- :func:`batch_to_ids` (:mod:`.ids`), :class:`Elmo`, :class:`ElmoBiLm` (AllenNLP's ``_ElmoBiLm``;
  :mod:`.elmo`), :class:`ScalarMix` (:mod:`.scalar_mix`), :class:`ElmoEmbedder` (:mod:`.embedder`).
- Files: paths, model names or directories, and the four official S3 URLs, which resolve through
  the download cache (:mod:`.files`); nothing downloads implicitly.
- Differences on purpose: stateless by default (``Elmo(..., stateful=True)`` carries the LSTM
  state as AllenNLP does); see docs/allennlp.md.

This package imports only :mod:`spacy_elmo.bilm`, :mod:`spacy_elmo.errors` and the text reader
:mod:`spacy_elmo.text_files` (tests/test_allennlp.py).
"""
from .elmo import Elmo, ElmoBiLm, remove_sentence_boundaries
from .embedder import DEFAULT_BATCH_SIZE, ElmoEmbedder
from .files import DEFAULT_OPTIONS_FILE, DEFAULT_WEIGHT_FILE, OFFICIAL_MODELS
from .ids import batch_to_ids
from .scalar_mix import ScalarMix

__all__ = ["DEFAULT_BATCH_SIZE", "DEFAULT_OPTIONS_FILE", "DEFAULT_WEIGHT_FILE", "OFFICIAL_MODELS", "Elmo",
           "ElmoBiLm", "ElmoEmbedder", "ScalarMix", "batch_to_ids", "remove_sentence_boundaries"]
