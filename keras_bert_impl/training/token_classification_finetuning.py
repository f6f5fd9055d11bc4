"""The named-entity recognition recipe (the paper's CoNLL-2003 fine-tuning) as one library call
(`finetune_token_classifier`), what `keras-bert finetune-ner` runs.
"""

import dataclasses
import json
import os


@dataclasses.dataclass(frozen=True)
class ConllFiles:
    """The CoNLL files of a run: `train_file` trains, `dev_file` is scored after every epoch and picks `best/`,
    `test_file` is tagged and scored at the end and never picks a model. Each defaults to None."""

    train_file: str = None
    dev_file: str = None
    test_file: str = None


def finetune_token_classifier(files, source, settings, sequence_length=128, stride=None, classifier_dropout=None,
                              monitor="f1"):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertTokenClassifier` on CoNLL files.

    Writes into `settings.output_dir`: `last/` and `best/` by `monitor` (`finetuning.finetune`), and for the final
    model `dev_predictions.txt` / `test_predictions.txt` (`word gold predicted`, conlleval's input) with
    `eval_results.json` / `test_results.json`.

    Args:
        files: `ConllFiles`.
        source: `finetuning.ModelSource`.
        settings: `finetuning.FinetuningSettings`.
        sequence_length: int. Tokens per window, [CLS] and [SEP] included. Defaults to 128.
        stride: int or None. Tokens between the starts of a long sentence's windows; None: half a window.
            Defaults to None.
        classifier_dropout: float or None. Dropout before the head; None: the checkpoint's, else 0.1.
            Defaults to None.
        monitor: str. The dev metric that picks `best/`: f1, precision, recall, accuracy or `<TYPE>_f1`.
            Defaults to "f1".

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    import keras

    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
    from keras_bert_impl.metrics import entity_scores
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
    from keras_bert_impl.training import finetuning
    from keras_bert_impl.utils.atomic_io import atomic_write_json, atomic_write_text

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

    def scores(sentences):
        tagged = model.predict([sentence.words for sentence in sentences], batch_size=settings.eval_batch_size,
                               verbose=0)
        predicted = [[word["tag"] for word in sentence["words"]] for sentence in tagged]
        return predicted, entity_scores([list(sentence.tags) for sentence in sentences], predicted)

    dev = read_conll_sentences(files.dev_file) if files.dev_file else None
    if settings.epochs:
        train_x, train_y = preprocessor([sentence.words for sentence in train], encode_tags(train, tags))
        finetuning.finetune(model, train_x, train_y, settings, tokenizer,
                            counts=f"{len(train)} training sentences, {len(train_y)} windows",
                            details=f"; tags: {tags.labels}", evaluate=(lambda m: scores(dev)[1]) if dev else None,
                            monitor=monitor if dev else None)

    dev_results = {}
    for name, sentences, results_file in (("dev", dev, "eval_results.json"),
                                          ("test", read_conll_sentences(files.test_file) if files.test_file else None,
                                           "test_results.json")):
        if sentences is None:
            continue
        predicted, results = scores(sentences)
        # conlleval's input: `word gold predicted` lines, a blank line after each sentence
        blocks = ["\n".join(f"{word} {gold} {tag}" for word, gold, tag in zip(sentence.words, sentence.tags, guessed))
                  for sentence, guessed in zip(sentences, predicted)]
        atomic_write_text(os.path.join(settings.output_dir, f"{name}_predictions.txt"), "\n\n".join(blocks) + "\n")
        atomic_write_json(os.path.join(settings.output_dir, results_file), results)
        dev_results = results if name == "dev" else dev_results
        print(f"{name}:", json.dumps({key: round(value, 4) for key, value in results.items()}))
    return dev_results
