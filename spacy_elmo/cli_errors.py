"""The one error handler of ``python -m spacy_elmo``: every command is wrapped by
:func:`one_line_errors` when the typer app is assembled (:mod:`spacy_elmo.__main__`), and the
app's group is :class:`OneLineErrors`, so that an option value refused while parsing (a typer
``min=`` / ``max=`` range: ``--retries -1``; a number that is not one) is one line too."""
import functools

import typer
from typer.core import TyperGroup

from .errors import ElmoError

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


class OneLineErrors(TyperGroup):
    """The command group of ``python -m spacy_elmo``: a bad option value (typer.BadParameter,
    raised while a command's arguments are parsed) is ``error: Invalid value for ...`` on stderr,
    one line, exit status :data:`EXIT_ERROR`, instead of click's usage block."""

    def get_params(self, ctx):
        from .cli_help import plain_flags

        return plain_flags(super().get_params(ctx))  # `--help` without `<bool>`

    def invoke(self, ctx: typer.Context):
        try:
            return super().invoke(ctx)
        except typer.BadParameter as err:  # typer's own click
            typer.echo(f"error: {err.format_message()}", err=True)
            raise typer.Exit(EXIT_ERROR) from None
