"""ksum's exceptions. Every failure the library reports is a :class:`ksum.Error`; each subclass
also derives from the built-in exception a Python user would catch for it, so
``except ValueError`` catches bad input whether it came from ksum or NumPy."""


class Error(Exception):
    """A failure reported by ksum. ``code`` names its kind (``invalid_argument``, ``non_finite``,
    ``shape_mismatch``, ``unsupported``, ``device``, ...); the message names the offending input."""

    def __init__(self, message, code="internal"):
        super().__init__(message)
        self.code = code


class InputError(Error, ValueError):
    """An argument out of its domain, NaN/Inf, an empty array or arrays whose sizes disagree."""


class ParseError(Error, ValueError):
    """A file whose content is malformed."""


class FileError(Error, OSError):
    """A file that could not be opened, read or written."""


class UnsupportedError(Error, NotImplementedError):
    """A valid request this build or device cannot serve (e.g. a GPU array without CUDA)."""


class DeviceError(Error, RuntimeError):
    """A CUDA runtime failure."""


class NotConvergedError(Error, RuntimeError):
    """An iterative solver stopped at its iteration limit above its tolerance."""


class InternalError(Error, RuntimeError):
    """A broken invariant inside ksum: please report it."""
