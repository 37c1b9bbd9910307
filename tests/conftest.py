"""Shared test fixtures.

- ``tiny_model``: a small random biLM written by our own writer (``BiLM.save``) into a temporary
  folder, seeded: every test that needs *a* model uses it, so they run in a fresh clone.
- ``shared_dir`` / ``fixture_dir``: the ``shared`` folder (:func:`helpers.shared_dir`) and the
  bilm-tf reference model with TensorFlow's outputs in it; they skip when it is absent. Only the
  reference-parity tests and the tests on the corpora use them.
"""
import pytest
import torch

from helpers import ModelFiles, reference_dir, shared_dir as find_shared_dir, write_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> ModelFiles:
    """The tiny random biLM (options.json + weights.hdf5 + sha256.json, the bilm-tf layout; the
    reference model's shapes: 2 layers of 64 cells, output width 32). Read-only: copy it to edit."""
    return write_tiny_model(tmp_path_factory.mktemp("tiny_elmo"))


@pytest.fixture(scope="session")
def shared_dir() -> str:
    """../shared beside the repository (override with $SPACY_ELMO_SHARED); skips if absent."""
    path = find_shared_dir()
    if not path.is_dir():
        pytest.skip(f"shared data folder not found at {path} (set SPACY_ELMO_SHARED)")
    return str(path)


@pytest.fixture(scope="session")
def fixture_dir(shared_dir) -> str:
    """The bilm-tf reference model and TensorFlow's outputs for it (shared/fixtures/elmo-reference),
    for the parity tests; skips if absent."""
    path = reference_dir()
    if not (path / "lm_weights.hdf5").is_file():
        pytest.skip(f"ELMo reference fixture not found at {path} (set SPACY_ELMO_SHARED)")
    return str(path)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Test models are tiny: one torch thread avoids OpenMP waits on a busy 2-core machine
    (faster, same results). Restored after each test module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_terminal_summary(terminalreporter):
    """Say loudly when the parity and corpus tests were skipped for want of ../shared."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if "SPACY_ELMO_SHARED" in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} tests skipped: shared data not found at "
                                        f"{find_shared_dir()} (reference fixture, corpora); "
                                        "set SPACY_ELMO_SHARED", yellow=True)
