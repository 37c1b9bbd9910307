"""Register spacy-elmo's extension attributes as soon as spaCy is imported.

``import spacy_elmo`` must make ``doc._.elmo`` readable (Docs stored with user data, read in a
fresh process) without importing spaCy itself (which imports thinc and torch: seconds). If
``spacy`` is already imported, the extensions are installed now; otherwise a one-shot
``sys.meta_path`` finder wraps the loader of the ``spacy`` package and installs them right after
its ``__init__`` has run (importing ``spacy.tokens`` runs it first), then removes itself.
"""
import importlib.abc
import importlib.util
import sys

_TARGET = "spacy"


def _install() -> None:
    from .pipeline.extensions import install_extensions

    install_extensions()


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        _install()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)  # one shot; also avoids recursion in find_spec below
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install_on_spacy_import() -> None:
    """Install the extensions now if spaCy is loaded, else when it is."""
    if _TARGET in sys.modules:
        _install()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
