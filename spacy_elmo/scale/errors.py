"""The errors of a Ray embed run (their own module, so that the readers and the actor raise
them without importing :mod:`.pool`)."""
from ..bilm.errors import ElmoError


class ScaleError(ElmoError, ValueError):
    """A Ray embed run cannot start or did not finish: bad option, output with other arguments,
    an index column that is not unique or not ints >= 0, a manifest that is not one or of
    another version, shards that miss lines, a failed block (the message names the cause).
    Subclasses :class:`ValueError`."""


class ShardLineError(ElmoError, KeyError):
    """A shard listed in the manifest lacks the dataset of a line (the shard changed after the
    manifest was written) or its ``sentence_to_index`` dataset. Subclasses :class:`KeyError`;
    ``str()`` is the message itself."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
