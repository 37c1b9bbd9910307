"""The catalog: every model name that ``python -m spacy_elmo download NAME`` takes, in one table.

Two families, one :class:`Entry` each:

- ``bilm-tf``: the English models published by AllenNLP (Peters et al. 2018), two files each at
  ``{BASE_URL}/<shape>/elmo_<shape>_{options.json,weights.hdf5}``. ``$SPACY_ELMO_MIRROR``
  replaces BASE_URL. Sizes are approximate (parameters x 4 bytes, float32).
- ``elmoformanylangs``: the ELMoForManyLangs models (Che et al. 2018), by language code, as the
  "Downloads" table of that project's README lists them: one zip per language,
  ``{EFML_BASE_URL}/<id>.zip``, each trained on 20M words of that language's CoNLL 2018 raw text
  (Wikipedia + Common Crawl); ``download`` unpacks and converts it (:mod:`.efml_download`).
  ``$SPACY_ELMO_EFML_MIRROR`` replaces EFML_BASE_URL. Their sizes are not published.

A mirror is a web server (http or https) with the same file names; any other scheme (``file:``,
``ftp:``) is refused, naming the variable. To use files you already have, load them by path
(``BiLM.from_files``, ``options_path`` / ``weights_path``), convert an unpacked
ELMoForManyLangs folder with ``python -m spacy_elmo convert``, or serve a folder of them as a
mirror with ``python -m http.server``. The sha256 of a file is given where it is known (None:
recorded at the first complete download). ``licence``: the terms the publishing project states.
No torch or spaCy import.
"""
import difflib
import os
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

from ..errors import ElmoConfigError
from .cache import ZIP
from .fetch import check_url

BILM_TF, EFML = "bilm-tf", "elmoformanylangs"
FORMATS = (BILM_TF, EFML)
BASE_URL = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"
MIRROR_ENV = "SPACY_ELMO_MIRROR"
EFML_BASE_URL = "http://vectors.nlpl.eu/repository/11"
EFML_MIRROR_ENV = "SPACY_ELMO_EFML_MIRROR"
EFML_PREFIX = "efml-"


@dataclass(frozen=True)
class Entry:
    """One downloadable model. ``format``: :data:`BILM_TF` (``options.json`` + ``weights.hdf5``)
    or :data:`EFML` (one zip, ``source.zip``); ``language``: ISO 639 code; ``size_mb``: the
    approximate download in MB (None: not published); ``paths``: {file: path under the base
    URL}; ``sha256``: {file: hex or None}; ``shape``: AllenNLP's architecture name (bilm-tf
    entries; None otherwise), with ``lstm_dim`` / ``projection_dim`` (output dim = 2 x
    projection_dim)."""

    name: str
    format: str
    language: str
    language_name: str
    size_mb: Optional[int]
    licence: str
    trained_on: str
    paths: Mapping[str, str]
    sha256: Mapping[str, Optional[str]]
    shape: Optional[str] = None
    lstm_dim: Optional[int] = None
    projection_dim: Optional[int] = None

    @property
    def mirror_env(self) -> str:
        return MIRROR_ENV if self.format == BILM_TF else EFML_MIRROR_ENV

    def urls(self) -> Dict[str, str]:
        """{file: URL}, under the mirror when its variable is set. Raises ElmoConfigError
        (a ValueError) naming the variable when the mirror is not an http(s) URL."""
        base = mirror(self.mirror_env, BASE_URL if self.format == BILM_TF else EFML_BASE_URL)
        return {file: f"{base.rstrip('/')}/{path}" for file, path in self.paths.items()}

    def as_dict(self) -> dict:
        """The entry as plain JSON values, with its current ``urls``."""
        return {"name": self.name, "format": self.format, "language": self.language,
                "language_name": self.language_name, "size_mb": self.size_mb, "licence": self.licence,
                "trained_on": self.trained_on, "urls": self.urls(), "sha256": dict(self.sha256),
                "shape": self.shape}


def mirror(env: str, default: str) -> str:
    """``$env`` if set (it must be an http(s) URL), else ``default``. Raises
    ElmoConfigError (a ValueError) naming the variable for any other value."""
    value = os.environ.get(env)
    if not value:
        return default
    try:
        return check_url(value)
    except ElmoConfigError:
        raise ElmoConfigError(
            f"${env} = {value!r}: a mirror must be an http(s) URL (a web server with the same file names; "
            "serve a folder with `python -m http.server`), or unset it") from None


def _allennlp(name: str, shape: str, lstm_dim: int, projection_dim: int, params_m: float, trained_on: str) -> Entry:
    files = {"options.json": f"{shape}/elmo_{shape}_options.json", "weights.hdf5": f"{shape}/elmo_{shape}_weights.hdf5"}
    return Entry(name, BILM_TF, "en", "English", round(params_m * 4), "Apache-2.0", trained_on, files,
                 {"options.json": None, "weights.hdf5": None}, shape, lstm_dim, projection_dim)


