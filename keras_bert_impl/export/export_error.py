"""The one error every export raises."""


class ExportError(RuntimeError):
    """An export that cannot be done (unsupported model, inconsistent settings, a failed worker)."""
