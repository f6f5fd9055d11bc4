import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
from keras_bert_impl.training.finetuning_results import (
    classification_monitor,
    classification_scores,
    evaluate_squad_predictions,
    write_classification_predictions,
)
from keras_bert_impl.training.finetuning import load_tokenizer, xla_jit_compile
from keras_bert_impl.training.callbacks import FinetuningCheckpoint
from tests.helpers import tiny_backbone, to_numpy
from tests.models.task_test_utils import marker_span_task, token_presence_task
from tests.training.finetuning_test_utils import VOCABULARY, tokenizer, write_squad_json, write_tiny_checkpoint


@pytest.mark.backend_independent
def test_tokenizer_comes_from_the_vocab_or_the_checkpoint_directory(tmp_path):
    checkpoint = write_tiny_checkpoint(tmp_path / "ckpt")
    assert load_tokenizer(checkpoint=checkpoint).vocabulary_size() == len(VOCABULARY)
    assert load_tokenizer(vocab=os.path.join(checkpoint, "vocab.txt")).vocabulary_size() == len(VOCABULARY)
    os.makedirs(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="No vocab.txt"):
        load_tokenizer(checkpoint=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="No vocabulary"):
        load_tokenizer()


def test_models_from_a_checkpoint_or_a_preset(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.training.finetuning import ModelSource

    checkpoint = ModelSource(init_checkpoint=write_tiny_checkpoint(tmp_path / "ckpt"))
    classifier = checkpoint.build(BertClassifier, tokenizer(), num_classes=3, labels=["a", "b", "c"], dropout=0.2)
    assert classifier.labels == ("a", "b", "c") and classifier.load_report.missing and classifier.dropout == 0.2
    answerer = checkpoint.build(BertQuestionAnswerer, tokenizer(), backbone_dropout=0.0)
    assert answerer.backbone.dropout == 0.0
    scratch = ModelSource(preset="tiny").build(BertClassifier, tokenizer(), max_sequence_length=64, num_classes=1,
                                               labels=None, dropout=None)
    assert scratch.is_regression and scratch.backbone.vocabulary_size == len(VOCABULARY)
    assert scratch.backbone.max_sequence_length == 64 and scratch.dropout == 0.1
    with pytest.raises(ValueError, match="checkpoint"):
        ModelSource().build(BertQuestionAnswerer, tokenizer())


def test_a_vocabulary_larger_than_the_embedding_table_is_rejected(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.tokenization import BertTokenizer
    from keras_bert_impl.training.finetuning import ModelSource

    checkpoint = write_tiny_checkpoint(tmp_path / "ckpt")
    bigger = BertTokenizer(VOCABULARY + ["extra"])
    with pytest.raises(ValueError, match="embedding table"):
        ModelSource(init_checkpoint=checkpoint).build(BertClassifier, bigger, num_classes=2)


@pytest.mark.slow
def test_checkpoint_callback_keeps_last_and_the_best_epoch(tmp_path):
    model = BertClassifier(tiny_backbone(vocabulary_size=len(VOCABULARY)), num_classes=2, labels=["no", "yes"])
    scores = iter([0.5, 0.8, 0.6])
    kernels = []

    def evaluate(m):
        kernels.append(to_numpy(m.get_layer("classifier_dense").kernel).copy())
        return {"accuracy": next(scores)}

    callback = FinetuningCheckpoint(str(tmp_path / "out"), tokenizer(), evaluate, monitor="accuracy")
    x, y = token_presence_task(8, sequence_length=10, vocabulary_size=len(VOCABULARY))
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, epochs=3, batch_size=4, callbacks=[callback], verbose=0)
    assert (callback.best_epoch, callback.best_score) == (1, 0.8)
    best = BertClassifier.from_pretrained(str(tmp_path / "out" / "best"))
    np.testing.assert_array_equal(to_numpy(best.get_layer("classifier_dense").kernel), kernels[1])
    last = BertClassifier.from_pretrained(str(tmp_path / "out" / "last"))
    np.testing.assert_array_equal(to_numpy(last.get_layer("classifier_dense").kernel), kernels[2])
    assert last.labels == ("no", "yes")
    results = json.loads((tmp_path / "out" / "best" / "eval_results.json").read_text())
    assert results["epoch"] == 2 and results["accuracy"] == 0.8 and "loss" in results
    assert load_tokenizer(checkpoint=str(tmp_path / "out" / "best")).vocabulary_size() == len(VOCABULARY)


@pytest.mark.backend_independent
def test_classification_scores_use_the_official_task_metrics():
    logits = np.array([[2.0, 0.0], [0.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    labels = np.array([0, 1, 0, 0])
    assert classification_scores(labels, logits, task="mrpc") == {"accuracy": 0.75, "f1": 2 / 3}
    assert set(classification_scores(labels, logits, task="cola")) == {"matthews_correlation"}
    assert set(classification_scores(labels, logits)) == {"accuracy", "f1"}
    regression = classification_scores(np.array([1.0, 2.0, 3.0]), np.array([[1.1], [1.9], [3.5]]),
                                       regression=True)
    assert regression["spearman"] == pytest.approx(1.0) and 0.9 < regression["pearson"] < 0.999
    assert classification_monitor("STS-B") == "pearson"
    assert classification_monitor(None, regression=False) == "accuracy"


@pytest.mark.backend_independent
def test_classification_predictions_file(tmp_path):
    from keras_bert_impl.data.label_vocabulary import LabelVocabulary

    path = tmp_path / "predictions.tsv"
    write_classification_predictions(str(path), np.array([[0.1, 0.9], [2.0, 1.0]]),
                                     LabelVocabulary(["neg", "pos"]))
    assert path.read_text() == "index\tprediction\n0\tpos\n1\tneg\n"
    write_classification_predictions(str(path), np.array([[0.25], [1.5]]), regression=True)
    assert path.read_text() == "index\tprediction\n0\t0.250000\n1\t1.500000\n"


def oracle_logits(features):
    """Logits whose best span is each window's training label (a large margin everywhere)."""
    start = np.full(features.token_ids.shape, -5.0)
    end = np.full(features.token_ids.shape, -5.0)
    rows = np.arange(len(features))
    start[rows, features.start_positions] = 5.0
    end[rows, features.end_positions] = 5.0
    return start, end


@pytest.mark.backend_independent
@pytest.mark.parametrize("version_2", [False, True])
def test_squad_evaluation_of_gold_logits_scores_100(tmp_path, version_2):
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad import read_squad_examples
    from keras_bert_impl.squad.squad_reader import load_squad_json

    path = write_squad_json(tmp_path / "dev.json", 4, seed=0, version_2=version_2)
    examples = read_squad_examples(path, is_training=True)
    features = convert_examples_to_features(examples, tokenizer(), sequence_length=32, doc_stride=8,
                                            max_query_length=8, is_training=True)
    start, end = oracle_logits(features)
    results = evaluate_squad_predictions(examples, features, start, end, load_squad_json(path),
                                         output_dir=str(tmp_path / "out"),
                                         version_2_with_negative=version_2)
    assert results["f1"] == 100.0
    written = sorted(os.listdir(tmp_path / "out"))
    if version_2:
        assert results["exact"] == 100.0 and results["NoAns_total"] == 4
        assert "null_score_diff_threshold" in results and "null_odds.json" in written
    else:
        assert results["exact_match"] == 100.0 and "null_odds.json" not in written
    assert {"predictions.json", "nbest_predictions.json", "eval_results.json"} <= set(written)


@pytest.mark.slow
def test_finetuning_recipe_learns_on_length_buckets():
    """AdamWeightDecay + warmup/linear decay, bucketed batches of varying shapes, jit-compiled steps.

    The span task: a one-layer model learns it on every backend and seed tried. (The token-presence
    classification task is not used here: under this recipe its loss sits at ln 2 for a seed-dependent number
    of epochs, so a fixed budget passed or failed by backend.)
    """
    from keras_bert_impl.data.length_bucketing import packed_batches

    x, y = marker_span_task(128, sequence_length=24, seed=0)
    x_test, y_test = marker_span_task(64, sequence_length=24, seed=1)
    model = BertQuestionAnswerer(tiny_backbone(num_layers=1, dropout=0.0, attention_dropout=0.0))
    epochs = 6
    dataset = packed_batches(x, y, batch_size=16, bucket_width=8, shuffle=True, seed=0, epochs=epochs)
    steps = int(dataset.cardinality()) // epochs
    model.compile(learning_rate=5e-3, total_steps=steps * epochs, warmup_fraction=0.1, jit_compile=xla_jit_compile())
    assert model.jit_compile == (keras.backend.backend() in ("tensorflow", "jax"))  # XLA; torch runs eagerly
    model.fit(dataset, epochs=epochs, steps_per_epoch=steps, verbose=0)
    assert int(to_numpy(model.optimizer.iterations)) == steps * epochs
    outputs = model.predict(x_test, batch_size=16, verbose=0)
    start_accuracy = np.mean(np.argmax(outputs["start_logits"], -1) == y_test["start_positions"])
    end_accuracy = np.mean(np.argmax(outputs["end_logits"], -1) == y_test["end_positions"])
    assert start_accuracy >= 0.85 and end_accuracy >= 0.85, (start_accuracy, end_accuracy)  # chance < 0.1


def test_a_preprocessor_longer_than_the_position_table_is_rejected(tmp_path):
    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training.finetuning import ModelSource

    source = ModelSource(init_checkpoint=write_tiny_checkpoint(tmp_path / "ckpt"))  # 64 positions
    with pytest.raises(ValueError, match="packs 80 tokens but the model's position table has 64 rows; pack to"):
        source.build(BertClassifier, tokenizer(), BertPreprocessor(tokenizer(), sequence_length=80), num_classes=2)
