"""The `keras-bert` command line (`keras-bert --help`); one module per subcommand, each with
`add_arguments(parser)` and `run(args)`."""

from keras_bert_impl.cli.command_line import SUBCOMMANDS, main

__all__ = ["SUBCOMMANDS", "main"]
