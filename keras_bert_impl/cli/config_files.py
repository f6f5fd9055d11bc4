"""Config files for the `keras-bert` subcommands: a JSON or YAML mapping of flag names to values.

    # pretrain.yaml                         # pretrain.json
    input-files: corpus/train.txt           {"input-files": "corpus/train.txt", "steps": 2000}
    steps: 2000
    keras-bert pretrain --config pretrain.yaml --steps 500    # flags on the command line win: 500 steps

Keys are the long flag names, with or without "--", with "-" or "_". Values are what the flag takes: a string,
a number, true / false for on/off flags, a list for a repeatable flag (`predict`'s `--text`, which the command
line adds to) or a comma-separated one such as `--input-files` (joined with commas). A key that is no flag of
the subcommand, or a bad value, is an error naming the key. The values become the flags' defaults (a required
flag is satisfied by the file).
"""

import argparse
import json
import os

import yaml

from keras_bert_impl.utils.file_patterns import read_json


class ConfigFileError(ValueError):
    """A config file that cannot be used: unreadable, not a mapping, an unknown key or a bad value."""


def read_config_file(path):
    """The dict in a `.json`, `.yaml` or `.yml` config file (other extensions are read as JSON, then YAML)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Config file {path!r} does not exist.")
    extension = os.path.splitext(path)[1].lower()
    if extension == ".json":
        content = read_json(path, ConfigFileError)
    else:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:  # another extension than .yaml / .yml: JSON if it parses, else YAML
            content = _parse_yaml(text, path) if extension in (".yaml", ".yml") else json.loads(text)
        except json.JSONDecodeError:
            content = _parse_yaml(text, path)
    if content is None:
        return {}
    if not isinstance(content, dict):
        raise ConfigFileError(f"{path}: expected a mapping of flag names to values, got a {type(content).__name__}.")
    return content


def _parse_yaml(text, path):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigFileError(f"{path}: malformed YAML: {' '.join(str(error).split())}") from error


def _key_actions(parser):
    """`{key: action}` for the parser's optional flags (help and --config left out), each under its dest and
    under every one of its names (`--max-predictions` / `--max-predictions-per-seq` are one key either way)."""
    keys = {}
    for action in parser._actions:  # noqa: SLF001 - argparse has no public list
        if action.option_strings and action.dest not in (argparse.SUPPRESS, "help", "config"):
            keys[action.dest] = action
            for option in action.option_strings:
                keys.setdefault(option.lstrip("-").replace("-", "_"), action)
    return keys


def _converted(action, key, value, path):
    """`value` as the flag would have parsed it; raises `ConfigFileError` naming the key when it cannot."""
    flag = action.option_strings[-1]
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):  # noqa: SLF001
        if not isinstance(value, bool):
            raise ConfigFileError(f"{path}: {key!r} is an on/off flag ({flag}); give true or false, not {value!r}.")
        return value
    if isinstance(action, argparse._AppendAction):  # noqa: SLF001 - a repeatable flag (predict's --text)
        values = value if isinstance(value, list) else [value]
        return [_converted_scalar(action, key, item, path) for item in values]
    if isinstance(value, list):
        if action.type is None and all(isinstance(item, str) for item in value):
            value = ",".join(value)  # comma-separated flags, e.g. --input-files
        else:
            raise ConfigFileError(f"{path}: {key!r} ({flag}) takes one value, got a list.")
    return _converted_scalar(action, key, value, path)


def _converted_scalar(action, key, value, path):
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ConfigFileError(f"{path}: {key!r} must be a single value, got {type(value).__name__}.")
    try:
        converted = action.type(value) if action.type is not None else str(value)
    except (TypeError, ValueError) as error:
        raise ConfigFileError(f"{path}: {key!r}: {value!r} is not a valid value ({error}).") from None
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ConfigFileError(f"{path}: {key!r} must be one of {choices}; got {value!r}.")
    return converted


def apply_config_file(parser, path):
    """Make the values of config file `path` the defaults of `parser`'s flags (command-line flags still win);
    return `{dest: value}` of what was applied.

    Example:
    >>> import tempfile
    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--steps", type=int, default=10)
    >>> path = os.path.join(tempfile.mkdtemp(), "run.json")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write('{"steps": 200}')
    >>> apply_config_file(parser, path)
    {'steps': 200}
    >>> parser.parse_args(["--steps", "5"]).steps, parser.parse_args([]).steps
    (5, 200)
    """
    keys = _key_actions(parser)
    applied = {}
    for key, value in read_config_file(path).items():
        name = str(key).lstrip("-").replace("-", "_")
        if name not in keys:
            known = ", ".join(sorted({action.option_strings[-1].lstrip("-") for action in keys.values()}))
            raise ConfigFileError(f"{path}: unknown key {key!r}; the keys are the flag names: {known}.")
        action = keys[name]
        if action.dest in applied:
            raise ConfigFileError(f"{path}: {key!r} sets {action.option_strings[-1]} a second time.")
        applied[action.dest] = _converted(action, key, value, path)
        action.required = False
    parser.set_defaults(**applied)
    return applied
