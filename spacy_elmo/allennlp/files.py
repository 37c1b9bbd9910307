"""Where ``options_file`` / ``weight_file`` point: a file, a model name or directory we load, or
one of the official AllenNLP S3 URLs, which name a model of our download cache.

Nothing downloads here. An official URL resolves to the cached model of that name
(``python -m spacy_elmo download elmo-small`` and so on); a model that is not downloaded raises
FileNotFoundError with that command. Other URLs are refused with the command that downloads them
once under a name. Names and directories resolve as for ``BiLM.from_pretrained``
(:mod:`spacy_elmo.bilm.resolver`).
"""
import os
import re
from typing import Optional, Tuple, Union
from urllib.parse import urlsplit

from ..bilm import resolver
from ..errors import ElmoConfigError, ElmoTypeError

# AllenNLP's published English models: the folder of their URLs -> the name our cache keeps them under.
OFFICIAL_MODELS = {
    "2x1024_128_2048cnn_1xhighway": "elmo-small",
    "2x2048_256_2048cnn_1xhighway": "elmo-medium",
    "2x4096_512_2048cnn_2xhighway": "elmo-original",
    "2x4096_512_2048cnn_2xhighway_5.5B": "elmo-original-5.5b",
}
_HOSTS = {"allennlp.s3.amazonaws.com": "", "allennlp.s3-us-west-2.amazonaws.com": "",
          "s3-us-west-2.amazonaws.com": "/allennlp", "s3.amazonaws.com": "/allennlp"}
_PATH = re.compile(r"/models/elmo/(?P<shape>[^/]+)/elmo_(?P=shape)_(?P<file>options\.json|weights\.hdf5)")
FILES = ("options.json", "weights.hdf5")
BASE = "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway/elmo_2x4096_512_2048cnn_2xhighway"
DEFAULT_OPTIONS_FILE = BASE + "_options.json"  # AllenNLP 0.9's defaults (the original model)
DEFAULT_WEIGHT_FILE = BASE + "_weights.hdf5"

PathLike = Union[str, "os.PathLike[str]"]


def official_name(url: str) -> Optional[Tuple[str, str]]:
    """(model name, "options.json" or "weights.hdf5") of an official AllenNLP ELMo URL, else None."""
    parts = urlsplit(url)
    prefix = _HOSTS.get(parts.netloc.lower())
    if parts.scheme not in ("http", "https") or prefix is None or not parts.path.startswith(prefix):
        return None
    match = _PATH.fullmatch(parts.path[len(prefix):])
    name = match and OFFICIAL_MODELS.get(match["shape"])
    return (name, match["file"]) if name else None


def _is_url(spec: str) -> bool:
    return bool(re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", spec))


def locate(spec: PathLike, role: str) -> str:
    """The path of the ``role`` file ("options.json" or "weights.hdf5") that ``spec`` names: a
    file path as it is; an official URL or a model name or directory: that model's file.

    Raises FileNotFoundError for a name or path that resolves to no model (a registered model
    not yet downloaded: with its download command); ElmoConfigError (a ValueError) for another
    URL, or an official URL of the other file; ElmoTypeError for a spec that is no path."""
    if not isinstance(spec, (str, os.PathLike)):
        raise ElmoTypeError(f"expected a path, model name or URL for {role}, got {type(spec).__name__}")
    spec = os.fspath(spec)
    if _is_url(spec):
        found = official_name(spec)
        if found is None:
            raise ElmoConfigError(f"{spec!r} is not one of the official AllenNLP ELMo URLs and nothing downloads "
                                  "implicitly: run python -m spacy_elmo download URL_OF_OPTIONS URL_OF_WEIGHTS "
                                  "--name NAME once, then pass NAME")
        name, file = found
        if file != role:
            raise ElmoConfigError(f"{spec!r} is the {file} of {name!r}; expected its {role}")
        spec = name
    elif os.path.isfile(spec):
        return spec
    return resolver.model_files(spec)[FILES.index(role)]


def model_files(options_file: PathLike, weight_file: Optional[PathLike]) -> Tuple[str, str]:
    """(options.json path, weights.hdf5 path). ``weight_file`` None: the weights of the model that
    ``options_file`` names (a model name, a directory or an official URL). Raises as
    :func:`locate`, and ElmoConfigError when ``weight_file`` is None beside an options file."""
    if options_file is None:
        raise ElmoConfigError("options_file is None: give an options file, a model name or directory, or an "
                              "official AllenNLP URL (or module= with both files None)")
    options = locate(options_file, "options.json")
    if weight_file is None:
        if os.path.isfile(os.fspath(options_file)):
            raise ElmoConfigError(f"weight_file is None beside the options file {os.fspath(options_file)!r}: "
                                  "give the weights file, or a model name or directory as options_file")
        weight_file = options_file
        if isinstance(weight_file, str) and official_name(weight_file):
            weight_file = official_name(weight_file)[0]
    return options, locate(weight_file, "weights.hdf5")
