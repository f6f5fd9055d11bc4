"""The multiple-choice recipe (the paper's SWAG run) as one library call (`finetune_multiple_choice`), what
`keras-bert finetune-multiple-choice` runs. Each choice is packed `[CLS] sent1 [SEP] sent2 endingN [SEP]`.
"""

import dataclasses
import json
import os

MONITOR = "accuracy"


@dataclasses.dataclass(frozen=True)
class SwagFiles:
    """The SWAG CSV files of a run: `train_file` trains; `dev_file` is scored after every epoch and picks
    `best/` (else `tune_fraction` of the training rows, held out and seeded, picks it); `test_file` is predicted,
    and scored when it has labels, and never picks a model. Each defaults to None."""

    train_file: str = None
    dev_file: str = None
    test_file: str = None
    tune_fraction: float = None


def finetune_multiple_choice(files, source, settings, sequence_length=128, dropout=None):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertMultipleChoice` on SWAG files.

    Writes into `settings.output_dir`: `last/` and `best/` by accuracy (`finetuning.finetune`), and for the final
    model `dev_predictions.tsv` (`index<TAB>choice`) with `eval_results.json`, `test_predictions.tsv` and, when
    the test file has labels, `test_results.json`.

    Args:
        files: `SwagFiles`.
        source: `finetuning.ModelSource`.
        settings: `finetuning.FinetuningSettings`.
        sequence_length: int. Tokens per packed choice; longer ones are truncated. Defaults to 128.
        dropout: float or None. Dropout before the scoring layer; None: the checkpoint's, else 0.1. Defaults
            to None.

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    import keras
    import numpy as np

    from keras_bert_impl import metrics
    from keras_bert_impl.data.multiple_choice_data import multiple_choice_inputs, read_swag_examples
    from keras_bert_impl.models.multiple_choice import BertMultipleChoice
    from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.training.held_out_data import hold_out_rows
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    keras.utils.set_random_seed(settings.seed)
    tokenizer = source.tokenizer()
    preprocessor = BertMultipleChoicePreprocessor(tokenizer, sequence_length=sequence_length)
    model = source.build(BertMultipleChoice, tokenizer, preprocessor, max_sequence_length=max(512, sequence_length),
                         dropout=dropout)

    def pack(examples):
        """`(x, labels)`: inputs `(N, C, T)` and int32 `(N,)` labels (None without)."""
        texts, labels = multiple_choice_inputs(examples)
        return preprocessor(texts), labels

    def scores(data):
        inputs, gold = data
        logits = model.predict(inputs, batch_size=settings.eval_batch_size, verbose=0)
        return logits, {MONITOR: metrics.accuracy(gold, np.argmax(logits, axis=-1))}

    train = read_swag_examples(files.train_file) if settings.epochs else []
    train, tune = hold_out_rows(train, files.tune_fraction, settings.seed)
    dev = pack(read_swag_examples(files.dev_file)) if files.dev_file else None
    selection = dev if dev is not None else (pack(tune) if tune else None)
    if settings.epochs:
        train_x, train_y = pack(train)
        finetuning.finetune(model, train_x, train_y, settings, tokenizer,
                            counts=f"{len(train)} training examples of {train_x['token_ids'].shape[1]} choices",
                            evaluate=(lambda m: scores(selection)[1]) if selection else None,
                            monitor=MONITOR if selection else None, selection_name="dev" if dev else "held-out")

    dev_results = {}
    if dev is not None:
        logits, dev_results = scores(dev)
        finetuning.write_classification_predictions(os.path.join(settings.output_dir, "dev_predictions.tsv"), logits)
        atomic_write_json(os.path.join(settings.output_dir, "eval_results.json"), dev_results)
        print("dev:", json.dumps(dev_results))
    if files.test_file:
        test_x, test_y = pack(read_swag_examples(files.test_file, require_labels=False))
        logits = model.predict(test_x, batch_size=settings.eval_batch_size, verbose=0)
        finetuning.write_classification_predictions(os.path.join(settings.output_dir, "test_predictions.tsv"), logits)
        if test_y is not None:
            results = {MONITOR: metrics.accuracy(test_y, np.argmax(logits, axis=-1))}
            atomic_write_json(os.path.join(settings.output_dir, "test_results.json"), results)
            print("test:", json.dumps(results))
    return dev_results
