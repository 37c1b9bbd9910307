"""Command line: ``python -m spacy_elmo {convert,init-config,pretrain,perplexity,probe,download,models,embed,
static-vectors}``.

This module only assembles the typer app: each command's body lives in its feature's ``cli``
module, and every command is wrapped by :func:`.cli_errors.one_line_errors` (an
:class:`~spacy_elmo.ElmoError` or other bad input: ``error: MESSAGE`` on stderr, exit 2).
"""
import sys

import typer

from .cli_errors import OneLineErrors, one_line_errors
from .convert import cli as convert_cli
from .embed import cli as embed_cli
from .hub import cli as hub_cli
from .pretrain import cli as pretrain_cli
from .probe import cli as probe_cli
from .static import cli as static_cli

app = typer.Typer(name="spacy_elmo", help="spacy-elmo: ELMo biLMs for spaCy", no_args_is_help=True,
                  add_completion=False, cls=OneLineErrors)

COMMANDS = (  # (name, body, typer context settings), in the order `--help` lists them
    ("convert", convert_cli.convert_cli, None),
    ("init-config", pretrain_cli.init_config_cli, None),
    ("pretrain", pretrain_cli.pretrain_cli, pretrain_cli.PRETRAIN_CONTEXT),
    ("perplexity", pretrain_cli.perplexity_cli, None),
    ("probe", probe_cli.probe_cli, probe_cli.PROBE_CONTEXT),
    ("download", hub_cli.download_cli, None),
    ("models", hub_cli.models_cli, None),
    ("embed", embed_cli.embed_cli, None),
    ("static-vectors", static_cli.static_vectors_cli, None),
)
for _name, _body, _context in COMMANDS:
    app.command(_name, context_settings=_context)(one_line_errors(_body))


def main():
    from .scale.cli import optional_value

    sys.argv = optional_value(sys.argv)  # `embed ... --ray` without ADDRESS
    app()


if __name__ == "__main__":
    main()
