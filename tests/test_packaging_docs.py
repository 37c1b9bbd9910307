"""docs/packaging.md states what ``spacy package`` does with a pipeline that uses the elmo
component: the requirement it adds, and that a meta.json requirement replaces it."""
from spacy.cli.package import get_third_party_dependencies
from thinc.api import Config

import spacy_elmo
import spacy_elmo.pipeline  # noqa: F401  (registers the factory)

from helpers import REPO

CONFIG = """
[nlp]
lang = "en"
pipeline = ["elmo"]
[components]
[components.elmo]
factory = "elmo"
"""


def test_the_documented_requirement_is_what_spacy_package_adds():
    major, minor, _ = spacy_elmo.__version__.split(".")
    pin = f"spacy-elmo>={major}.{minor}.0,<{major}.{int(minor) + 1}.0"
    config = Config().from_str(CONFIG)
    assert get_third_party_dependencies(config) == [pin]
    assert get_third_party_dependencies(config, exclude=["spacy-elmo"]) == []  # a meta.json requirement wins
    docs = (REPO / "docs" / "packaging.md").read_text(encoding="utf-8")
    assert pin in docs and f"spacy_elmo-{major}.{minor}." in docs
