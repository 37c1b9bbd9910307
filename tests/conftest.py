"""Shared test fixtures: the location of ../shared and of the bilm-tf reference model."""
import os

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _shared() -> str:
    return os.path.abspath(os.environ.get("SPACY_ELMO_SHARED", os.path.join(REPO, "..", "shared")))


@pytest.fixture(scope="session")
def shared_dir() -> str:
    """../shared beside the repository (override with $SPACY_ELMO_SHARED); skips if absent."""
    path = _shared()
    if not os.path.isdir(path):
        pytest.skip(f"shared data folder not found at {path} (set SPACY_ELMO_SHARED)")
    return path


@pytest.fixture(scope="session")
def fixture_dir(shared_dir) -> str:
    """The bilm-tf reference model and outputs: shared/fixtures/elmo-reference; skips if absent."""
    path = os.path.join(shared_dir, "fixtures", "elmo-reference")
    if not os.path.isfile(os.path.join(path, "lm_weights.hdf5")):
        pytest.skip(f"ELMo reference fixture not found at {path} (set SPACY_ELMO_SHARED)")
    return path


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Test models are tiny: one torch thread avoids OpenMP waits on a busy 2-core machine
    (faster, same results). Restored after each test module."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_terminal_summary(terminalreporter):
    """Say loudly when the parity and pipeline tests were skipped for want of ../shared."""
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if "SPACY_ELMO_SHARED" in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} tests skipped: shared data not found at {_shared()} "
                                        "(reference fixture, corpora); set SPACY_ELMO_SHARED", yellow=True)
