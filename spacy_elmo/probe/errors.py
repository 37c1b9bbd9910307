"""The probe's error (its own module, so that the data readers raise it without importing
:mod:`.run`)."""
from ..bilm.errors import ElmoError


class ProbeDataError(ElmoError, ValueError):
    """A data set of the probe cannot be used: not given (the message names the missing options),
    a WiC or CoNLL-U file that is malformed (the message names the file and line), a sample too
    small to measure, a pipeline with no ELMo scalar mix. Subclasses :class:`ValueError`."""
