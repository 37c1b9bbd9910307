"""Where the probe's data live: the ``../shared`` folder beside the repository.

``$SPACY_ELMO_SHARED`` wins; otherwise ``../shared`` beside the repository root (right for an
editable install, ``pip install -e .``), else ``../shared`` beside the current directory.
"""
import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    """The shared folder (it may not exist: the readers raise FileNotFoundError naming the file)."""
    env = os.environ.get("SPACY_ELMO_SHARED")
    if env:
        return Path(env)
    beside_repo = _REPO.parent / "shared"
    return beside_repo if beside_repo.is_dir() else Path.cwd().parent / "shared"


def ewt_path(split: str) -> Path:
    """UD English-EWT CoNLL-U file of ``split`` ("train" or "dev")."""
    return shared_dir() / "data" / "ud_en_ewt" / f"en_ewt-ud-{split}.conllu"


def wic_dir() -> Path:
    """The WiC folder (train/dev ``*.data.txt`` + ``*.gold.txt``)."""
    return shared_dir() / "data" / "wic"


def lm_text_glob() -> str:
    """The pretraining text (gzip, one sentence per line)."""
    return str(shared_dir() / "data" / "lm" / "*.txt.gz")
