"""Errors that carry a message naming the problem and the fix.

The CLI prints any `ScalelabError` as one line on stderr and exits with code 2.
"""


class ScalelabError(Exception):
    """Base class: a problem with the user's input or state, not a bug."""


class InputError(ScalelabError):
    """Bad input data: missing file, unreadable format, wrong shape, NaN values."""


class ConfigError(ScalelabError):
    """An invalid configuration value, or a run folder whose config differs."""


class CheckpointError(ScalelabError):
    """A missing, corrupted or incompatible checkpoint."""


class StorageError(ScalelabError):
    """The disk is full or a file-size limit was hit while writing; nothing was half-written."""


class EstimationError(ScalelabError):
    """An estimate that is not finite (for example duplicates giving zero distances)."""
