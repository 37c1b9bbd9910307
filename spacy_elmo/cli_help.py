"""How ``python -m spacy_elmo ... --help`` shows options and arguments: a flag without a value
type (typer writes ``<bool>`` after each), and the usage line with the arguments in capitals,
optional ones in brackets (``embed [OPTIONS] INPUT_PATH OUTPUT``, where typer writes
``{input_path}``)."""
from typer.core import TyperCommand


def plain_flags(params: list) -> list:
    """``params`` with every flag shown without a value type (an empty metavar)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class PlainHelp(TyperCommand):
    """A command whose help shows flags without ``<bool>`` and arguments in capitals."""

    def get_params(self, ctx):
        return plain_flags(super().get_params(ctx))

    def collect_usage_pieces(self, ctx) -> list:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = (param.metavar or param.name).upper() + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
        return pieces
