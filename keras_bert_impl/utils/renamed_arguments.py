"""Renamed arguments: a caller (or a saved config) that still uses an argument's old name keeps working, with a
`DeprecationWarning` that names the new one.

`take_renamed_argument` serves constructors that sort their own `**kwargs` (Keras layers, whose `from_config`
passes a saved config back as keywords); `renamed_arguments` decorates a plain function.
"""

import functools
import warnings

_NOT_GIVEN = object()


def take_renamed_argument(kwargs, old_name, new_name, value, owner, not_given=None, stacklevel=3):
    """The argument `new_name`, given as `value` or under `old_name` in `kwargs`.

    Args:
        kwargs: dict. The caller's other keyword arguments; `old_name` is removed from it.
        old_name: str. The deprecated name.
        new_name: str. The current name.
        value: the argument as passed under `new_name` (`not_given` if it was not).
        owner: str. The class or function, for the messages.
        not_given: what `value` is when the argument was not passed under `new_name`. Defaults to None.
        stacklevel: int. `warnings.warn`'s, counted from this function. Defaults to 3 (the caller's caller).

    Returns:
        `value`, or the value given under `old_name` (with a `DeprecationWarning`). Both names given raise
        `TypeError`.
    """
    if old_name not in kwargs:
        return value
    old_value = kwargs.pop(old_name)
    if value is not not_given:
        raise TypeError(f"{owner} got both `{new_name}` and its deprecated name `{old_name}`; pass `{new_name}` only.")
    warnings.warn(
        f"{owner}: `{old_name}` is deprecated; pass `{new_name}` (the same setting).", DeprecationWarning,
        stacklevel=stacklevel,
    )
    return old_value


def renamed_arguments(**new_names):
    """Decorator: keyword arguments passed under an old name (`old_name="new_name"` entries) reach the
    function under the new one, with a `DeprecationWarning`.

    Example:
    >>> @renamed_arguments(seq_length="sequence_length")
    ... def pack(sequence_length=128):
    ...     return sequence_length
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     pack(seq_length=64)
    64
    """

    def decorate(function):
        owner = function.__qualname__

        @functools.wraps(function)
        def call(*args, **kwargs):
            for old_name, new_name in new_names.items():
                value = take_renamed_argument(
                    kwargs, old_name, new_name, kwargs.get(new_name, _NOT_GIVEN), owner, _NOT_GIVEN, stacklevel=4
                )
                if value is not _NOT_GIVEN:
                    kwargs[new_name] = value
            return function(*args, **kwargs)

        return call

    return decorate
