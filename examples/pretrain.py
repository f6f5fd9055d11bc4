"""Pretrain a small BERT from text with masked LM + next sentence prediction, using `model.fit`.

    python examples/pretrain.py        # the docstring corpus, a tiny BERT: about 2 minutes on 2 CPU cores
    python examples/pretrain.py --input-files corpus/train.txt --eval-files corpus/eval.txt \\
        --vocab-file corpus/vocab.txt --preset mini --steps 4000 --checkpoint-every 500 --output-dir runs/mini
    # interrupted? run the same command again: it resumes from the newest checkpoint

The text is in the original BERT format: one sentence per line, a blank line between documents. Without
`--input-files` the corpus is the docstrings of Python's standard library (`data.default_corpus`, every
tenth module held out for evaluation); without `--vocab-file` a WordPiece vocabulary is learned from it.
Writes into `--output-dir`: `corpus/` (the default corpus), `vocab.txt` (a learned vocabulary),
`checkpoints/step_*` (weights + optimizer state, for resuming; removed once `final/` is written) and `final/`,
a pretrained model that
`BertBackbone.from_pretrained` and the fine-tuning examples (`--init-checkpoint`) read.
`keras-bert pretrain` is the full-featured version (two phases, TFRecords, several devices, logs).
"""

import argparse
import os

import keras

from keras_bert_impl import (
    BertBackbone,
    BertPretrainer,
    BertTokenizer,
    TrainingCheckpoint,
    create_optimizer,
    pretraining_dataset,
    train_wordpiece_vocabulary,
)
from keras_bert_impl.data.default_corpus import write_docstring_corpus
from keras_bert_impl.preprocessing import BertPretrainingPreprocessor


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input-files", help="comma-separated text files (default: the docstring corpus)")
    parser.add_argument("--eval-files", help="comma-separated held-out text files (default corpus: its eval.txt)")
    parser.add_argument("--vocab-file", help="vocab.txt (default: learn one from --input-files)")
    parser.add_argument("--vocabulary-size", type=int, default=4000, help="most tokens to learn (default: 4000)")
    parser.add_argument("--preset", default="tiny", help="model size: tiny, mini, small, ... (default: tiny)")
    parser.add_argument("--sequence-length", "--seq-length", type=int, default=64, help="tokens per sentence pair (default: 64)")
    parser.add_argument("--max-predictions-per-seq", type=int, default=10, help="masked tokens (~15%%; default 10)")
    parser.add_argument("--batch-size", type=int, default=32, help="default: 32")
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps (default: 1000)")
    parser.add_argument("--checkpoint-every", type=int, default=200, help="steps between checkpoints (default: 200)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="peak rate (default: 1e-3, for tiny)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--output-dir", default="runs/example_pretrain", help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.steps % args.checkpoint_every:
        parser.error(f"--steps ({args.steps}) must be a multiple of --checkpoint-every ({args.checkpoint_every})")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    keras.utils.set_random_seed(args.seed)
    os.makedirs(args.output_dir, exist_ok=True)

    # 1. Text (one sentence per line, blank line between documents) and a WordPiece vocabulary.
    if args.input_files:
        train_files = args.input_files.split(",")
        eval_files = args.eval_files.split(",") if args.eval_files else []
    else:
        corpus = write_docstring_corpus(os.path.join(args.output_dir, "corpus"))
        train_files, eval_files = [corpus["train"]], [corpus["eval"]]
        print(f"Corpus: {corpus['train_documents']} documents, {corpus['train_words']} words for training; "
              f"{corpus['eval_documents']} held out")
    vocab_file = args.vocab_file
    if vocab_file is None:
        vocab_file = os.path.join(args.output_dir, "vocab.txt")
        train_wordpiece_vocabulary(train_files, args.vocabulary_size, output_path=vocab_file)
    tokenizer = BertTokenizer(vocab_file)
    print(f"Vocabulary: {tokenizer.vocabulary_size()} tokens ({vocab_file})")

    # 2. An endless stream of masked sentence pairs (tf.data; feeds `fit` under every Keras backend).
    # Pairs are made as the original create_pretraining_data.py does (50% "B is the next sentence");
    # the masker picks 15% of the tokens (80% [MASK], 10% random, 10% kept), new masks every epoch of the data.
    # The preprocessor owns the packing and masking settings (length, mask rate, predictions per sequence).
    preprocessor = BertPretrainingPreprocessor(tokenizer, sequence_length=args.sequence_length,
                                               max_predictions_per_seq=args.max_predictions_per_seq, seed=args.seed)

    def batches(files, seed, epochs=1):  # epochs=None: endless, each epoch shuffled and masked anew
        return pretraining_dataset(preprocessor, files=files, batch_size=args.batch_size, seed=seed,
                                   drop_remainder=True, epochs=epochs)

    train_data = batches(train_files, args.seed, epochs=None)
    x, y = next(iter(train_data))
    print("A batch:", {key: tuple(value.shape) for key, value in {**x, **y}.items()})

    # 3. The model: a randomly initialised encoder with the MLM and NSP heads, and the original optimizer
    # (AdamWeightDecay, linear warmup over the first 10% of the steps, then linear decay to 0).
    backbone = BertBackbone.from_scratch(args.preset, vocabulary_size=tokenizer.vocabulary_size())
    model = BertPretrainer(backbone)
    optimizer = create_optimizer(name="adamw_original", learning_rate=args.learning_rate, total_steps=args.steps,
                                 warmup_fraction=0.1)
    model.compile(optimizer=optimizer)
    print(f"BertPretrainer ({args.preset}): {model.count_params():,} parameters")

    # 4. Resume: a checkpoint holds weights, optimizer state (hence the learning rate) and the step; the
    # stream is deterministic, so skipping the batches already seen continues where the last run stopped.
    # A finished run's checkpoints are removed (as keras.callbacks.BackupAndRestore does); restoring it loads final/.
    every, final = args.checkpoint_every, os.path.join(args.output_dir, "final")
    checkpoint = TrainingCheckpoint(os.path.join(args.output_dir, "checkpoints"), every, model_dir=final)
    state = checkpoint.restore(model)
    start_step = state["step"] if state else 0
    if state:
        print(f"Resuming at step {start_step} from {state['restored_from']}")

    # 5. Train. One Keras "epoch" is one checkpoint interval, so checkpoints line up with steps.
    model.fit(train_data.skip(start_step), steps_per_epoch=every, initial_epoch=start_step // every,
              epochs=args.steps // every, callbacks=[checkpoint], shuffle=False, verbose=2)

    # 6. Held-out masked-LM and next-sentence accuracy on 20 batches (guessing gets 0.5 on NSP).
    if eval_files:
        results = model.evaluate(batches(eval_files, args.seed + 1).repeat().take(20), return_dict=True, verbose=0)
        print(f"Held-out: MLM accuracy {results['mlm_accuracy']:.3f}, NSP accuracy {results['nsp_accuracy']:.3f} "
              f"(chance 0.500), MLM loss {results['mlm_loss']:.3f}")

    # 7. Save weights + config and the vocabulary in one directory: the fine-tuning examples start from it.
    model.save_pretrained(final)
    tokenizer.save_pretrained(final)
    checkpoint.finish()  # the run is done: remove its checkpoints
    print(f"Pretrained model: {final} (step {args.steps})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
