"""`keras-bert`: the command line of keras_bert_impl, one subcommand per job (`keras-bert COMMAND --help`).

    keras-bert quickstart                     # the whole pipeline on a built-in corpus, minutes on a CPU
    keras-bert pretrain --input-files corpus/train.txt --vocab-file my_vocab/vocab.txt --output-dir runs/bert
    keras-bert finetune-classifier --task mrpc --train-file MRPC/train.tsv --dev-file MRPC/dev.tsv \\
        --init-checkpoint runs/bert/final --output-dir runs/mrpc
    keras-bert predict --model runs/mrpc/best --text $'The cat sat.\\tA cat was sitting.'

Every subcommand takes `--config FILE` (JSON or YAML: keys are the flag names; flags on the
command line win), `--debug` (show the traceback on failure) and `--log-level`. On failure the command
prints one line naming what went wrong and exits 1 (2 for flags that do not parse or fit together).
"""

import argparse
import importlib
import logging
import os
import sys

from keras_bert_impl.cli.arguments import UsageError
from keras_bert_impl.cli.config_files import apply_config_file
from keras_bert_impl.utils.tensorflow_startup_logs import LOG_LEVEL_VARIABLE, QUIET_LOG_LEVEL, quiet_tensorflow_startup

# Subcommand -> its module (`keras_bert_impl.cli.<name with "_">`), defining `add_arguments(parser)`, `run(args)`
# and optionally `check_arguments(args)`; the module docstring is the subcommand's help.
SUBCOMMANDS = {name: "keras_bert_impl.cli." + name.replace("-", "_") for name in (
    "quickstart", "vocab", "create-data", "pretrain", "finetune-classifier", "finetune-squad", "finetune-ner",
    "finetune-multiple-choice", "evaluate", "predict", "export", "convert")}
PROGRAM = "keras-bert"
# Flags (by dest) that name a checkpoint: a local path or a Hugging Face Hub model id. An id is resolved to its
# local snapshot before the command runs, so the files beside the weights (vocab.txt) are found there too.
CHECKPOINT_FLAGS = ("init_checkpoint", "model", "input")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _common_flags():
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("general")
    group.add_argument("--config", metavar="FILE",
                       help="JSON or YAML file of flag values (keys are the flag names); command-line flags win")
    group.add_argument("--debug", action="store_true",
                       help="on failure, show the full traceback; show TensorFlow's start-up log lines")
    group.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                       help="logging detail on stderr (default: %(default)s)")
    return common


