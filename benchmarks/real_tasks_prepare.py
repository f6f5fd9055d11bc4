"""Stage `prepare` of benchmarks/real_tasks.py: the real data sets turned into token-id features, once.

Needs TensorFlow (our tokenizer). Reads `--data-dir` (the shared MRPC, SQuAD 2.0 sample and CoNLL-2003 files)
through the library's readers and featurizers (one implementation each) and writes into the features folder:
- `meta.json`: the data split, the packing settings, each task's recipe and the number of rows;
- `<task>.npz` (compressed, int16 token ids): the train and evaluation rows both implementations train and
  predict on, so the comparison isolates model + optimizer + loop;
- `checkpoint/`: the MiniLM checkpoint's `config.json`, `vocab.txt` and its weights, in float32 or rounded to
  float16 (`--checkpoint-dtype`, to carry it to another machine; the train stage upcasts to float32 and both
  implementations start from the same weights).
SQuAD keeps the windows' decoding metadata (`squad_decoding.npz`) for the score stage.
"""

import json
import os

import numpy as np

from keras_bert_impl.utils.atomic_io import atomic_path, atomic_write, atomic_write_json

from real_tasks_train import BUCKET_WIDTH

# Articles of the SQuAD 2.0 sample (../shared/data/README.md): 0-11 train, 12-15 test. The last training
# article is held out to tune the null-score threshold; it is not trained on.
SQUAD_TRAIN_ARTICLES = range(0, 11)
SQUAD_TUNE_ARTICLES = range(11, 12)
SQUAD_TEST_ARTICLES = range(12, 16)
SQUAD_FILE = os.path.join("squad", "squad-v2.0-dev-sample.json")
MRPC_TRAIN_FILE = os.path.join("mrpc", "msr_paraphrase_train.txt")
MRPC_TEST_FILE = os.path.join("mrpc", "msr_paraphrase_test.txt")

CONLL_TRAIN_FILE = os.path.join("conll2003", "train.txt")
CONLL_TEST_FILE = os.path.join("conll2003", "test.txt")

# The recipe of each task, the same for both implementations: AdamW (decay 0.01, not on LayerNorm and
# biases), linear warmup over 10% of the updates then linear decay to 0, clip 1.0, dropout 0.1.
RECIPES = {
    "mrpc": dict(learning_rate=5e-5, epochs=5, batch_size=32, sequence_length=128),
    "squad": dict(learning_rate=1e-4, epochs=6, batch_size=32, sequence_length=384, doc_stride=128,
                  max_query_length=64),
    # CoNLL-2003: a prefix of train.txt (sentences), windows of 128 tokens with half-window stride.
    "conll": dict(learning_rate=5e-5, epochs=3, batch_size=32, sequence_length=128, train_sentences=6000),
}
TASKS = tuple(RECIPES)


def _compact(x, prefix):
    """Model inputs as small integer arrays: token ids int16 (vocabularies < 32,768), segments int8."""
    return {
        f"{prefix}_token_ids": x["token_ids"].astype(np.int16),
        f"{prefix}_segment_ids": x["segment_ids"].astype(np.int8),
        f"{prefix}_padding_mask": x["padding_mask"].astype(bool),
    }


def _check_vocabulary(tokenizer):
    if tokenizer.vocabulary_size() > np.iinfo(np.int16).max:
        raise ValueError(f"The vocabulary has {tokenizer.vocabulary_size()} tokens; int16 features hold 32,767.")


def _prefix(items, limit):
    return items if limit is None else items[:limit]


def prepare_mrpc(data_dir, tokenizer, recipe, max_train_examples, max_eval_examples):
    from keras_bert_impl.data.classification_data import classification_arrays, read_glue_examples
    from keras_bert_impl.data.label_vocabulary import LabelVocabulary
    from keras_bert_impl.preprocessing import BertPreprocessor

    train = _prefix(read_glue_examples("mrpc", os.path.join(data_dir, MRPC_TRAIN_FILE)), max_train_examples)
    test = _prefix(read_glue_examples("mrpc", os.path.join(data_dir, MRPC_TEST_FILE)), max_eval_examples)
    labels = LabelVocabulary(("0", "1"))
    arrays = {}
    for name, examples in (("train", train), ("test", test)):
        x, y = BertPreprocessor(tokenizer, recipe["sequence_length"])(*classification_arrays(examples, labels))
        arrays.update(_compact(x, name))
        arrays[f"{name}_labels"] = y.astype(np.int8)
    info = {"train_file": MRPC_TRAIN_FILE, "test_file": MRPC_TEST_FILE, "train_rows": len(train),
            "test_rows": len(test), "labels": list(labels.labels)}
    return arrays, {}, info


