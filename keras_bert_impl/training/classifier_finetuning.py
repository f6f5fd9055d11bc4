"""The classification recipes on `finetuning.finetune_and_score`: sentence (pair) classification as
`run_classifier.py` (`finetune_classifier`), multiple choice as the paper's SWAG run (`finetune_multiple_choice`)
and named-entity recognition as its CoNLL-2003 run (`finetune_token_classifier`).
"""

import dataclasses
import os

import keras

from keras_bert_impl.training import finetuning


@dataclasses.dataclass(frozen=True)
class ClassificationFiles(finetuning.FinetuningFiles):
    """`FinetuningFiles` and how a classification run reads them.

    Args:
        task: str or None. A GLUE task (`classification_data.GLUE_LAYOUTS`): its layout and metrics. Defaults to None.
        text_columns: sequence of str or int. One or two text columns (names or 0-based indices). Defaults to ().
        label_column: str, int or None. The label column, without `task`. Defaults to None.
        file_format: str or None. "tsv", "csv" or "jsonl"; None: the file extension. Defaults to None.
        has_header: bool. The first row names the columns. Defaults to True.
        regression: bool. Float labels, one output, MSE (a GLUE regression task sets it). Defaults to False.
        sequence_length: int. Tokens per packed example. Defaults to 128.
    """

    task: str = None
    text_columns: tuple = ()
    label_column: object = None
    file_format: str = None
    has_header: bool = True
    regression: bool = False
    sequence_length: int = 128

    @property
    def is_regression(self):
        from keras_bert_impl.data.classification_data import glue_layout

        return self.regression or bool(self.task and glue_layout(self.task).regression)

    def read(self, path, labeled=True):
        """The `ClassificationExample`s of `path` in this layout."""
        from keras_bert_impl.data.classification_data import read_classification_examples, read_glue_examples

        if self.task:
            return read_glue_examples(self.task, path, labeled=labeled)
        return read_classification_examples(path, list(self.text_columns), self.label_column if labeled else None,
                                            file_format=self.file_format, has_header=self.has_header,
                                            regression=self.is_regression)

    def has_labels(self, path):
        """Whether `path` holds the label column (`data.classification_data.has_label_column`)."""
        from keras_bert_impl.data.classification_data import glue_layout, has_label_column

        if self.task:
            return has_label_column(path, glue_layout(self.task).label_column, "tsv")
        return has_label_column(path, self.label_column, self.file_format)


def _label_vocabulary(files, train):
    """The run's labels: the GLUE task's, else the training rows'; None for regression or no training."""
    from keras_bert_impl.data.classification_data import LabelVocabulary, glue_layout

    if files.is_regression:
        return None
    layout_labels = glue_layout(files.task).labels if files.task else None
    if layout_labels:
        return LabelVocabulary(layout_labels)
    return LabelVocabulary.from_examples(train) if train else None


@finetuning.claims_output_dir
def finetune_classifier(files, source, settings, classifier_dropout=None, monitor=None):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertClassifier` as `run_classifier.py`.

    Writes `last/`, `best/` and the final model's `dev_predictions.tsv`, `test_predictions.tsv` and results
    (GLUE's official metrics for a task) into `settings.output_dir` (`finetuning.finetune_and_score`).

    Args:
        files, source, settings: `ClassificationFiles`, `finetuning.ModelSource`, `finetuning.FinetuningSettings`.
        classifier_dropout: float or None. Dropout before the head; None: the checkpoint's, else 0.1. Defaults to None.
        monitor: str or None. The dev (or held-out) metric that picks `best/`; None: the task's first. Defaults to None.

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    from keras_bert_impl.data.classification_data import LabelVocabulary, classification_arrays
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(settings.seed)
    regression = files.is_regression
    tokenizer = source.tokenizer()
    train = files.read(files.train_file) if settings.epochs else []
    labels = _label_vocabulary(files, train)
    model = source.build(BertClassifier, tokenizer, BertPreprocessor(tokenizer, sequence_length=files.sequence_length),
                         max_sequence_length=max(512, files.sequence_length),
                         num_classes=1 if regression else (len(labels) if labels else None),
                         labels=labels.labels if labels else None, dropout=classifier_dropout)
    if labels is None and not regression:
        labels = LabelVocabulary(model.labels or [str(index) for index in range(model.num_classes)])

    def write_predictions(name, inputs, logits):
        finetuning.write_classification_predictions(os.path.join(settings.output_dir, f"{name}_predictions.tsv"),
                                                    logits, labels, regression)

    return finetuning.finetune_and_score(
        model, tokenizer, files, settings, train,
        read=lambda path, labeled: files.read(path, labeled=labeled or files.has_labels(path)),
        pack=lambda examples: model.preprocessor(*classification_arrays(examples, labels, regression)),
        score=lambda gold, logits: finetuning.classification_scores(gold, logits, files.task, regression),
        write_predictions=write_predictions,
        monitor=monitor or finetuning.classification_monitor(files.task, regression),
        counts=lambda rows, x, y: f"{len(rows)} training examples",
        details=f"; labels: {labels.labels if labels else 'regression'}")


@finetuning.claims_output_dir
def finetune_multiple_choice(files, source, settings, sequence_length=128, dropout=None):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertMultipleChoice` on SWAG files.

    Each choice is packed `[CLS] sent1 [SEP] sent2 endingN [SEP]`. Writes `last/`, `best/` (by accuracy) and the
    final model's `dev_predictions.tsv` / `test_predictions.tsv` (`index<TAB>choice`) with their results into
    `settings.output_dir` (`finetuning.finetune_and_score`).

    Args:
        files, source, settings: `finetuning.FinetuningFiles`, `ModelSource` and `FinetuningSettings`.
        sequence_length: int. Tokens per packed choice; longer ones are truncated. Defaults to 128.
        dropout: float or None. Dropout before the scoring layer; None: the checkpoint's, else 0.1. Defaults to None.

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    import numpy as np

    from keras_bert_impl import metrics
    from keras_bert_impl.data.multiple_choice_data import multiple_choice_inputs, read_swag_examples
    from keras_bert_impl.models.multiple_choice import BertMultipleChoice
    from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor

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


