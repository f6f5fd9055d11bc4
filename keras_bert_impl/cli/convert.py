"""Convert a checkpoint (Hugging Face, original TF or ours) to our format or Hugging Face's.

    keras-bert convert --input path/to/hf_bert_dir --output bert_ours                    # -> ours
    keras-bert convert --input runs/mrpc/best --output mrpc_hf --format huggingface     # task heads too

The model class is read from the checkpoint (`models.load_task`); `--model-class` picks another, e.g.
`backbone` to keep only the encoder. Every weight is carried over; the tokenizer files beside the input are
written beside the output, which is replaced only when complete. An existing output folder is replaced only if
this package wrote it and `--overwrite` is given; an output that is, is inside or holds the input is refused.
"""

from keras_bert_impl.cli.arguments import add_model_class_argument
from keras_bert_impl.utils.output_lock import locks_output


def add_arguments(parser):
    parser.add_argument("--input", required=True, help="checkpoint directory, or original TF checkpoint prefix")
    parser.add_argument("--output", required=True, help="output directory")
    parser.add_argument("--format", default="native", choices=("native", "huggingface"),
                        help="native: ours (config.json + model.safetensors by variable path); huggingface: what "
                             "transformers' from_pretrained loads (default: %(default)s)")
    add_model_class_argument(parser, "model to build from the checkpoint")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --output if it is a previous output of keras-bert (never anyone else's folder)")


@locks_output(lambda arguments: arguments["args"].output, replaced=True)
def run(args):
    """Load, write in the requested format, copy the tokenizer; print a one-line report."""
    from keras_bert_impl.checkpoints import save_huggingface
    from keras_bert_impl.models.task_loading import checkpoint_tokenizer, load_task
    from keras_bert_impl.utils.atomic_io import atomic_directory, check_output

    check_output(args.output, [args.input], args.overwrite, "model directory")  # before loading anything
    model = load_task(args.input, task=None if args.model_class == "auto" else args.model_class)
    tokenizer = checkpoint_tokenizer(args.input)
    # Weights and tokenizer land together: a failure in either leaves any previous output untouched.
    with atomic_directory(args.output, args.overwrite, "model directory") as staging:
        if args.format == "native":
            model.save_pretrained(staging)
        elif hasattr(model, "save_huggingface"):
            model.save_huggingface(staging)
        else:
            save_huggingface(model, staging)
        if tokenizer is not None:
            tokenizer.save_pretrained(staging)
    report = getattr(model, "load_report", None)
    loaded = f"{len(report.loaded)} weights" if report is not None else f"{len(model.weights)} weights"
    print(f"Converted {type(model).__name__} ({loaded}) from {args.input} to {args.output} ({args.format})"
          f"{'' if tokenizer is not None else '; no vocab.txt found beside the input'}")
    if report is not None and report.missing:
        print(f"Not in the checkpoint, left at initial values: {', '.join(report.missing)}")
    return 0
