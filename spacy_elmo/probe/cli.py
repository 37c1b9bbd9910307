"""``python -m spacy_elmo probe``: the command's body (the typer wrapper is in ``__main__``)."""
from typing import List, Optional


def probe_command(model: Optional[str], options_path: Optional[str], weights_path: Optional[str],
                  pipelines: List[str], output: str, **settings) -> dict:
    """Run :func:`.run.run_probe` and write probe.json / probe.md / probe.png into ``output``.
    ``settings``: fields of :class:`.run.ProbeSettings`. Returns the output paths (str)."""
    from .report import write_outputs
    from .run import ProbeSettings, run_probe

    result = run_probe(model, options_path, weights_path, ProbeSettings(pipelines=list(pipelines), **settings))
    return {kind: str(path) for kind, path in write_outputs(result, output).items()}
