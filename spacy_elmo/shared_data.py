"""Where the data that do not ship with the package live: the ``shared`` folder.

``$SPACY_ELMO_SHARED`` wins; otherwise a folder ``shared`` beside the repository root (right for
an editable install, ``pip install -e .``), else one beside the current directory. The
one place that resolves it: the probe, the tests, the benchmarks, the dev scripts and the
project's ``scripts/copy_assets.py`` all ask here. Nothing here checks that a path exists; the
readers raise FileNotFoundError naming the file, the tests skip.

Layout: ``data/`` (corpora: UD English-EWT, WiC, the pretraining text, the NER sets),
``fixtures/elmo-reference/`` (a tiny bilm-tf model and TensorFlow's outputs for it),
``bench/`` (reference timings).
"""
import os
from pathlib import Path

ENV = "SPACY_ELMO_SHARED"
_REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """The shared folder, absolute (it may not exist)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser().resolve()
    beside_repo = _REPO.parent / "shared"
    return beside_repo if beside_repo.is_dir() else (Path.cwd().parent / "shared").resolve()


def reference_dir() -> Path:
    """The bilm-tf reference model (``options.json``, ``lm_weights.hdf5``) and TensorFlow's
    outputs for it (``lm_embeddings_*.hdf5``, ``elmo_token_embeddings.hdf5``, ``sentences.json``)."""
    return shared_dir() / "fixtures" / "elmo-reference"


def ewt_path(split: str) -> Path:
    """UD English-EWT CoNLL-U file of ``split`` ("train" or "dev")."""
    return shared_dir() / "data" / "ud_en_ewt" / f"en_ewt-ud-{split}.conllu"


def wic_dir() -> Path:
    """The WiC folder (train/dev ``*.data.txt`` + ``*.gold.txt``)."""
    return shared_dir() / "data" / "wic"


def lm_text_glob() -> str:
    """The pretraining text (gzip, one sentence per line)."""
    return str(shared_dir() / "data" / "lm" / "*.txt.gz")
