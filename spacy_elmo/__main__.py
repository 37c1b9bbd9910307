"""Command line: ``python -m spacy_elmo {convert,init-config,pretrain,perplexity,probe,download,models,embed,
static-vectors}``.

This module only assembles the typer app: each command's body lives in its feature's ``cli``
module (``embed``'s in :mod:`spacy_elmo.scale.cli`, the layer above :mod:`spacy_elmo.embed`, since
its ``--ray`` runs there), and every command is wrapped by :func:`.cli_errors.one_line_errors` (an
:class:`~spacy_elmo.ElmoError` or other bad input: ``error: MESSAGE`` on stderr, exit 2).
"""
import sys

import typer

from .cli_errors import OneLineErrors, one_line_errors
from .cli_help import PlainHelp
from .convert import cli as convert_cli
from .hub import cli as hub_cli
from .pretrain import cli as pretrain_cli
from .probe import cli as probe_cli
from .scale import cli as scale_cli
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
    ("embed", scale_cli.embed_cli, None),
    ("static-vectors", static_cli.static_vectors_cli, None),
)
for _name, _body, _context in COMMANDS:
    app.command(_name, context_settings=_context, cls=PlainHelp)(one_line_errors(_body))


def main():
    sys.argv = scale_cli.optional_value(sys.argv)  # `embed ... --ray` without ADDRESS
    app()


if __name__ == "__main__":
    main()
