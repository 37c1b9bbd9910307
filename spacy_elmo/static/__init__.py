"""``python -m spacy_elmo static-vectors MODEL CORPUS OUTPUT_DIR``: static word vectors distilled
from a biLM (Bommasani et al. 2020): each word's vector is the mean of a view of its contextual
vectors over up to ``--max-contexts`` of its occurrences, written as a spaCy vectors pipeline, as
word2vec text and with a card naming the model and view.

    from spacy_elmo.static import distil_vectors
    card = distil_vectors("en_elmo_small", ["corpus/*.txt.gz"], "static_out", view="layer_1")

Modules: :mod:`.corpus` (reading and the first pass), :mod:`.accumulate` (the running sums),
:mod:`.checkpoint` (resuming), :mod:`.postprocess` (centring, all-but-the-top), :mod:`.writer`
(OUTPUT_DIR), :mod:`.run` (:func:`distil_vectors`, :func:`distil_means`).
"""
_RUN = ("Distilled", "distil_means", "distil_vectors", "plan")


def __getattr__(name: str):
    """The run's names, imported on first use: ``python -m spacy_elmo`` loads this package's CLI
    without spaCy."""
    if name in _RUN:
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["Distilled", "distil_means", "distil_vectors", "plan"]