# ELMoForManyLangs: language code -> (NLPL repository id, language name as the README gives it).
# Codes are ISO 639-1 where the language has one (grc: Ancient Greek, ISO 639-3); zh is the
# README's "Chinese" (traditional characters, Wikipedia).
EFML_LANGUAGES: Dict[str, tuple] = {
    "ar": (136, "Arabic"), "bg": (137, "Bulgarian"), "ca": (138, "Catalan"), "cs": (139, "Czech"),
    "cu": (140, "Old Church Slavonic"), "da": (141, "Danish"), "de": (142, "German"), "el": (143, "Greek"),
    "en": (144, "English"), "es": (145, "Spanish"), "et": (146, "Estonian"), "eu": (147, "Basque"),
    "fa": (148, "Persian"), "fi": (149, "Finnish"), "fr": (150, "French"), "ga": (151, "Irish"),
    "gl": (152, "Galician"), "grc": (153, "Ancient Greek"), "he": (154, "Hebrew"), "hi": (155, "Hindi"),
    "hr": (156, "Croatian"), "hu": (157, "Hungarian"), "id": (158, "Indonesian"), "it": (159, "Italian"),
    "ja": (160, "Japanese"), "ko": (161, "Korean"), "la": (162, "Latin"), "lv": (163, "Latvian"),
    "nl": (164, "Dutch"), "nb": (165, "Norwegian Bokmål"), "nn": (166, "Norwegian Nynorsk"),
    "pl": (167, "Polish"), "pt": (168, "Portuguese"), "ro": (169, "Romanian"), "ru": (170, "Russian"),
    "sk": (171, "Slovak"), "sl": (172, "Slovene"), "sv": (173, "Swedish"), "tr": (174, "Turkish"),
    "ug": (175, "Uyghur"), "uk": (176, "Ukrainian"), "ur": (177, "Urdu"), "vi": (178, "Vietnamese"),
    "zh": (179, "Chinese (traditional)"),
}


def _efml(code: str) -> Entry:
    number, language = EFML_LANGUAGES[code]
    return Entry(EFML_PREFIX + code, EFML, code, language, None, "MIT", "CoNLL 2018 raw text, 20M words",
                 {ZIP: f"{number}.zip"}, {ZIP: None})


CATALOG: Dict[str, Entry] = {e.name: e for e in (
    _allennlp("elmo-small", "2x1024_128_2048cnn_1xhighway", 1024, 128, 13.6, "1B Word Benchmark"),
    _allennlp("elmo-medium", "2x2048_256_2048cnn_1xhighway", 2048, 256, 28.0, "1B Word Benchmark"),
    _allennlp("elmo-original", "2x4096_512_2048cnn_2xhighway", 4096, 512, 93.6, "1B Word Benchmark"),
    _allennlp("elmo-original-5.5b", "2x4096_512_2048cnn_2xhighway_5.5B", 4096, 512, 93.6,
              "Wikipedia + WMT 2008-2012 news, 5.5B tokens"),
    *(_efml(code) for code in sorted(EFML_LANGUAGES)),
)}


def get(name: str) -> Optional[Entry]:
    """The catalog entry of that name, or None."""
    return CATALOG.get(name)


def names(fmt: Optional[str] = None) -> List[str]:
    """Every name (of one format if ``fmt``): the AllenNLP models smallest first, then efml-ar ... efml-zh."""
    return [n for n, e in CATALOG.items() if fmt is None or e.format == fmt]


LIST_COMMAND = "python -m spacy_elmo models"


def closest(name: str, others: Sequence[str] = ()) -> List[str]:
    """Up to 3 names of ``others`` (e.g. the packaged models) and of the catalog close to
    ``name``, closest first (:func:`difflib.get_close_matches`, cutoff 0.6); [] when none is."""
    return difflib.get_close_matches(name, list(dict.fromkeys([*others, *names()])), n=3, cutoff=0.6)


def did_you_mean(name: str, others: Sequence[str] = ()) -> str:
    """``" (did you mean A, B or C?)"`` from :func:`closest`, or "" when no name is close."""
    close = closest(name, others)
    if not close:
        return ""
    listed = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f" (did you mean {listed}?)"


def listing() -> str:
    """Where the catalog's names are: ``"the catalog's 48 names are listed by: python -m spacy_elmo models"``."""
    return f"the catalog's {len(CATALOG)} names are listed by: {LIST_COMMAND}"


def unknown_name(name: str, others: Sequence[str] = ()) -> str:
    """The sentence for a name the catalog lacks, one line: the closest names (of ``others``,
    e.g. the packaged models, and of the catalog, closest first; :func:`did_you_mean`), then the
    number of catalog names and the command that lists them (:func:`listing`)."""
    return f"{name!r} is not a model of the catalog{did_you_mean(name, others)}; {listing()}"
