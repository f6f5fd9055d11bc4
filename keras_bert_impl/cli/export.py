"""Export a saved model directory as a TensorFlow SavedModel that serves raw text.

    keras-bert export --model runs/mrpc/best --output saved_models/mrpc
    keras-bert export --model runs/squad/best --output saved_models/squad --sequence-length 384

The model class comes from the directory (`models.load_task`) and the tokenizer from the `vocab.txt`
beside it. The SavedModel (`keras_bert_impl.export.export_saved_model`) has the signatures `serve_text`
(classifier: `text` -> `label`, `probabilities`; question answerer: `question`, `context` -> `answer`,
`start_char`, `end_char`, `score`; backbone: `text` -> `sequence_output`, `pooled_output`),
`serve_text_pair` (classifier and backbone) and `serve_token_ids` (numeric inputs), and needs only
`tensorflow` and `tensorflow_text` to serve:

    import tensorflow as tf, tensorflow_text  # noqa: the ops the graph uses
    served = tf.saved_model.load("saved_models/squad")
    served.signatures["serve_text"](question=tf.constant(["..."]), context=tf.constant(["..."]))["answer"]

`--format onnx` writes one ONNX file instead (`keras_bert_impl.export.export_onnx`; needs
`pip install "keras-bert-impl[onnx]"`): numeric inputs `token_ids`, `segment_ids`, `padding_mask` of any
batch size and length, the task's outputs (a classifier's `logits`). The tokenizer stays outside it:

    keras-bert export --model runs/mrpc/best --format onnx --output onnx_models/mrpc.onnx

    import onnxruntime
    from keras_bert_impl.preprocessing import BertPreprocessor
    preprocessor = BertPreprocessor.from_pretrained("runs/mrpc/best", sequence_length=128)
    session = onnxruntime.InferenceSession("onnx_models/mrpc.onnx")
    logits, = session.run(["logits"], preprocessor(["a sentence", "another"]))
"""

import os

from keras_bert_impl.cli.arguments import add_model_class_argument, model_class, positive_int

QUESTION_ANSWERING_OPTIONS = ("doc_stride", "max_query_length", "max_answer_length", "n_best_size",
                              "null_score_diff_threshold")


def add_arguments(parser):
    """Define the `keras-bert export` flags on `parser`."""
    parser.add_argument("--model", required=True, help="a model directory (save_pretrained, a fine-tuning run's "
                        "best/, or any checkpoint from_pretrained reads) with vocab.txt beside it")
    parser.add_argument("--format", default="saved_model", choices=("saved_model", "onnx"),
                        help="saved_model: a SavedModel serving raw text; onnx: one .onnx file taking token ids "
                             "(default: saved_model)")
    parser.add_argument("--output", help="SavedModel directory, replaced atomically (default: "
                        "saved_models/<model directory name>); with --format onnx the .onnx file (default: "
                        "onnx_models/<model directory name>.onnx)")
    add_model_class_argument(parser, "model to build")
    parser.add_argument("--sequence-length", "--max-sequence-length", type=positive_int,
                        help="longest packed input; longer texts are truncated, QA contexts windowed (default: the "
                             "length the model was fine-tuned with, saved in its preprocessor.json; else the "
                             "model's position table, for QA min(384, that))")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --output even if it is a file or a folder that is not a SavedModel (with "
                             "--format onnx: replace an existing file)")
    qa = parser.add_argument_group("question answering", "each defaults to the fine-tuning run's, saved in the "
                                   "model's preprocessor.json, else to the value shown")
    qa.add_argument("--doc-stride", type=positive_int, help="distance between context windows (default: 128)")
    qa.add_argument("--max-query-length", type=positive_int, help="question tokens kept (default: 64)")
    qa.add_argument("--max-answer-length", type=positive_int, help="longest answer in tokens (default: 30)")
    qa.add_argument("--n-best-size", type=positive_int, help="start/end candidates per window (default: 20)")
    qa.add_argument("--version-2", action="store_true", help="SQuAD v2.0: answer \"\" when the null score wins "
                    "(default: on for a model fine-tuned with --version-2)")
    qa.add_argument("--null-score-diff-threshold", type=float, help="v2.0 threshold (default: the tuned one the "
                    "run saved, else 0.0)")


def run(args):
    """Load the model and tokenizer, export, print the SavedModel path and its signatures."""
    from keras_bert_impl.export import export_saved_model
    from keras_bert_impl.export.saved_model_export import SAVED_MODEL_MARKERS
    from keras_bert_impl.utils.atomic_io import check_replaceable

    if args.format == "onnx":
        return _run_onnx(args)
    output = args.output or os.path.join("saved_models", os.path.basename(os.path.normpath(args.model)))
    # Refuse an output that is not a previous export before loading anything.
    check_replaceable(os.path.abspath(output), SAVED_MODEL_MARKERS, args.overwrite, "SavedModel",
                      "pass --overwrite to replace it")
    model, tokenizer = _load(args.model, args.model_class, require_tokenizer=True)
    options = {name: getattr(args, name) for name in QUESTION_ANSWERING_OPTIONS if getattr(args, name) is not None}
    if args.version_2:
        options["version_2_with_negative"] = True
    if options and type(model).__name__ != "BertQuestionAnswerer":
        raise ValueError(f"{args.model} holds a {type(model).__name__}; the question-answering flags "
                         f"({', '.join(sorted(options))}) apply only to question answerers.")
    path = export_saved_model(model, output, tokenizer, sequence_length=args.sequence_length,
                              overwrite=args.overwrite, **options)
    print(f"Exported {type(model).__name__} to {path}")
    return 0


def _run_onnx(args):
    """`--format onnx`: refuse the SavedModel-only flags, then export the model's numeric graph."""
    from keras_bert_impl.export import export_onnx
    from keras_bert_impl.export.onnx_export import check_output

    text_flags = [f"--{name.replace('_', '-')}" for name in ("sequence_length",) + QUESTION_ANSWERING_OPTIONS
                  if getattr(args, name) is not None] + (["--version-2"] if args.version_2 else [])
    if text_flags:
        raise ValueError(f"{', '.join(text_flags)} apply to SavedModel exports, which serve text; an ONNX export "
                         "takes token ids of any length: drop them, or leave out --format onnx.")
    output = args.output or os.path.join("onnx_models", os.path.basename(os.path.normpath(args.model)) + ".onnx")
    check_output(os.path.abspath(output), args.overwrite)  # before loading anything
    model, _ = _load(args.model, args.model_class)
    path = export_onnx(model, output, overwrite=args.overwrite)
    print(f"Exported {type(model).__name__} to {path} (ONNX; inputs token_ids, segment_ids, padding_mask)")
    return 0


def _load(path, model_class_flag, require_tokenizer=False):
    from keras_bert_impl.models.task_loading import checkpoint_tokenizer, load_task

    model = load_task(path, task=model_class(model_class_flag))
    return model, checkpoint_tokenizer(path, required=require_tokenizer)

