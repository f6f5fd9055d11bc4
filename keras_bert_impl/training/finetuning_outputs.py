"""The files a fine-tuning run writes, each atomically: model directories with their tokenizer and
`eval_results.json`, and classification prediction files."""

import os

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_directory, atomic_write_json, atomic_write_text

EVAL_RESULTS_FILENAME = "eval_results.json"
MODEL_CONFIG_FILE = "config.json"  # what marks a model directory that may be replaced (best/, last/, final/)


def json_ready(results):
    """`results` with NumPy and Python numbers as floats (what `json` writes); other values unchanged.

    Args:
        results: dict of metric name -> value.

    Returns:
        dict.
    """
    return {key: (float(value) if isinstance(value, (int, float, np.floating, np.integer)) else value)
            for key, value in results.items()}


def save_finetuned(model, directory, tokenizer=None, results=None):
    """Write a model directory atomically: `save_pretrained` files, the tokenizer, and `eval_results.json`.

    Args:
        model: a task model with `save_pretrained`.
        directory: str. Replaced only when complete.
        tokenizer: `BertTokenizer` or None. Its `vocab.txt` + `tokenizer_config.json` go beside the weights.
            Defaults to None.
        results: dict or None. Evaluation results to store. Defaults to None.
    """
    with atomic_directory(directory, markers=(MODEL_CONFIG_FILE,), what="model directory") as tmp:
        model.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        if results is not None:
            atomic_write_json(os.path.join(tmp, EVAL_RESULTS_FILENAME), json_ready(results))


def write_classification_predictions(path, logits, label_vocabulary=None, regression=False):
    """Write `index<TAB>prediction` lines (GLUE's submission layout) atomically.

    Args:
        path: str. Output file.
        logits: array `(N, C)`.
        label_vocabulary: `LabelVocabulary` or None. Class names; None writes class ids. Defaults to None.
        regression: bool. Write the score. Defaults to False.
    """
    logits = np.asarray(logits)
    lines = ["index\tprediction"]
    for index, row in enumerate(logits):
        if regression:
            prediction = f"{float(row[0]):.6f}"
        else:
            class_id = int(np.argmax(row))
            prediction = label_vocabulary.id_to_label(class_id) if label_vocabulary is not None else str(class_id)
        lines.append(f"{index}\t{prediction}")
    atomic_write_text(path, "\n".join(lines) + "\n")
