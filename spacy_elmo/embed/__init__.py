"""``python -m spacy_elmo embed INPUT OUTPUT.hdf5``: ELMo vectors of a corpus, in the HDF5 layout
of AllenNLP's removed ``elmo`` command (one dataset per input line, plus ``sentence_to_index``).

    from spacy_elmo.embed import embed_file
    embed_file("sentences.txt", "out.hdf5", model="elmo-small", layer_spec="top", dtype="float16")

Modules: :mod:`.inputs` (text / JSONL / DocBin records), :mod:`.layers` (``--layers``),
:mod:`.writer` (crash-safe parts and the final file), :mod:`.run` (:func:`embed_file`).
"""
from .run import embed_file

__all__ = ["embed_file"]
