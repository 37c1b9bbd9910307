"""What ``python -m spacy_elmo embed INPUT OUTPUT`` does without ``--ray``: :func:`run_local`.
The command itself (its options, and ``--ray``, which runs on :mod:`spacy_elmo.scale`, the layer
above this one) is :func:`spacy_elmo.scale.cli.embed_cli`."""


def run_local(input_path: str, output: str, **options) -> str:
    """Run :func:`spacy_elmo.embed.embed_file` and return the line the command prints. Raises as it does."""
    from . import embed_file

    s = embed_file(input_path, output, **options)
    if s["already_complete"]:
        return f"{output} is already complete (same arguments): nothing to do"
    rate = s["embedded_tokens"] / s["embed_seconds"] if s.get("embed_seconds") else 0.0
    return (f"wrote {output}: {s['sentences']:,} sentences, {s['tokens']:,} tokens ({s['embedded']:,} "
            f"sentences embedded in this run, {rate:,.0f} tokens/s in the biLM; {s['seconds']:.1f} s "
            "reading, embedding and writing, after the model load)")