def build_parser(command=None):
    """`(the keras-bert parser, {subcommand: its parser})`; only `command`'s parser gets its flags.

    Args:
        command: str or None. The subcommand being run; the others get only their help line, so `keras-bert
            --help` or a mistyped subcommand does not import what their flags need (e.g. Keras for `pretrain`'s
            defaults). None: no subcommand gets its flags. Defaults to None.
    """
    from keras_bert_impl import __version__

    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parsers = {}
    for name, module_name in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        # A fresh parent per subcommand: `parents` shares its action objects, so one subcommand's
        # `set_defaults(log_level=...)` (quickstart's) would change every subcommand's default.
        subparser = subcommands.add_parser(
            name, parents=[_common_flags()], help=module.__doc__.splitlines()[0], description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == command:
            module.add_arguments(subparser)
        subparser.set_defaults(run=module.run, check_arguments=getattr(module, "check_arguments", None))
        parsers[name] = subparser
    return parser, parsers


def _layer_reason(message):
    """The message a Keras layer raised, out of Keras' wrapping ("Exception encountered when calling
    BertEmbeddings.call().\n\n\x1b[1m{reason}\x1b[0m\n\nArguments received by ...", nested for nested layers,
    and "Could not automatically infer the output shape ... Error encountered:\n\n{reason}"); other messages
    unchanged."""
    if "Exception encountered when calling" not in message and "Error encountered:" not in message:
        return message
    if "\x1b[1m" in message:  # the innermost bold part
        message = message[message.rindex("\x1b[1m") + len("\x1b[1m"):].split("\x1b[0m")[0]
    else:
        message = message.rsplit("Exception encountered when calling", 1)[-1].split("\n", 1)[-1]
        message = message.split("Arguments received by")[0]
    return message.rsplit("Error encountered:", 1)[-1]


def _one_line(error):
    message = error.args[0] if isinstance(error, KeyError) and error.args else _layer_reason(str(error))
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    # A failed `tf.debugging` check in tf.data or a compiled step comes after TensorFlow's "Graph execution
    # error:" and node lines: show the check's message.
    failed = next((line for line in lines if "assertion failed: " in line), None)
    if failed is not None:
        return failed[failed.index("assertion failed: "):]
    return " ".join(lines) if len(lines) <= 3 else lines[0]


def _is_user_facing(error):
    """Errors that describe bad input (files, flags, checkpoints, data) rather than a bug in this package."""
    from keras_bert_impl.export import ExportError
    from keras_bert_impl.training.callbacks import NonFiniteLossError
    from keras_bert_impl.utils.atomic_io import is_disk_full

    if isinstance(error, (ValueError, OSError, KeyError, NonFiniteLossError, ExportError)) or is_disk_full(error):
        return True
    tensorflow = sys.modules.get("tensorflow")
    return tensorflow is not None and isinstance(error, tensorflow.errors.OpError)


def _trained_next(record):
    """Drops the loader's "head weights keep their random initial values" warning: fine-tuning trains them next."""
    return "keep their random initial values" not in str(record.msg)


def parse_arguments(argv):
    """Parse `argv` (without the program name) with config files applied; argparse errors exit 2.

    Returns:
        `argparse.Namespace` with `command`, `run` and the subcommand's flags.
    """
    # The subcommand (the first argument that is no flag: the program's own flags take no value) and its
    # `--config` value, found before the full parse.
    command = next((arg for arg in argv if not arg.startswith("-")), None)
    parser, parsers = build_parser(command)
    config_parser = argparse.ArgumentParser(add_help=False)
    config_parser.add_argument("--config")
    config = config_parser.parse_known_args(argv)[0].config
    if config is not None and command in parsers:
        try:
            apply_config_file(parsers[command], config)
        except (ValueError, OSError) as error:
            parsers[command].error(_one_line(error))
    args = parser.parse_args(argv)
    if args.check_arguments is not None:
        try:
            args.check_arguments(args)
        except UsageError as error:
            parsers[args.command].error(str(error))
    return args


def main(argv=None):
    """Run `keras-bert` with `argv` (default: `sys.argv[1:]`); return 0, 1 on a failure (one line on stderr;
    `--debug` shows the traceback) or 130 when interrupted; flags that do not parse raise `SystemExit(2)`.

    Example:
    >>> main(["convert", "--input", "missing_checkpoint", "--output", "out"])  # doctest: +SKIP
    keras-bert convert: error: Checkpoint path missing_checkpoint does not exist.
    1
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault(LOG_LEVEL_VARIABLE, QUIET_LOG_LEVEL)
    # Before the subcommands' modules import TensorFlow (`utils.tensorflow_startup_logs`).
    if "--debug" not in argv:
        quiet_tensorflow_startup()
        # TensorFlow's and absl's Python log lines (retracing hints, SavedModel input renaming) are not for users.
        for name in ("tensorflow", "absl"):
            logging.getLogger(name).setLevel(logging.ERROR)
    args = parse_arguments(argv)
    logging.basicConfig(level=getattr(logging, args.log_level), format=LOG_FORMAT)
    if hasattr(args, "verbose") and args.verbose is None:  # redrawn progress bars only on a terminal
        args.verbose = 1 if sys.stdout.isatty() else 2
    checkpoint_logger = logging.getLogger("keras_bert_impl.models.task_checkpoints")
    if args.command == "quickstart" or args.command.startswith("finetune") and getattr(args, "epochs", 1) != 0:
        checkpoint_logger.addFilter(_trained_next)
    try:
        for flag in CHECKPOINT_FLAGS:  # a Hub model id -> its local snapshot (`checkpoints.hub_cache`)
            value = getattr(args, flag, None)
            if isinstance(value, str) and value:
                from keras_bert_impl.checkpoints.hub_cache import resolve_checkpoint

                setattr(args, flag, resolve_checkpoint(value))
        status = args.run(args)
    except KeyboardInterrupt:
        print(f"{PROGRAM} {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if args.debug or not _is_user_facing(error):
            raise
        print(f"{PROGRAM} {args.command}: error: {_one_line(error)}", file=sys.stderr)
        return 1
    finally:
        checkpoint_logger.removeFilter(_trained_next)
    return 0 if status is None else int(status)
