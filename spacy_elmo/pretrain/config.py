"""Pretraining config: confection (spaCy-style) files with dotted CLI overrides."""
import difflib
import json
import os
import shlex
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from confection import Config

from ..bilm.files import CONFIG_BYTES, read_text
from ..bilm.finite import is_finite_number, is_number, non_finite
from ..errors import ElmoConfigError

DEFAULT_CONFIG_PATH = Path(__file__).parent / "default.cfg"

REQUIRED = {
    "corpus": ["paths", "block_lines", "heldout_every", "max_sentence_tokens"],
    "vocab": ["size", "min_count"],
    "model": ["char_dim", "filters", "n_highway", "activation", "lstm_dim", "projection_dim", "n_layers"],
    "softmax": ["cutoffs", "div_value"],
    "training": ["seed", "max_steps", "tokens_per_batch", "learning_rate"],
}


def default_config_text() -> str:
    return DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")


def _did_you_mean(name: str, known, what: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"did you mean {close[0]}?" if close else f"known {what}: {', '.join(known)}"


def _check_known(section: str, name: str, default: Config, where: str) -> None:
    """ElmoConfigError (a ValueError) unless [section] name is a setting of the default config."""
    if section not in default:
        raise ElmoConfigError(f"[{section}]: unknown section{where}; {_did_you_mean(section, default, 'sections')}")
    if name not in default[section]:
        raise ElmoConfigError(f"[{section}] {name}: unknown setting{where}; "
                              f"{_did_you_mean(name, default[section], 'settings')}")


def _check_type(section: str, name: str, value, default_value, where: str) -> None:
    """ElmoConfigError (a ValueError) unless value has the type of the default: int, float
    (an int is fine), bool, str, list; a null default takes a string or null. Numbers must be
    finite and >= 0 (no setting takes a negative value); numbers inside a list (``filters``,
    ``cutoffs``) finite."""
    if default_value is None:
        ok, expected = value is None or isinstance(value, str), "a string or null"
    elif isinstance(default_value, bool):
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default_value, int):
        ok, expected = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default_value, float):
        ok, expected = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif isinstance(default_value, str):
        ok, expected = isinstance(value, str), "a string"
    elif isinstance(default_value, (list, tuple)):
        ok, expected = isinstance(value, (list, tuple)), "a list"
    else:
        ok, expected = True, ""
    if not ok:
        fix = _as_list(section, name, [value], default_value, where)
        raise ElmoConfigError(f"[{section}] {name} = {value!r}{where}: expected {expected} "
                              f"(default: {json.dumps(default_value)}){fix}")
    if is_number(value) and not (is_finite_number(value) and value >= 0):
        raise ElmoConfigError(f"[{section}] {name} = {value!r}{where}: expected a finite number >= 0 "
                              f"(default: {json.dumps(default_value)})")
    bad = non_finite(value) if isinstance(value, (list, tuple)) else None
    if bad is not None:
        raise ElmoConfigError(f"[{section}] {name} = {value!r}{where}: item {bad[0]} is {bad[1]!r}, expected a "
                              f"finite number (default: {json.dumps(default_value)})")


def _as_list(section: str, name: str, values: list, default_value, where: str) -> str:
    """The fix where a list setting got one or more strings or numbers (``--corpus.paths
    file.txt``; ``--corpus.paths a.txt b.txt``): ``; write --corpus.paths '["a.txt", "b.txt"]'``
    (JSON, quoted for a POSIX shell) for a command-line override (``where`` names it), ``; write
    paths = ["file.txt"]`` for a config file; "" where the default's items are of another kind
    (``filters``: pairs) or a value is no single item."""
    if not isinstance(default_value, (list, tuple)):
        return ""
    if any(isinstance(value, (bool, list, tuple, dict)) or value is None for value in values):
        return ""
    if any(isinstance(item, (bool, list, tuple, dict)) or isinstance(item, str) != isinstance(value, str)
           for item in default_value for value in values):
        return ""
    listed = json.dumps(list(values), ensure_ascii=False)
    if where == f" (--{section}.{name})":
        return f"; write --{section}.{name} {shlex.quote(listed)}"
    return f"; write {name} = {listed}"


SYNTAX = "Config overrides are --section.key VALUE (e.g. --training.max_steps 1000)."


def _override_args(args: List[str]) -> List[Tuple[str, str, List[str]]]:
    """[(section.key, value, [stray values])] of command-line arguments ``--section.key VALUE``,
    ``--section.key=VALUE`` or a bare ``--section.key`` (value "true"), in order; stray values
    are the arguments after the value up to the next ``--`` (``--corpus.paths a.txt b.txt``:
    ``b.txt``). Raises ElmoConfigError for a first argument that does not start with ``--`` or a
    name without a section (``--max_steps``)."""
    items: List[Tuple[str, str, List[str]]] = []
    args = list(args)
    while args:
        arg = args.pop(0)
        if not arg.startswith("--"):
            raise ElmoConfigError(f"Invalid config override {arg!r}: a name starts with --.")
        name = arg[2:]
        if "=" in name:
            name, value = name.split("=", 1)
        elif not args or args[0].startswith("--"):
            value = "true"
        else:
            value = args.pop(0)
        if "." not in name:
            raise ElmoConfigError(f"No such option {arg!r}.")
        strays = []
        while args and not args[0].startswith("--"):
            strays.append(args.pop(0))
        items.append((name, value, strays))
    return items


