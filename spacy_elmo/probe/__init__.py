"""What does each biLM layer know? Per-layer probes of an ELMo biLM (``python -m spacy_elmo probe``).

- :mod:`.linear`: linear probes (scikit-learn): UPOS from one token's vector (UD EWT), WiC from
  [u * v, |u - v|];
- :mod:`.wic`: WiC reading and the cosine-threshold score (also used by ``dev/wic.py``);
- :mod:`.contextuality`: anisotropy, self-similarity, intra-sentence similarity (Ethayarajh 2019);
- :mod:`.senses`: same-sense vs cross-sense cosines of a word's uses (``dev/contextual_probe.py``);
- :mod:`.centering`: per-layer mean vectors from the pretraining text (does removing them help WiC?);
- :mod:`.mixes`: the learned scalar mixes of trained pipelines;
- :mod:`.run` (:func:`run_probe`), :mod:`.report` and :mod:`.plot`: run it all, write
  probe.json / probe.md / probe.png.

Needs the ``[probe]`` extra (scikit-learn, matplotlib). Importing this package is light: the
names below load on first access.
"""
_RUN = ("ProbeSettings", "run_probe", "REFERENCE")


def __getattr__(name):
    if name in _RUN:
        from . import run

        return getattr(run, name)
    if name == "write_outputs":
        from .report import write_outputs

        return write_outputs
    raise AttributeError(f"module 'spacy_elmo.probe' has no attribute {name!r}")


__all__ = [*_RUN, "write_outputs"]
