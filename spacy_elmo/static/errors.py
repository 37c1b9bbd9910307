"""The static-vectors command's error (its own module, so that every part raises it without
importing :mod:`.run`)."""
from ..bilm.errors import ElmoError


class StaticVectorsError(ElmoError, ValueError):
    """A distillation cannot start or finish: a bad option (``--view`` the model lacks,
    ``--min-count``), a corpus in which no word reaches ``--min-count``, an OUTPUT_DIR that
    exists (without ``--overwrite``, or that this command did not write) or that would hold an
    input. One-line message naming the option or path. Subclasses :class:`ValueError`."""
