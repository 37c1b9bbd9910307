"""Find and load the biLM files named in a config, with errors that name the path and key."""
import os
from typing import Optional, Tuple

from ..bilm.finite import is_finite_number
from ..errors import ElmoConfigError


def check_number(value, key: str, where: str = "", below: Optional[float] = None) -> float:
    """``value`` as a float if it is a finite number >= 0 (and < ``below`` when given: a dropout
    rate); else ElmoConfigError naming ``where`` and ``key``. Configs can give ``NaN``,
    ``Infinity`` or ``1e999`` (spaCy's config reader parses them), and a NaN setting makes every
    vector or gradient NaN."""
    if not (is_finite_number(value) and value >= 0 and (below is None or value < below)):
        bound = f" and < {below:g}" if below is not None else ""
        raise ElmoConfigError(f"{where + ' ' if where else ''}{key} must be a finite number >= 0{bound}, got "
                              f"{value!r}", key, None)
    return float(value)


def check_paths(name: Optional[str], options_path: Optional[str], weights_path: Optional[str], where: str,
                name_key: str = "name") -> None:
    """Raise ElmoConfigError unless ``options_path`` and ``weights_path`` are both set or both
    unset (one without the other would pair files of two different models). ``name_key``: the
    config key of ``name`` in messages."""
    if bool(options_path) != bool(weights_path):
        given, missing = ("options_path", "weights_path") if options_path else ("weights_path", "options_path")
        raise ElmoConfigError(f"{where} {given} is set but {missing} is not: set both (the options.json "
                              f"and weights.hdf5 of one ELMo model), or neither to use {name_key} = {name!r}",
                              missing, None)


def resolve_files(name: Optional[str], options_path: Optional[str], weights_path: Optional[str],
                  where: str, name_key: str = "name") -> Tuple[Tuple[str, str], Tuple[str, str]]:
    """((options key, options file), (weights key, weights file)). ``options_path`` and
    ``weights_path`` (both or neither) win over ``name`` (a packaged or downloaded model's
    name, see :func:`spacy_elmo.hub.resolve.resolve`, or a model directory), whose config key
    is ``name_key``. Raises ElmoConfigError naming ``where`` and the key when only one of the two
    paths is set or a file cannot be found."""
    from ..hub.resolve import model_files

    check_paths(name, options_path, weights_path, where, name_key)
    files = {}
    if not (options_path and weights_path):
        try:
            files = dict(zip(("options_path", "weights_path"), model_files(name or "")))
        except FileNotFoundError as err:
            raise ElmoConfigError(f"{where} {name_key} = {name!r}: {err}. Or set options_path and "
                                  "weights_path.", name_key, name) from None
    out = []
    for key, given in (("options_path", options_path), ("weights_path", weights_path)):
        path, used_key = (os.fspath(given), key) if given else (files[key], name_key)
        if not os.path.isfile(path):
            raise ElmoConfigError(f"{where} {used_key}: file not found: {path!r} (the ELMo "
                                  f"{'options.json' if key == 'options_path' else 'weights.hdf5'})",
                                  used_key, path)
        out.append((used_key, path))
    return out[0], out[1]


def load_config_bilm(name: Optional[str], options_path: Optional[str], weights_path: Optional[str], where: str,
                     name_key: str = "name"):
    """:func:`spacy_elmo.hub.load_bilm` of the files :func:`resolve_files` finds (a
    :class:`~spacy_elmo.bilm.BiLM`, frozen, eval mode, on CPU), with errors that name the config
    key: ElmoConfigError (a ValueError) naming the key and path for a missing, unreadable or
    malformed file (wrapping the biLM's ElmoModelFileError)."""
    from ..errors import ElmoModelFileError
    from ..hub import load_bilm

    (okey, opath), (wkey, wpath) = resolve_files(name, options_path, weights_path, where, name_key)
    try:
        return load_bilm(options_path=opath, weights_path=wpath)
    except (ElmoModelFileError, OSError) as err:
        bad = getattr(err, "path", None)
        key, path = (okey, opath) if bad and os.path.abspath(bad) == os.path.abspath(opath) else (wkey, wpath)
        raise ElmoConfigError(f"{where} {key} = {path!r}: cannot load the ELMo biLM: {err}", key, path) from err
