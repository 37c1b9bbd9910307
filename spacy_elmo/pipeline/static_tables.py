"""The name a distilled static table carries as ``vocab.vectors.name``: which biLM (digest) and
view it came from, so the similarity guard of :mod:`.vector_hooks` can tell (written by
:mod:`spacy_elmo.static`)."""
TABLE_PREFIX = "spacy_elmo_static"


def table_name(digest: str, view: str) -> str:
    """The ``vocab.vectors.name`` of a distilled table: ``spacy_elmo_static|DIGEST|VIEW``
    (VIEW: the layer spec, with ``+centred`` or ``+abttD`` after post-processing)."""
    return f"{TABLE_PREFIX}|{digest}|{view}"


def parse_table_name(name) -> tuple:
    """(digest, view) of a :func:`table_name`, or None for any other name."""
    parts = name.split("|") if isinstance(name, str) else []
    return (parts[1], parts[2]) if len(parts) == 3 and parts[0] == TABLE_PREFIX else None