def _parsed(value: str) -> object:
    """A command-line value read as JSON (``1000``, ``0.5``, ``true``, ``null``, ``["a.txt"]``),
    else the string it is."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_overrides(args: List[str]) -> Dict[str, object]:
    """``{"section.key": value}`` from command-line arguments ``--section.key VALUE``,
    ``--section.key=VALUE`` or a bare ``--section.key`` (true), the syntax of spaCy's config
    overrides. A value is read as JSON (``1000``, ``0.5``, ``true``, ``null``, ``["a.txt"]``),
    else kept as the string it is. Raises ElmoConfigError (a ValueError) for an argument that does
    not start with ``--`` (a second value after a name among them) or names no section
    (``--max_steps``). Needs no spaCy (a pre-tokenised corpus trains without it)."""
    result: Dict[str, object] = {}
    for name, value, strays in _override_args(args):
        if strays:
            raise ElmoConfigError(f"Invalid config override {strays[0]!r}: a name starts with --.")
        result[name] = _parsed(value)
    return result


def _with_syntax(message: str) -> str:
    return f"{message}{'' if message.endswith(('.', '?')) else '.'} {SYNTAX}"


def _stray_values(name: str, values: List[str], default: Config) -> ElmoConfigError:
    """The error for ``--name`` followed by several values: for a list setting of strings or
    numbers, the one JSON list that holds them all, quoted for the shell (the fix of
    :func:`_as_list`); else the syntax of an override."""
    section, _, key = name.partition(".")
    fix = _as_list(section, key, [_parsed(value) for value in values], default[section][key], f" (--{name})")
    message = f"Invalid config override {values[1]!r}: a name starts with --, and --{name} takes one value"
    if fix:
        return ElmoConfigError(f"{message} (a list is one JSON value){fix}", key=name)
    return ElmoConfigError(_with_syntax(message), key=name)


def check_output_dir(output_dir: Union[str, Path]) -> None:
    """Raise ElmoConfigError (a ValueError, one line) where ``pretrain``'s OUTPUT_DIR, or the
    nearest of its parents that exists, is a file rather than a folder (see
    :func:`spacy_elmo.locks.folder_in_the_way`)."""
    from ..locks import folder_in_the_way

    why = folder_in_the_way(output_dir)
    if why is not None:
        raise ElmoConfigError(f"OUTPUT_DIR {str(output_dir)!r}{why}: give the folder to write the run into "
                              "(one that does not exist is created)", path=output_dir)


def parse_command_line(output_dir: str, args: List[str]) -> Dict[str, object]:
    """Check ``pretrain``'s OUTPUT_DIR and parse its extra arguments (:func:`parse_overrides`).
    Raises ElmoConfigError (a ValueError, one line; the syntax of an override recalled where no
    fix is shown) for an OUTPUT_DIR that starts with ``-`` (an unknown option taken as the
    directory; write ``./-name`` for such a folder), an argument that is not ``--section.key``,
    a section or setting the default config lacks, or a second value after a setting (for a
    list setting, the one quoted JSON list to write instead: ``--corpus.paths a.txt b.txt`` ->
    ``--corpus.paths '["a.txt", "b.txt"]'``)."""
    if output_dir.startswith("-"):
        raise ElmoConfigError(_with_syntax(f"No such option {output_dir!r} (OUTPUT_DIR may not start with '-'; "
                                           f"for such a folder write ./{output_dir})."))
    default = Config().from_str(default_config_text(), interpolate=False)
    try:
        items = _override_args(args)
        for name, _, _ in items:
            section, _, key = name.partition(".")
            _check_known(section, key, default, f" (--{name})")
    except ElmoConfigError as err:
        raise ElmoConfigError(_with_syntax(str(err))) from None
    overrides: Dict[str, object] = {}
    for name, value, strays in items:
        if strays:
            raise _stray_values(name, [value, *strays], default)
        overrides[name] = _parsed(value)
    return overrides


def load_config(path: Optional[Union[str, Path]] = None, overrides: Optional[Dict[str, object]] = None) -> Config:
    """Load a config (default: the packaged default.cfg) and apply ``{"section.key": value}``.

    Missing sections/keys are filled from the default. Raises ElmoConfigError (a ValueError) naming the key for a
    section or setting (in the file or an override) that the default config lacks, or a value
    whose type differs from the default's or a negative or non-finite number; FileNotFoundError for
    a missing config file.
    """
    default = Config().from_str(default_config_text(), interpolate=False)
    base = default.copy()
    sources = {}
    if path is not None:
        if not os.path.exists(path):
            raise FileNotFoundError(f"Config file not found: {path}")
        user = Config().from_str(read_text(path, CONFIG_BYTES, "config file"), interpolate=False)
        for section in user:
            for name in user[section]:
                _check_known(section, name, default, f" in {path}")
                sources[(section, name)] = f" in {path}"
        base = base.merge(user)
    for key, value in (overrides or {}).items():
        section, _, name = key.partition(".")
        if not name or section not in base:
            raise ElmoConfigError(f"Unknown config override --{key}: expected --section.key with a section of "
                                  f"{list(base)}")
        _check_known(section, name, default, f" (--{key})")
        sources[(section, name)] = f" (--{key})"
        base[section][name] = value
    for section, keys in REQUIRED.items():
        for key in keys:
            if key not in base.get(section, {}):
                raise ElmoConfigError(f"Config is missing [{section}] {key}")
    for section in default:
        for name, default_value in default[section].items():
            _check_type(section, name, base[section][name], default_value, sources.get((section, name), ""))
    return base


def user_keys(path: Optional[Union[str, Path]], overrides: Optional[Dict[str, object]] = None) -> set:
    """The ``"section.key"`` names a user set: in the config file at ``path`` (None: none) and in
    ``overrides`` (the settings :func:`load_config` did not fill from the default)."""
    keys = set(overrides or {})
    if path is not None and os.path.exists(path):
        user = Config().from_str(read_text(path, CONFIG_BYTES, "config file"), interpolate=False)
        keys.update(f"{section}.{name}" for section in user for name in user[section])
    return keys