def squad_articles(data_dir, articles):
    """The SQuAD JSON object holding only the articles with the given indices."""
    from keras_bert_impl.squad.squad_reader import load_squad_json

    squad_json = load_squad_json(os.path.join(data_dir, SQUAD_FILE))
    return {**squad_json, "data": [squad_json["data"][index] for index in articles]}


def _limit_questions(squad_json, limit):
    """The first `limit` questions of `squad_json` (all when None), paragraphs kept whole otherwise."""
    if limit is None:
        return squad_json
    articles, left = [], limit
    for article in squad_json["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            if left <= 0:
                break
            qas = paragraph["qas"][:left]
            left -= len(qas)
            paragraphs.append({**paragraph, "qas": qas})
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    return {**squad_json, "data": articles}


def squad_split(data_dir, max_train_examples=None, max_eval_examples=None):
    """`{"train", "tune", "test"}` SQuAD JSON objects of the article split (the question limits apply)."""
    return {
        "train": _limit_questions(squad_articles(data_dir, SQUAD_TRAIN_ARTICLES), max_train_examples),
        "tune": _limit_questions(squad_articles(data_dir, SQUAD_TUNE_ARTICLES), max_eval_examples),
        "test": _limit_questions(squad_articles(data_dir, SQUAD_TEST_ARTICLES), max_eval_examples),
    }


def squad_features(split_json, name, tokenizer, recipe):
    """`(examples, SquadFeatures)` of one split (training features carry the span labels)."""
    from keras_bert_impl.preprocessing import convert_examples_to_features
    from keras_bert_impl.squad.squad_reader import parse_squad_examples

    is_training = name == "train"
    examples = parse_squad_examples(split_json, is_training=is_training, source=f"{SQUAD_FILE} ({name})")
    features = convert_examples_to_features(
        examples, tokenizer, sequence_length=recipe["sequence_length"], doc_stride=recipe["doc_stride"],
        max_query_length=recipe["max_query_length"], is_training=is_training,
    )
    return examples, features


def prepare_squad(data_dir, tokenizer, recipe, max_train_examples, max_eval_examples):
    arrays, decoding, info = {}, {}, {"file": SQUAD_FILE, "train_articles": list(SQUAD_TRAIN_ARTICLES),
                                      "tune_articles": list(SQUAD_TUNE_ARTICLES),
                                      "test_articles": list(SQUAD_TEST_ARTICLES)}
    for name, split_json in squad_split(data_dir, max_train_examples, max_eval_examples).items():
        examples, features = squad_features(split_json, name, tokenizer, recipe)
        arrays.update(_compact(features.inputs(), name))
        if name == "train":
            arrays["train_start_positions"] = features.start_positions.astype(np.int16)
            arrays["train_end_positions"] = features.end_positions.astype(np.int16)
        else:
            for field in ("example_index", "window_start", "token_char_starts", "token_char_ends",
                          "token_is_max_context"):
                decoding[f"{name}_{field}"] = getattr(features, field)
        info[f"{name}_questions"] = len(examples)
        info[f"{name}_rows"] = len(features)
    return arrays, decoding, info


def conll_tag_vocabulary(data_dir):
    """The IOB2 tag set of the whole CoNLL training file (the same whatever prefix is trained on)."""
    from keras_bert_impl.data.token_classification_data import read_conll_sentences, tag_vocabulary

    return tag_vocabulary(read_conll_sentences(os.path.join(data_dir, CONLL_TRAIN_FILE)))


def conll_features(data_dir, file_name, tokenizer, recipe, vocabulary, limit):
    """`(sentences, preprocessor, features)`: the first `limit` sentences of a CoNLL file, windowed with
    `BertTokenClassificationPreprocessor.featurize` (labels on each word's first token, -100 elsewhere)."""
    from keras_bert_impl.data.token_classification_data import encode_tags, read_conll_sentences
    from keras_bert_impl.preprocessing.token_classification_preprocessor import BertTokenClassificationPreprocessor

    sentences = _prefix(read_conll_sentences(os.path.join(data_dir, file_name)), limit)
    preprocessor = BertTokenClassificationPreprocessor(tokenizer, sequence_length=recipe["sequence_length"])
    features = preprocessor.featurize([list(sentence.words) for sentence in sentences],
                                      encode_tags(sentences, vocabulary))
    return sentences, preprocessor, features


def prepare_conll(data_dir, tokenizer, recipe, max_train_examples, max_eval_examples):
    vocabulary = conll_tag_vocabulary(data_dir)
    train_limit = min(recipe["train_sentences"], max_train_examples or recipe["train_sentences"])
    train, _, train_features = conll_features(data_dir, CONLL_TRAIN_FILE, tokenizer, recipe, vocabulary,
                                              train_limit)
    test, _, test_features = conll_features(data_dir, CONLL_TEST_FILE, tokenizer, recipe, vocabulary,
                                            max_eval_examples)
    arrays = {**_compact(train_features["inputs"], "train"), **_compact(test_features["inputs"], "test"),
              "train_labels": train_features["labels"].astype(np.int8),
              # The positions the entity decoder reads: each word's first token.
              "test_word_mask": test_features["word_index"] >= 0}
    info = {"train_file": CONLL_TRAIN_FILE, "test_file": CONLL_TEST_FILE, "train_sentences": len(train),
            "train_rows": len(train_features["labels"]), "test_sentences": len(test),
            "test_rows": len(test_features["word_index"]), "labels": list(vocabulary.labels)}
    return arrays, {}, info


PREPARERS = {"mrpc": prepare_mrpc, "squad": prepare_squad, "conll": prepare_conll}


def write_checkpoint(source, target, dtype):
    """Copy the Hugging Face checkpoint's config, vocabulary and weights (cast to `dtype`) into `target`."""
    import shutil

    from safetensors.numpy import load_file, save_file

    os.makedirs(target, exist_ok=True)
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        if os.path.isfile(os.path.join(source, name)):
            shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
    tensors = load_file(os.path.join(source, "model.safetensors"))
    tensors = {name: value.astype(dtype) if value.dtype.kind == "f" else value for name, value in tensors.items()}
    with atomic_path(os.path.join(target, "model.safetensors")) as partial:
        save_file(tensors, partial)


def save_npz(path, arrays):
    with atomic_write(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def training_token_slots(padding_mask, bucket_width=BUCKET_WIDTH):
    """How much of a training epoch padded to T is real tokens, and what length bucketing leaves to compute."""
    from keras_bert_impl.data.length_bucketing import bucket_padded_lengths, sequence_lengths

    lengths = sequence_lengths(padding_mask)
    padded = padding_mask.size
    bucketed = int(bucket_padded_lengths(lengths, padding_mask.shape[1], bucket_width).sum())
    return (f"{padded:,} padded to {padding_mask.shape[1]}; real tokens {lengths.sum() / padded:.1%} of them "
            f"(mean length {lengths.mean():.1f}); length-bucketed (width {bucket_width}) {bucketed / padded:.1%}")


def prepare(data_dir, features_dir, checkpoint, tasks=TASKS, checkpoint_dtype="float32", max_train_examples=None,
            max_eval_examples=None, epochs=None):
    """Write the features of `tasks` and the checkpoint copy into `features_dir`; returns the metadata."""
    from keras_bert_impl.tokenization import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    _check_vocabulary(tokenizer)
    os.makedirs(features_dir, exist_ok=True)
    write_checkpoint(checkpoint, os.path.join(features_dir, "checkpoint"), checkpoint_dtype)
    meta = {
        "checkpoint_source": os.path.abspath(checkpoint),
        "checkpoint_dtype": checkpoint_dtype,
        "max_train_examples": max_train_examples,
        "max_eval_examples": max_eval_examples,
        "note": "both implementations train and predict on these features (our tokenizer and featurizers); "
                "tokenizer agreement with Hugging Face: benchmarks/tokenizer_agreement.py",
        "tasks": {},
    }
    if os.path.isfile(os.path.join(features_dir, "meta.json")):  # adding tasks to a features folder
        earlier = load_meta(features_dir)
        changed = [key for key in meta if key != "tasks" and earlier.get(key) != meta[key]]
        if changed:
            raise ValueError(
                f"{features_dir} holds features prepared with other settings ({', '.join(changed)}: "
                f"{[earlier.get(key) for key in changed]} there); prepare into another --features-dir."
            )
        meta["tasks"] = earlier["tasks"]
    for task in tasks:
        recipe = dict(RECIPES[task])
        if epochs is not None:
            recipe["epochs"] = epochs
        arrays, decoding, info = PREPARERS[task](data_dir, tokenizer, recipe, max_train_examples,
                                                  max_eval_examples)
        if "labels" in info:
            recipe["num_labels"] = len(info["labels"])
        save_npz(os.path.join(features_dir, f"{task}.npz"), arrays)
        if decoding:
            save_npz(os.path.join(features_dir, f"{task}_decoding.npz"), decoding)
        meta["tasks"][task] = {"recipe": recipe, **info}
        print(f"prepared {task}: " + ", ".join(f"{key} {value}" for key, value in info.items()
                                                if key.endswith(("rows", "questions", "sentences"))), flush=True)
        print(f"  {task} training token slots: {training_token_slots(arrays['train_padding_mask'])}", flush=True)
    atomic_write_json(os.path.join(features_dir, "meta.json"), meta)
    return meta


def load_meta(features_dir):
    path = os.path.join(features_dir, "meta.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} is missing: run `benchmarks/real_tasks.py prepare` first.")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
