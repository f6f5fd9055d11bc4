"""Write pretraining instances (NSP sentence pairs, optionally masked) to TFRecord shards.

    keras-bert create-data --input-files 'corpus/*.txt' --vocab my_vocab --output-prefix data/train \\
        --sequence-length 128 --max-predictions-per-seq 20 --dupe-factor 10

`create_pretraining_data.py`'s algorithm and feature names (`data.pretraining_tfrecords`). `--masking static`
writes one mask per instance and pass (`--dupe-factor` passes); `dynamic` leaves the masking to `keras-bert
pretrain --input-tfrecords`, which reads the settings written beside the shards (`<prefix>.settings.json`).
"""

from keras_bert_impl.cli.arguments import add_masking_arguments, expand_input_files, fraction, positive_int


def add_arguments(parser):
    parser.add_argument("--input-files", required=True, help="UTF-8 text files (comma-separated, glob ok): one "
                        "sentence per line, a blank line between documents (or see --input-format)")
    parser.add_argument("--input-format", default="sentence_per_line",
                        choices=("sentence_per_line", "document_per_line"), help="(default: %(default)s)")
    parser.add_argument("--vocab", required=True, help="vocab.txt or a directory holding it (and "
                        "tokenizer_config.json)")
    parser.add_argument("--cased", action="store_true", help="keep case (default: the tokenizer config's, "
                        "else lowercase)")
    parser.add_argument("--output-prefix", required=True, help="shard path prefix, e.g. data/train")
    parser.add_argument("--num-shards", type=positive_int, default=1, help="(default: %(default)s)")
    parser.add_argument("--sequence-length", "--max-seq-length", type=positive_int, default=128,
                        help="tokens per instance (default: %(default)s)")
    parser.add_argument("--dupe-factor", type=positive_int, default=10,
                        help="passes over the corpus, each with its own masks (default: %(default)s)")
    parser.add_argument("--short-seq-prob", type=fraction, default=0.1,
                        help="share of instances with a random shorter target length (default: %(default)s)")
    add_masking_arguments(parser, masking_default="static")
    parser.add_argument("--seed", type=int, default=12345, help="(default: %(default)s)")


def run(args):
    """Write the shards and, beside them, their settings; print their paths."""
    from keras_bert_impl.data.pretraining_tfrecords import SETTINGS_SUFFIX, write_pretraining_tfrecords
    from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
    from keras_bert_impl.training.finetuning import load_tokenizer
    from keras_bert_impl.training.pretraining import PREPROCESSOR_SETTINGS

    tokenizer = load_tokenizer(args.vocab, lowercase=False if args.cased else None)
    # The record length and the masking flags given; the others keep the preprocessor's defaults.
    given = {argument: getattr(args, dest) for dest, argument in PREPROCESSOR_SETTINGS.items()
             if getattr(args, dest) is not None}
    preprocessor = BertPretrainingPreprocessor(tokenizer, seed=args.seed, **given)
    paths = write_pretraining_tfrecords(
        expand_input_files(args.input_files), args.output_prefix, preprocessor, num_shards=args.num_shards,
        masking=args.masking, dupe_factor=args.dupe_factor, short_seq_prob=args.short_seq_prob,
        input_format=args.input_format, seed=args.seed,
    )
    settings_path = args.output_prefix + SETTINGS_SUFFIX
    for path in paths:
        print(path)
    print(f"{len(paths)} shard(s), settings in {settings_path}; pretrain with: keras-bert pretrain "
          f"--input-tfrecords '{args.output_prefix}-*.tfrecord' ... (length and masking are read from the settings)")
    return 0
