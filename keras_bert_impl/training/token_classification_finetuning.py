"""The named-entity recognition recipe (the paper's CoNLL-2003 fine-tuning) as one library call
(`finetune_token_classifier`), what `keras-bert finetune-ner` runs.
"""

import os


def finetune_token_classifier(files, source, settings, sequence_length=128, stride=None, classifier_dropout=None,
                              monitor="f1"):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertTokenClassifier` on CoNLL files.

    Writes into `settings.output_dir`: `last/` and `best/` by `monitor`, and for the final model
    `dev_predictions.txt` / `test_predictions.txt` (`word gold predicted`, conlleval's input) with
    `eval_results.json` / `test_results.json` (`finetuning.finetune_and_score`).

    Args:
        files: `finetuning.FinetuningFiles`.
        source: `finetuning.ModelSource`.
        settings: `finetuning.FinetuningSettings`.
        sequence_length: int. Tokens per window, [CLS] and [SEP] included. Defaults to 128.
        stride: int or None. Tokens between the starts of a long sentence's windows; None: half a window.
            Defaults to None.
        classifier_dropout: float or None. Dropout before the head; None: the checkpoint's, else 0.1.
            Defaults to None.
        monitor: str. The dev (or held-out) metric that picks `best/`: f1, precision, recall, accuracy or
            `<TYPE>_f1`. Defaults to "f1".

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    import keras

    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences, tag_vocabulary
    from keras_bert_impl.metrics import entity_scores
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor
    from keras_bert_impl.training import finetuning
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
