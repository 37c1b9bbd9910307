"""The one error handler of ``python -m spacy_elmo``: every command is wrapped by
:func:`one_line_errors` when the typer app is assembled (:mod:`spacy_elmo.__main__`)."""
import functools

import typer

from .bilm.errors import ElmoError

EXIT_ERROR = 2  # bad input or a failed run (typer's usage errors exit 2 as well)
INPUT_ERRORS = (ElmoError, ValueError, OSError, ImportError)


def one_line_errors(command):
    """``command`` such that an :class:`~spacy_elmo.ElmoError` (or a ValueError, OSError or
    ImportError: a bad argument, a missing file, a missing extra) ends it with ``error: MESSAGE``
    on stderr, one line, and exit status :data:`EXIT_ERROR`. Anything else propagates."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except INPUT_ERRORS as err:
            message = " ".join(str(err).split()) or type(err).__name__
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(EXIT_ERROR) from None

    return wrapper
