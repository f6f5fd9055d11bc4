"""Fine-tune BERT for multiple choice (SWAG: pick the ending of a sentence among four), with `model.fit`.

    keras-bert finetune-multiple-choice --train-file swag/train.csv --dev-file swag/val.csv \\
        --init-checkpoint path/to/bert --output-dir runs/swag

The recipe is `training.classifier_finetuning.finetune_multiple_choice`. SWAG CSV files (`sent1`, `sent2`,
`ending0`, ... and `label`); choice N is packed as `[CLS] sent1 [SEP] sent2 endingN [SEP]`, as `run_swag.py`.
Files, outputs and resuming as `finetune-classifier`'s; examples are bucketed by their longest choice (an
example's choices stay in one batch).
"""

from keras_bert_impl.cli.arguments import add_finetuning_arguments, check_finetuning_arguments, finetuning_inputs


def add_arguments(parser):
    """Define the `keras-bert finetune-multiple-choice` flags on `parser`; the defaults are the paper's SWAG
    run's (section 4.4)."""
    add_finetuning_arguments(
        parser, "labelled SWAG CSV (sent1, sent2, ending0.., label)",
        "tokens per packed choice, longer ones are truncated", classifier_dropout=True,
        batch_size=16, eval_batch_size=32)


check_arguments = check_finetuning_arguments


def run(args):
    from keras_bert_impl.training.finetuning import FinetuningFiles
    from keras_bert_impl.training.classifier_finetuning import finetune_multiple_choice

    finetune_multiple_choice(*finetuning_inputs(FinetuningFiles, args), sequence_length=args.sequence_length,
                             dropout=args.classifier_dropout)
    return 0
