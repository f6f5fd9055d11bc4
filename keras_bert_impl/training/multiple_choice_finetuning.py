"""The multiple-choice recipe (the paper's SWAG run) as one library call (`finetune_multiple_choice`), what
`keras-bert finetune-multiple-choice` runs. Each choice is packed `[CLS] sent1 [SEP] sent2 endingN [SEP]`.
"""

import os


def finetune_multiple_choice(files, source, settings, sequence_length=128, dropout=None):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertMultipleChoice` on SWAG files.

    Writes into `settings.output_dir`: `last/` and `best/` by accuracy, and for the final model
    `dev_predictions.tsv` (`index<TAB>choice`) with `eval_results.json`, `test_predictions.tsv` and, when the test
    file has labels, `test_results.json` (`finetuning.finetune_and_score`).

    Args:
        files: `finetuning.FinetuningFiles`.
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

    keras.utils.set_random_seed(settings.seed)
    tokenizer = source.tokenizer()
    preprocessor = BertMultipleChoicePreprocessor(tokenizer, sequence_length=sequence_length)
    model = source.build(BertMultipleChoice, tokenizer, preprocessor, max_sequence_length=max(512, sequence_length),
                         dropout=dropout)

    def pack(examples):
        """`(x, labels)`: inputs `(N, C, T)` and int32 `(N,)` labels (None without)."""
        texts, labels = multiple_choice_inputs(examples)
        return preprocessor(texts), labels

    def write_predictions(name, inputs, logits):
        finetuning.write_classification_predictions(os.path.join(settings.output_dir, f"{name}_predictions.tsv"),
                                                    logits)

    return finetuning.finetune_and_score(
        model, tokenizer, files, settings, read_swag_examples(files.train_file) if settings.epochs else [],
        read=lambda path, labeled: read_swag_examples(path, require_labels=labeled), pack=pack,
        score=lambda gold, logits: {"accuracy": metrics.accuracy(gold, np.argmax(logits, axis=-1))},
        write_predictions=write_predictions, monitor="accuracy",
        counts=lambda rows, x, y: f"{len(rows)} training examples of {x['token_ids'].shape[1]} choices")
