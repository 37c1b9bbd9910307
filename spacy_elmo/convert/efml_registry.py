"""The published ELMoForManyLangs models (Che et al. 2018) by language code, as listed in the
"Downloads" table of that project's README (github.com/HIT-SCIR/ELMoForManyLangs): one zip per
language on the NLPL vector repository, ``http://vectors.nlpl.eu/repository/11/<id>.zip``, each
trained on 20M words of that language's CoNLL 2018 raw text (Wikipedia + Common Crawl).

``python -m spacy_elmo download efml-de`` fetches, unpacks and converts one
(:mod:`.download`); ``SPACY_ELMO_EFML_MIRROR`` replaces the base URL (a mirror with the same
file names, or a local test server). Codes are ISO 639-1 where the language has one (``grc``:
Ancient Greek, ISO 639-3); ``efml-zh`` is the README's "Chinese" (traditional characters,
Wikipedia). The digests are not published: the sha256 of a zip is recorded at its first download.
"""
import os
from typing import Dict, List, Optional

BASE_URL = "http://vectors.nlpl.eu/repository/11"
MIRROR_ENV = "SPACY_ELMO_EFML_MIRROR"
PREFIX = "efml-"

# language code -> (NLPL repository id, language name as the README gives it)
LANGUAGES: Dict[str, tuple] = {
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


def url(name: str) -> Optional[str]:
    """The zip URL of a registered name (``efml-<code>``), under $SPACY_ELMO_EFML_MIRROR if set;
    None for any other name."""
    if not name.startswith(PREFIX) or name[len(PREFIX):] not in LANGUAGES:
        return None
    base = os.environ.get(MIRROR_ENV) or BASE_URL
    return f"{base.rstrip('/')}/{LANGUAGES[name[len(PREFIX):]][0]}.zip"


def names() -> List[str]:
    """The registered names, ``efml-ar`` ... ``efml-zh``."""
    return [PREFIX + code for code in sorted(LANGUAGES)]