@finetuning.claims_output_dir
def finetune_token_classifier(files, source, settings, sequence_length=128, stride=None, classifier_dropout=None,
                              monitor="f1"):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertTokenClassifier` on CoNLL files.

    Writes `last/`, `best/` (by `monitor`) and the final model's `dev_predictions.txt` / `test_predictions.txt`
    (`word gold predicted`, conlleval's input) with their results into `settings.output_dir`.

    Args:
        files, source, settings: `finetuning.FinetuningFiles`, `ModelSource` and `FinetuningSettings`.
        sequence_length: int. Tokens per window, [CLS] and [SEP] included. Defaults to 128.
        stride: int or None. Tokens between the starts of a long sentence's windows (None: half). Defaults to None.
        classifier_dropout: float or None. Dropout before the head; None: the checkpoint's, else 0.1. Defaults to None.
        monitor: str. The dev (or held-out) metric that picks `best/`: f1, precision, recall, accuracy or
            `<TYPE>_f1`. Defaults to "f1".

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
    from keras_bert_impl.metrics import entity_scores
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
    from keras_bert_impl.utils.atomic_io import atomic_write_text

    keras.utils.set_random_seed(settings.seed)
    tokenizer = source.tokenizer()
    train = read_conll_sentences(files.train_file) if settings.epochs else []
    tags = tag_vocabulary(train) if train else None  # no training: the checkpoint's tags
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=sequence_length, stride=stride)
    model = source.build(BertTokenClassifier, tokenizer, preprocessor, max_sequence_length=max(512, sequence_length),
                         num_classes=len(tags) if tags else None, labels=tags.labels if tags else None,
                         dropout=classifier_dropout)
    if model.labels is None:
        raise ValueError(f"{source.init_checkpoint} has no tag names; give a training file (its tags name the "
                         "classes).")

    def predict(sentences):
        tagged = model.predict([sentence.words for sentence in sentences], batch_size=settings.eval_batch_size,
                               verbose=0)
        return [[word["tag"] for word in sentence["words"]] for sentence in tagged]

    def write_predictions(name, sentences, predicted):
        # conlleval's input: `word gold predicted` lines, a blank line after each sentence
        blocks = ["\n".join(f"{word} {gold} {tag}" for word, gold, tag in zip(sentence.words, sentence.tags, guessed))
                  for sentence, guessed in zip(sentences, predicted)]
        atomic_write_text(os.path.join(settings.output_dir, f"{name}_predictions.txt"), "\n\n".join(blocks) + "\n")

    return finetuning.finetune_and_score(
        model, tokenizer, files, settings, train, read=lambda path, labeled: read_conll_sentences(path),
        pack=lambda sentences: (sentences, [list(sentence.tags) for sentence in sentences]), predict=predict,
        score=entity_scores, write_predictions=write_predictions, monitor=monitor,
        training_arrays=lambda rows: preprocessor([sentence.words for sentence in rows], encode_tags(rows, tags)),
        counts=lambda rows, x, y: f"{len(rows)} training sentences, {len(y)} windows",
        details=f"; tags: {tags.labels}" if tags else "")
