"""AllenNLP 2.10.1's outputs stored in tests/data/allennlp/ (written by its make_reference.py) and
the comparison the tests of :mod:`spacy_elmo.allennlp` make against them (max abs diff <= TOL)."""
import json
import os
from functools import lru_cache

import numpy

from helpers import REPO, reference_dir

DATA = REPO / "tests" / "data" / "allennlp"
TOL = 1e-5  # max abs difference from AllenNLP's float32 outputs


@lru_cache(maxsize=None)
def inputs() -> dict:
    return json.loads((DATA / "inputs.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def reference() -> dict:
    with numpy.load(DATA / "reference.npz") as npz:
        return {k: npz[k] for k in npz.files}


def model_files(model: str):
    """(options.json, weights.hdf5) of "tf" (the bilm-tf fixture, in the shared folder) or
    "random" (stored here)."""
    if model == "tf":
        return str(reference_dir() / "options.json"), str(reference_dir() / "lm_weights.hdf5")
    return str(DATA / "random" / "options.json"), str(DATA / "random" / "weights.hdf5")


def mixes(n_reps: int) -> dict:
    """The scalar-mix parameters AllenNLP's models had, by AllenNLP's state-dict names."""
    import torch

    return {k: torch.tensor(v) for k, v in inputs()["mixes"].items()
            if int(k.split(".")[0][len("scalar_mix_"):]) < n_reps}


def max_diff(out: dict, key: str) -> float:
    """Max abs difference of an ``Elmo`` output from AllenNLP's ``key``; raises AssertionError if
    the masks or shapes differ."""
    ref = reference()
    mask = out["mask"].cpu().numpy()
    assert mask.shape == ref[f"{key}/mask"].shape and (mask == ref[f"{key}/mask"]).all(), key
    reps = out["elmo_representations"]
    assert len(reps) == sum(k.startswith(f"{key}/rep") for k in ref), key
    worst = 0.0
    for k, rep in enumerate(reps):
        got, want = rep.detach().cpu().numpy(), ref[f"{key}/rep{k}"]
        assert got.shape == want.shape, (key, got.shape, want.shape)
        worst = max(worst, float(numpy.abs(got - want).max()))
    return worst


def assert_matches(out: dict, key: str) -> float:
    """Assert ``out`` is AllenNLP's ``key`` to TOL; returns the max abs difference."""
    diff = max_diff(out, key)
    assert diff <= TOL, f"{key}: max abs diff {diff:.3g} > {TOL}"
    return diff


def fixture_available() -> bool:
    return os.path.isfile(model_files("tf")[1])
