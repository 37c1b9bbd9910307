"""The embed command's error (its own module, so that the input readers raise it without
importing :mod:`.run`)."""
from ..bilm.errors import ElmoError


class EmbedError(ElmoError, ValueError):
    """An embed run cannot start: bad option (``--format``, ``--lang``), an input that is not
    UTF-8 text, not JSON lines with the text field, or not a DocBin, output that exists with
    other arguments. The message names the file (and line) or option. Subclasses
    :class:`ValueError`."""
