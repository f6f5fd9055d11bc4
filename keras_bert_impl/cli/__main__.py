"""`python -m keras_bert_impl.cli ...` is `keras-bert ...` (for environments without the console script)."""

import sys

from keras_bert_impl.cli.command_line import main

sys.exit(main())
