"""Where the native kernels are built (bilm/native.py): their own cache folder, not the
model cache; ``SPACY_ELMO_KERNELS`` overrides it. No compiler is run here."""
from pathlib import Path

from spacy_elmo.bilm import native


def test_kernels_dir_is_not_the_model_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(native.KERNELS_ENV, raising=False)
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "models"))
    default = native.kernels_dir()
    assert default.name == "_kernels" and default.parent.name == "spacy-elmo"
    assert tmp_path not in default.parents


def test_kernels_env_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv(native.KERNELS_ENV, str(tmp_path / "k"))
    assert native.kernels_dir() == tmp_path / "k"
    monkeypatch.setenv(native.KERNELS_ENV, "~/k")
    assert native.kernels_dir() == Path.home() / "k"


def test_sources_are_the_csrc_files():
    files = native.sources()
    assert list(files) == sorted(files) and native.MAIN in files
    assert "TORCH_LIBRARY(spacy_elmo_lstmp" in files[native.MAIN] and '#include "numerics.h"' in files[native.MAIN]
    assert "fast_exp" in files["numerics.h"]
