"""Export a saved model directory as a TensorFlow SavedModel that serves raw text, or as ONNX.

    keras-bert export --model runs/squad/best --output saved_models/squad --sequence-length 384
    keras-bert export --model runs/mrpc/best --format onnx --output onnx_models/mrpc.onnx [--optimize]

The model comes from the directory (`models.load_task`), the tokenizer from the `vocab.txt` beside it. The
SavedModel (`export.export_saved_model`) needs only `tensorflow` and `tensorflow_text` to serve:
`tf.saved_model.load(path).signatures["serve_text"](question=..., context=...)["answer"]`. `--format onnx`
(`export.export_onnx`; `pip install "keras-bert-impl[onnx]"`) takes `token_ids`, `segment_ids`,
`padding_mask` from the model's preprocessor (`BertPreprocessor.from_pretrained(model directory)`).
"""

import os

from keras_bert_impl.cli.arguments import (
    add_model_class_argument,
    add_question_answering_arguments,
    positive_int,
    question_answering_settings,
)


def add_arguments(parser):
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
                        help="replace --output if it is a previous output of keras-bert (never anyone else's "
                             "folder; with --format onnx: replace an existing file)")
    parser.add_argument("--optimize", action="store_true",
                        help="with --format onnx: write the graph after ONNX Runtime's transformer optimizer "
                             "(fused layer norms, GELUs and attention; only ONNX Runtime runs it)")
    add_question_answering_arguments(parser.add_argument_group("question answering"))


def run(args):
    """Load the model (`models.load_task`) and its tokenizer, export, print the path."""
    from keras_bert_impl.export import export_onnx, export_saved_model
    from keras_bert_impl.export.onnx_export import check_output as check_onnx_output
    from keras_bert_impl.models.task_loading import checkpoint_tokenizer, load_task
    from keras_bert_impl.utils.atomic_io import check_not_input, check_output

    options = question_answering_settings(args)
    onnx = args.format == "onnx"
    output = args.output or os.path.join("onnx_models" if onnx else "saved_models",
                                         os.path.basename(os.path.normpath(args.model)) + (".onnx" if onnx else ""))
    if onnx:
        flags = ["--sequence-length"] * (args.sequence_length is not None) + [
            "--" + name.replace("_with_negative", "").replace("_", "-") for name in options]
        if flags:
            raise ValueError(f"{', '.join(flags)} apply to SavedModel exports, which serve text; an ONNX export "
                             "takes token ids of any length: drop them, or leave out --format onnx.")
        check_not_input(output, [args.model], "ONNX file")  # before loading anything
        check_onnx_output(os.path.abspath(output), args.overwrite)
    else:
        if args.optimize:
            raise ValueError("--optimize applies to ONNX exports (ONNX Runtime's optimizer): add --format onnx, "
                             "or drop --optimize.")
        check_output(os.path.abspath(output), [args.model], args.overwrite, "SavedModel")  # before loading anything
    model = load_task(args.model, task=None if args.model_class == "auto" else args.model_class)
    if options and type(model).__name__ != "BertQuestionAnswerer":
        raise ValueError(f"{args.model} holds a {type(model).__name__}; the question-answering flags "
                         f"({', '.join(sorted(options))}) apply only to question answerers.")
    if onnx:
        path = export_onnx(model, output, overwrite=args.overwrite, optimize=args.optimize)
        print(f"Exported {type(model).__name__} to {path} (ONNX; inputs token_ids, segment_ids, padding_mask)")
    else:
        path = export_saved_model(model, output, checkpoint_tokenizer(args.model, required=True),
                                  sequence_length=args.sequence_length, overwrite=args.overwrite, **options)
        print(f"Exported {type(model).__name__} to {path}")
    return 0
