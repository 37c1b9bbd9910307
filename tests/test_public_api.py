"""The public API: ``spacy_elmo``'s docstring lists exactly ``__all__``, and
``spacy_elmo.pipeline.__all__`` holds no registered factory or architecture function."""
import re

import spacy_elmo


def _documented_exports():
    doc = spacy_elmo.__doc__
    intro, *rest = doc[doc.index("It exports (``__all__``)"):].split("\n\n")
    items = []  # the list that follows the intro
    for paragraph in rest:
        if not paragraph.startswith("- "):
            break
        items.append(paragraph)
    return re.findall(r"``(\w+)``", "\n".join(items))


def test_docstring_lists_exactly_all():
    documented = _documented_exports()
    assert len(documented) == len(set(documented))
    assert sorted(documented) == sorted(spacy_elmo.__all__)
    for name in spacy_elmo.__all__:
        assert getattr(spacy_elmo, name) is not None


def test_pipeline_exports_no_registered_functions():
    import spacy

    from spacy_elmo import pipeline

    registered = {spacy.registry.architectures.get(name) for name in spacy.registry.architectures.get_all()
                  if name.startswith("spacy_elmo.")}
    registered.add(spacy.registry.factories.get("elmo"))
    assert len(registered) >= 6
    exported = {getattr(pipeline, name) for name in pipeline.__all__}
    assert not exported & registered
    assert not [name for name in pipeline.__all__ if name.endswith("_v1") or name in ("make_elmo", "DEFAULT_MODEL")]
