"""Learn a WordPiece vocabulary (vocab.txt) from text files.

    keras-bert vocab --input-files 'corpus/*.txt' --vocab-size 8000 --output-dir my_vocab

Writes `vocab.txt` (the special tokens first, [PAD] = 0) and `tokenizer_config.json` (the casing) to
`--output-dir`; words are split and normalised exactly as `BertTokenizer` does.
"""

import os

from keras_bert_impl.cli.arguments import expand_input_files, positive_int
from keras_bert_impl.models.presets import DEFAULT_VOCABULARY_SIZE  # the released English BERT vocabularies


def add_arguments(parser):
    parser.add_argument("--input-files", required=True, help="UTF-8 text files (comma-separated, glob ok)")
    parser.add_argument("--vocab-size", type=positive_int, default=DEFAULT_VOCABULARY_SIZE,
                        help="most tokens in the vocabulary, special tokens included (default: %(default)s)")
    parser.add_argument("--output-dir", default="vocab", help="where vocab.txt and tokenizer_config.json go "
                        "(default: %(default)s)")
    parser.add_argument("--cased", action="store_true", help="keep case and accents (default: lowercase, as "
                        "the uncased models)")


def run(args):
    """Learn and write the vocabulary; print where it went."""
    from keras_bert_impl.tokenization import BertTokenizer, train_wordpiece_vocabulary

    files = expand_input_files(args.input_files)
    vocabulary = train_wordpiece_vocabulary(files, args.vocab_size, lowercase=not args.cased)
    tokenizer = BertTokenizer(vocabulary, lowercase=not args.cased)
    tokenizer.save_pretrained(args.output_dir)
    path = os.path.join(args.output_dir, "vocab.txt")
    print(f"{path}: {len(vocabulary)} tokens learned from {len(files)} file(s)"
          f"{' (cased)' if args.cased else ' (uncased)'}")
    return 0
