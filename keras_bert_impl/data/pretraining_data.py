"""BERT pretraining data: text -> NSP sentence pairs -> masked batches, streamed or written to TFRecords.

TensorFlow at the data edge: this module builds `tf.data` pipelines and reads and writes TFRecord files.

The instance algorithm is the original `create_pretraining_data.py` (Devlin et al., 2018, section 3.1 and
appendix A.2), draw for draw with one `random.Random(seed)`:
- documents are shuffled; `max_num_tokens = max_seq_length - 3`; per document the target length is
  `max_num_tokens`, or with probability `short_seq_prob` `randint(2, max_num_tokens)`;
- sentences accumulate into a chunk until the target is reached or the document ends; segment A takes
  `randint(1, len(chunk) - 1)` sentences (all of a one-sentence chunk);
- with probability 0.5, or always for a one-sentence chunk, B is "random next": read from a random start in
  another document (up to 10 tries to draw a different one; a one-document corpus reuses itself, as the
  original does) until the target is filled, and the chunk's unused sentences are put back; otherwise B is
  the rest of the chunk;
- the pair is truncated by `truncate_pair(..., "random_front_back", rng)`; layout `[CLS] A [SEP] B [SEP]`;
- `dupe_factor` passes over the documents; the writer shuffles all instances at the end, as the original.
One deviation: the original draws its masks from the same `rng` while it builds instances; here masking is
`MaskedLMMasker`'s own stateless randomness, so the instances do not depend on the masking settings.

Every packing and masking setting (instance length, mask rate, predictions per sequence, counting rule,
whole-word masking, 80/10/10 rates) comes from one `preprocessing.BertPretrainingPreprocessor`, which
`pretraining_dataset` and `write_pretraining_tfrecords` take; `write_pretraining_settings` records it beside
TFRecord shards and `read_pretraining_settings` reads it back. (The instance stream truncates pairs with
the original's `rng`, "random_front_back", whatever the preprocessor's `truncation`, which applies to the
text pairs it packs itself.)

Input text formats (UTF-8):
- `"sentence_per_line"` (the original's): one sentence per line, a blank line between documents.
- `"document_per_line"`: one document per line, split into sentences by `split_sentences`.
Sentences that tokenize to nothing and empty documents are dropped. Bytes that are not valid UTF-8 raise a
`ValueError` naming the file and line, unless `errors="replace"`: then they become U+FFFD, which the
tokenizer deletes (as the original's text cleaning does).

TFRecord features (the original's names, so files interchange with `run_pretraining.py`), every record
padded to `max_seq_length`: `input_ids`, `input_mask`, `segment_ids` (int64 `[max_seq_length]`),
`next_sentence_labels` (int64 `[1]`, 0 = IsNext, 1 = random next), and with static masking
`masked_lm_positions`, `masked_lm_ids` (int64 `[max_predictions_per_seq]`), `masked_lm_weights` (float
`[max_predictions_per_seq]`).
"""

import glob
import json
import logging
import os
import random
import re

import numpy as np
import tensorflow as tf

from keras_bert_impl.data.masking import mask_dataset
from keras_bert_impl.data.packing import truncate_pair
from keras_bert_impl.utils.atomic_io import atomic_path

logger = logging.getLogger(__name__)

INPUT_FORMATS = ("sentence_per_line", "document_per_line")
MASKING_MODES = ("static", "dynamic")
_MASKING_BATCH = 256  # instances masked together when writing static masks

_SENTENCE_BOUNDARY = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*")
_CJK_SENTENCE_MARKS = "\u3002\uff01\uff1f"
_OPENERS = "\"'\u201c\u2018(["
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e cf al fig no vol ed approx dept est inc ltd co corp gen gov "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)


def split_sentences(text):
    """Split a document into sentences with a small rule-based splitter.

    A sentence ends at `.`, `!` or `?` (one or more, with any closing quotes or brackets after them) when
    whitespace and then a letter that is not lowercase (uppercase, or from a caseless script such as CJK)
    or a digit follow (optionally behind an opening quote or bracket), unless the `.` ends a common
    abbreviation ("Mr.", "e.g.", "etc.", month names, ...) or a single capital letter (an initial:
    "J. Smith"). The CJK marks `。！？` end a sentence wherever they stand. It is
    meant for BERT's sentence pairs, where an occasional wrong split only shifts a chunk boundary; use a
    trained splitter and the `"sentence_per_line"` format when precision matters.

    Args:
        text: str. One document.

    Returns:
        list of str, the stripped non-empty sentences.

    Example:
    >>> split_sentences("Dr. Smith arrived. He sat down! Was it 5 p.m.? 2 more came.")
    ['Dr. Smith arrived.', 'He sat down!', 'Was it 5 p.m.?', '2 more came.']
    """
    sentences = []
    start = 0
    for match in _SENTENCE_BOUNDARY.finditer(text):
        if not any(mark in match.group() for mark in _CJK_SENTENCE_MARKS):
            following = text[match.end() :]
            if not following[:1].isspace():
                continue
            following = following.lstrip()
            head = following[1:2] if following[:1] in _OPENERS else following[:1]
            if not (head.isdigit() or (head.isalpha() and not head.islower())):
                continue
            if match.group()[0] == "." and _ends_with_abbreviation(text[start : match.start()]):
                continue
        sentence = text[start : match.end()].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _ends_with_abbreviation(text):
    words = text.split()
    if not words:
        return False
    word = words[-1].lstrip(_OPENERS)
    return word.lower() in _ABBREVIATIONS or (len(word) == 1 and word.isupper())


def _expand_paths(files):
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    expanded = []
    for path in paths:
        path = os.fspath(path)
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches:
            raise FileNotFoundError(f"No input file matches {path!r}.")
        expanded.extend(matches)
    if not expanded:
        raise ValueError("No input files given.")
    return expanded


def _decoded_lines(path, errors):
    with open(path, "rb") as handle:
        for line_number, raw in enumerate(handle, start=1):
            try:
                yield raw.decode("utf-8", errors=errors)
            except UnicodeDecodeError as error:
                bad = raw[error.start : error.end]
                raise ValueError(
                    f"{path}, line {line_number}: bytes {bad!r} at byte {error.start} of the line are not valid "
                    "UTF-8. Convert the file to UTF-8, or pass errors='replace' to substitute U+FFFD (which the "
                    "tokenizer then drops)."
                ) from None


def read_documents(files, input_format="sentence_per_line", errors="strict"):
    """Read text files into documents, each a list of sentence strings.

    Args:
        files: str or list of str. Paths (glob patterns allowed) of UTF-8 text files, read in order.
        input_format: str. `"sentence_per_line"` (blank lines between documents) or `"document_per_line"`.
            Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` raises on bytes that are not UTF-8, naming file and line; `"replace"` turns
            them into U+FFFD. Defaults to `"strict"`.

    Returns:
        list of documents (list of list of str), empty documents removed.

    Example:
    >>> import tempfile
    >>> path = tempfile.mktemp()
    >>> with open(path, "w") as f:
    ...     _ = f.write("First one.\\nSecond one.\\n\\nOther doc.\\n")
    >>> read_documents(path)
    [['First one.', 'Second one.'], ['Other doc.']]
    """
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"input_format must be one of {INPUT_FORMATS}, got {input_format!r}.")
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', got {errors!r}.")
    documents = [[]]
    for path in _expand_paths(files):
        for line in _decoded_lines(path, errors):
            line = line.strip()
            if input_format == "document_per_line":
                documents.append(split_sentences(line))
            elif not line:
                documents.append([])
            else:
                documents[-1].append(line)
        if input_format == "sentence_per_line":
            documents.append([])  # a file ends its last document
    return [document for document in documents if document]


def _as_sentence_documents(documents):
    """Documents given in memory: a str is split with `split_sentences`, a list is taken as its sentences."""
    sentence_documents = []
    for index, document in enumerate(documents):
        if isinstance(document, str):
            sentence_documents.append(split_sentences(document))
        elif isinstance(document, (list, tuple)) and all(isinstance(s, str) for s in document):
            sentence_documents.append([s for s in document if s.strip()])
        else:
            raise TypeError(f"Document {index} is {type(document).__name__}; expected a str or a list of str.")
    return [document for document in sentence_documents if document]


def tokenize_documents(documents, tokenizer):
    """Tokenize sentence documents into id documents, dropping sentences with no tokens and empty documents.

    Args:
        documents: list of list of str. Sentences per document.
        tokenizer: BertTokenizer. Anything with `tokenize(list[str]) -> list[list[int]]`.

    Returns:
        list of documents, each a list of sentences as lists of int ids.
    """
    sentences = [sentence for document in documents for sentence in document]
    ids = tokenizer.tokenize(sentences) if sentences else []
    tokenized, cursor = [], 0
    for document in documents:
        sentence_ids = [list(map(int, s)) for s in ids[cursor : cursor + len(document)]]
        cursor += len(document)
        sentence_ids = [s for s in sentence_ids if s]
        if sentence_ids:
            tokenized.append(sentence_ids)
    return tokenized


def _check_instance_settings(max_seq_length, short_seq_prob, dupe_factor):
    if int(max_seq_length) < 5:
        raise ValueError(f"max_seq_length must be at least 5 ([CLS] a [SEP] b [SEP]), got {max_seq_length}.")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob must be in [0, 1], got {short_seq_prob}.")
    if int(dupe_factor) < 1:
        raise ValueError(f"dupe_factor must be >= 1, got {dupe_factor}.")


# Names the pretraining functions used to take for what is now a `BertPretrainingPreprocessor` setting.
_SETTING_ALIASES = {"seq_length": "sequence_length", "max_seq_length": "sequence_length"}


def as_pretraining_preprocessor(preprocessor, settings=None, caller="pretraining data"):
    """The `BertPretrainingPreprocessor` that holds every packing and masking setting of a pretraining run.

    Args:
        preprocessor: a `BertPretrainingPreprocessor` (used as is), or a `BertTokenizer`: a preprocessor on it
            with `settings` (and defaults for the rest) is built.
        settings: dict or None. `BertPretrainingPreprocessor` arguments (`sequence_length`, `mask_rate`,
            `max_predictions_per_seq`, ...; `seq_length` / `max_seq_length` are read as `sequence_length`). Only
            with a tokenizer: a preprocessor already owns its settings. Defaults to None.
        caller: str. Names the function in error messages.

    Returns:
        `BertPretrainingPreprocessor`.
    """
    from keras_bert_impl.preprocessing.pretraining_preprocessor import BertPretrainingPreprocessor

    settings = dict(settings or {})
    if isinstance(preprocessor, BertPretrainingPreprocessor):
        if settings:
            raise TypeError(
                f"{caller}: the preprocessor owns the packing and masking settings; got {sorted(settings)} "
                "besides it. Build the BertPretrainingPreprocessor with them instead."
            )
        return preprocessor
    if not hasattr(preprocessor, "cls_token_id"):
        raise TypeError(
            f"{caller} takes a BertPretrainingPreprocessor (or a BertTokenizer and its settings), got "
            f"{type(preprocessor).__name__}."
        )
    for old, new in _SETTING_ALIASES.items():
        if old in settings:
            if new in settings:
                raise TypeError(f"{caller}: give {new} or {old}, not both.")
            settings[new] = settings.pop(old)
    return BertPretrainingPreprocessor(preprocessor, **settings)


def instances_from_document(documents, document_index, max_seq_length, short_seq_prob, rng):
    """The original `create_instances_from_document`: NSP pairs from one document.

    Args:
        documents: list of documents of id sentences (see `tokenize_documents`), non-empty.
        document_index: int. The document to cut into pairs.
        max_seq_length: int. Packed length including `[CLS]` and two `[SEP]`.
        short_seq_prob: float. Probability of a shorter random target length for this document.
        rng: random.Random. The shared random source.

    Returns:
        list of `(tokens_a, tokens_b, is_random_next)`, the segments already truncated.
    """
    document = documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk, current_length = [], 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            a_end = 1
            if len(current_chunk) >= 2:
                a_end = rng.randint(1, len(current_chunk) - 1)
            tokens_a = [token for sentence in current_chunk[:a_end] for token in sentence]
            tokens_b = []
            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                for _ in range(10):
                    random_document_index = rng.randint(0, len(documents) - 1)
                    if random_document_index != document_index:
                        break
                random_document = documents[random_document_index]
                random_start = rng.randint(0, len(random_document) - 1)
                for sentence in random_document[random_start:]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                # The chunk's sentences after A were not used: put them back for the next chunk.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                tokens_b = [token for sentence in current_chunk[a_end:] for token in sentence]
            tokens_a, tokens_b = truncate_pair(tokens_a, tokens_b, max_num_tokens, "random_front_back", rng)
            instances.append((tokens_a, tokens_b, is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def iterate_pretraining_instances(
    documents, cls_token_id, sep_token_id, max_seq_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345
):
    """Yield packed NSP instances in creation order (documents shuffled, `dupe_factor` passes).

    Args:
        documents: list of documents of id sentences (see `tokenize_documents`).
        cls_token_id: int. Id of `[CLS]`.
        sep_token_id: int. Id of `[SEP]`.
        max_seq_length: int. Longest packed instance. Defaults to 128.
        short_seq_prob: float. Probability of a short target length per document. Defaults to 0.1.
        dupe_factor: int. Passes over the documents. Defaults to 1.
        seed: int. Seed of the `random.Random` that makes every choice. Defaults to 12345 (the original's).

    Yields:
        dicts of `"token_ids"` (list of int, at most `max_seq_length`), `"segment_ids"` (list of int) and
        `"next_sentence_labels"` (int, 0 = IsNext, 1 = random next).
    """
    _check_instance_settings(max_seq_length, short_seq_prob, dupe_factor)
    documents = [document for document in documents if document]
    rng = random.Random(seed)
    rng.shuffle(documents)
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            for tokens_a, tokens_b, is_random_next in instances_from_document(
                documents, document_index, max_seq_length, short_seq_prob, rng
            ):
                yield {
                    "token_ids": [cls_token_id, *tokens_a, sep_token_id, *tokens_b, sep_token_id],
                    "segment_ids": [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1),
                    "next_sentence_labels": int(is_random_next),
                }


_INSTANCE_SIGNATURE = {
    "token_ids": tf.TensorSpec([None], tf.int32),
    "segment_ids": tf.TensorSpec([None], tf.int32),
    "next_sentence_labels": tf.TensorSpec([], tf.int32),
}


def pretraining_instances_dataset(
    documents, cls_token_id, sep_token_id, max_seq_length=128, short_seq_prob=0.1, dupe_factor=1, seed=12345
):
    """A streaming `tf.data.Dataset` of unmasked NSP instances (see `iterate_pretraining_instances`).

    The id documents stay in memory (random-next segments are drawn from any document); the instances are
    made lazily, the same ones on every pass over the dataset.

    Returns:
        tf.data.Dataset of dicts: `"token_ids"` int32 `(None,)`, `"segment_ids"` int32 `(None,)`,
        `"next_sentence_labels"` int32 `()`.
    """
    _check_instance_settings(max_seq_length, short_seq_prob, dupe_factor)
    documents = [document for document in documents if document]
    if not documents:
        raise ValueError("No documents with tokens: the input is empty after dropping empty lines and documents.")

    def generate():
        yield from iterate_pretraining_instances(
            documents, cls_token_id, sep_token_id, max_seq_length, short_seq_prob, dupe_factor, seed
        )

    return tf.data.Dataset.from_generator(generate, output_signature=_INSTANCE_SIGNATURE)


def _pad_rows(rows, width, dtype=np.int64):
    padded = np.zeros((len(rows), width), dtype)
    for index, row in enumerate(rows):
        padded[index, : len(row)] = row
    return padded


def _int64_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _serialized_records(instances, max_seq_length, preprocessor, seed):
    """Serialize instances, masking them (with `preprocessor`, unless None) in fixed-size groups (each group's
    stateless seed: `[seed, group]`)."""
    for group_index, group_start in enumerate(range(0, len(instances), _MASKING_BATCH)):
        group = instances[group_start : group_start + _MASKING_BATCH]
        token_ids = _pad_rows([instance["token_ids"] for instance in group], max_seq_length)
        segment_ids = _pad_rows([instance["segment_ids"] for instance in group], max_seq_length)
        input_mask = _pad_rows([[1] * len(instance["token_ids"]) for instance in group], max_seq_length)
        masked = None
        if preprocessor is not None:
            masked = preprocessor.mask(
                {"token_ids": tf.constant(token_ids, tf.int32), "padding_mask": tf.constant(input_mask, tf.bool)},
                seed=tf.constant([seed, group_index], tf.int64),
            )
            masked = {key: value.numpy() for key, value in masked.items()}
            token_ids = masked["token_ids"]
        for row, instance in enumerate(group):
            features = {
                "input_ids": _int64_feature(token_ids[row]),
                "input_mask": _int64_feature(input_mask[row]),
                "segment_ids": _int64_feature(segment_ids[row]),
                "next_sentence_labels": _int64_feature([instance["next_sentence_labels"]]),
            }
            if masked is not None:
                features["masked_lm_positions"] = _int64_feature(masked["mask_positions"][row])
                features["masked_lm_ids"] = _int64_feature(masked["mask_ids"][row])
                features["masked_lm_weights"] = _float_feature(masked["mask_weights"][row])
            yield tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _write_shard_atomically(path, records):
    """Write a TFRecord file under a temporary name in the same folder, fsync it, then rename it into place
    (`utils.atomic_io.atomic_path`): a crash leaves the previous shard, never a truncated one."""
    with atomic_path(path) as temporary:
        with tf.io.TFRecordWriter(temporary) as writer:
            for record in records:
                writer.write(record)


def write_pretraining_tfrecords(
    input_files,
    output_prefix,
    preprocessor,
    num_shards=1,
    masking="static",
    dupe_factor=10,
    short_seq_prob=0.1,
    input_format="sentence_per_line",
    errors="strict",
    seed=12345,
    **preprocessor_settings,
):
    """The `create_pretraining_data.py` equivalent: text files to sharded TFRecord files of instances.

    All instances are made (`dupe_factor` passes), shuffled, and dealt round-robin over the shards as the
    original does. Each shard is written under a temporary name and renamed into place when complete.
    `write_pretraining_settings` records the preprocessor's settings beside the shards (`keras-bert
    create-data` does), so that training reads them back.

    Args:
        input_files: str or list of str. Text files (glob patterns allowed), see the module docstring.
        output_prefix: str. Shards are named `{output_prefix}-{index:05d}-of-{num_shards:05d}.tfrecord`.
        preprocessor: `BertPretrainingPreprocessor`: its tokenizer tokenizes the sentences, its
            `sequence_length` is the record length, and with static masking its masker (`mask_rate`,
            `max_predictions_per_seq`, counting, whole-word masking, ...) writes the masks. A `BertTokenizer`
            is accepted too, with the preprocessor's settings as keyword arguments (`max_seq_length` read as
            `sequence_length`).
        num_shards: int. Number of output files. Defaults to 1.
        masking: str. `"static"` writes masks (each pass of `dupe_factor` gets its own); `"dynamic"` writes
            unmasked instances for `read_pretraining_tfrecords(..., masker=...)`. Defaults to `"static"`.
        dupe_factor: int. Passes over the corpus. Defaults to 10 (the original's).
        short_seq_prob: float. See the module docstring. Defaults to 0.1.
        input_format: str. `"sentence_per_line"` or `"document_per_line"`. Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` or `"replace"` for bytes that are not UTF-8. Defaults to `"strict"`.
        seed: int. Seed of instance creation, the final shuffle and the masks. Defaults to 12345.
        **preprocessor_settings: with a tokenizer only, the `BertPretrainingPreprocessor` arguments.

    Returns:
        list of str, the shard paths written.
    """
    preprocessor = as_pretraining_preprocessor(preprocessor, preprocessor_settings, "write_pretraining_tfrecords")
    tokenizer, max_seq_length = preprocessor.tokenizer, preprocessor.sequence_length
    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    if int(num_shards) < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}.")
    _check_instance_settings(max_seq_length, short_seq_prob, dupe_factor)
    documents = tokenize_documents(read_documents(input_files, input_format, errors), tokenizer)
    if not documents:
        raise ValueError(f"No documents with tokens in {input_files!r}.")
    instances = list(
        iterate_pretraining_instances(
            documents,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            max_seq_length,
            short_seq_prob,
            dupe_factor,
            seed,
        )
    )
    random.Random(seed + 1).shuffle(instances)
    paths = [f"{output_prefix}-{index:05d}-of-{num_shards:05d}.tfrecord" for index in range(num_shards)]
    for shard_index, path in enumerate(paths):
        shard = instances[shard_index::num_shards]
        # Each shard masks with its own seed stream, so a shard's masks do not depend on the shard count.
        _write_shard_atomically(
            path,
            _serialized_records(shard, max_seq_length, preprocessor if masking == "static" else None, seed + shard_index),
        )
        logger.info("Wrote %d instances to %s.", len(shard), path)
    return paths


SETTINGS_SUFFIX = ".settings.json"
_SHARD_NAME = re.compile(r"^(.*)-\d{5}-of-\d{5}\.tfrecord$")
_SETTINGS_FORMAT = "keras_bert_impl.pretraining_tfrecords"


def pretraining_settings_path(output_prefix):
    """The settings file of the shards `{output_prefix}-*-of-*.tfrecord`: `{output_prefix}.settings.json`
    (a name the shards' glob `{output_prefix}-*` does not match)."""
    return os.fspath(output_prefix) + SETTINGS_SUFFIX


def write_pretraining_settings(output_prefix, preprocessor, masking, **details):
    """Record beside the shards of `output_prefix` how they were made, written atomically.

    The JSON holds `masking` (`"static"` / `"dynamic"`), `preprocessor` (`BertPretrainingPreprocessor.settings()`:
    the record length and every masking setting), `vocabulary_size`, and `details` (e.g. `dupe_factor`,
    `seed`). `read_pretraining_settings` reads it back from the shards' paths.

    Returns:
        str, the path written.
    """
    from keras_bert_impl.utils.atomic_io import atomic_write_json

    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    path = pretraining_settings_path(output_prefix)
    atomic_write_json(path, {
        "format": _SETTINGS_FORMAT,
        "masking": masking,
        "preprocessor": preprocessor.settings(),
        "vocabulary_size": preprocessor.tokenizer.vocabulary_size(),
        **details,
    })
    return path


def read_pretraining_settings(file_pattern):
    """The settings `write_pretraining_settings` recorded for the TFRecord shards `file_pattern` names.

    Args:
        file_pattern: str or list of str. Shard paths or glob patterns, as `read_pretraining_tfrecords` takes.

    Returns:
        dict (the JSON, with `"path"`, the file it came from), or None when the shards have no settings file
        (records of the original `create_pretraining_data.py`, or written by the library alone). Shards of
        several prefixes whose settings differ raise `ValueError`.
    """
    found = {}
    for path in _expand_paths(file_pattern):
        match = _SHARD_NAME.match(path)
        candidate = path if path.endswith(SETTINGS_SUFFIX) else (
            pretraining_settings_path(match.group(1)) if match else None)
        if candidate is not None and candidate not in found and os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as handle:
                try:
                    document = json.load(handle)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{candidate}: malformed settings JSON ({error}).") from None
            if not isinstance(document, dict) or document.get("format") != _SETTINGS_FORMAT:
                raise ValueError(f"{candidate} is not a pretraining settings file (no format {_SETTINGS_FORMAT!r}).")
            found[candidate] = document
    if not found:
        return None
    (first_path, first), *others = found.items()
    for path, document in others:
        if document != first:
            raise ValueError(
                f"The TFRecords {file_pattern!r} were written with different settings ({first_path} and {path}); "
                "read them separately."
            )
    return {**first, "path": first_path}


def _record_features(max_seq_length, max_predictions_per_seq, static):
    features = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    if static:
        features.update(
            masked_lm_positions=tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
            masked_lm_ids=tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
            masked_lm_weights=tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        )
    return features


def _check_record_layout(path, max_seq_length, max_predictions_per_seq, static):
    """Compare the first record of `path` with the expected layout, so a mismatch is named, not a parse error."""
    first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    if first is None:
        raise ValueError(f"{path} holds no records.")
    feature = tf.train.Example.FromString(first.numpy()).features.feature
    expected = {"input_ids": max_seq_length, "input_mask": max_seq_length, "segment_ids": max_seq_length}
    if static:
        expected.update(masked_lm_positions=max_predictions_per_seq, masked_lm_ids=max_predictions_per_seq)
    for name, length in expected.items():
        if name not in feature:
            hint = " (unmasked records need `masker=` for dynamic masking)" if name.startswith("masked_lm") else ""
            raise ValueError(f"{path}: records have no {name!r} feature{hint}.")
        found = len(feature[name].int64_list.value)
        if found != length:
            raise ValueError(
                f"{path}: feature {name!r} has length {found}, expected {length}; pass the max_seq_length / "
                "max_predictions_per_seq the records were written with."
            )


def to_inputs_and_targets(features):
    """Split masked features into the `(x, y)` structure `BertPretrainer.fit` takes (README.md, "Data formats")."""
    x = {
        "token_ids": tf.cast(features["token_ids"], tf.int32),
        "segment_ids": tf.cast(features["segment_ids"], tf.int32),
        "padding_mask": tf.cast(features["padding_mask"], tf.bool),
        "mask_positions": tf.cast(features["mask_positions"], tf.int32),
    }
    y = {
        "mask_ids": tf.cast(features["mask_ids"], tf.int32),
        "mask_weights": tf.cast(features["mask_weights"], tf.float32),
        "next_sentence_labels": tf.cast(tf.reshape(features["next_sentence_labels"], [-1]), tf.int32),
    }
    return x, y


def read_pretraining_tfrecords(
    file_pattern,
    batch_size,
    max_seq_length=128,
    max_predictions_per_seq=20,
    masker=None,
    shuffle=True,
    shuffle_buffer_size=10000,
    drop_remainder=True,
    seed=12345,
    vocabulary_size=None,
):
    """Read TFRecord shards (ours or the original's) into batches of `(x, y)` for `BertPretrainer.fit`.

    Args:
        file_pattern: str or list of str. Shard paths or glob patterns.
        batch_size: int. Batch size `B`.
        max_seq_length: int. `T`, the records' length. Defaults to 128.
        max_predictions_per_seq: int. `P` of statically masked records. Defaults to 20.
        masker: MaskedLMMasker, BertPretrainingPreprocessor (its masker) or None. None reads the masks stored
            in the records (static); a masker masks unmasked records anew every epoch (dynamic). Defaults to
            None.
        shuffle: bool. Shuffle shard order and records (reshuffled each epoch, reproducibly under `seed`).
            Defaults to True.
        shuffle_buffer_size: int. Records in the shuffle buffer. Defaults to 10000.
        drop_remainder: bool. Drop a last partial batch. Defaults to True.
        seed: int. Seed of the shuffles and the dynamic masks. Defaults to 12345.
        vocabulary_size: int or None. The model's vocabulary size: every batch's `input_ids` (and
            `masked_lm_ids`) are checked to lie in `[0, vocabulary_size)`, and iterating a batch that does not
            raises `tf.errors.InvalidArgumentError` naming the field, the id and the limit (records written with
            another, larger vocabulary would otherwise gather garbage embeddings). None: no check. Defaults to
            None.

    Returns:
        tf.data.Dataset of `(x, y)`: x `{"token_ids", "segment_ids", "padding_mask", "mask_positions"}`, y
        `{"mask_ids", "mask_weights", "next_sentence_labels"}` with the dtypes and shapes of README.md, "Data formats".
    """
    if vocabulary_size is not None and (not isinstance(vocabulary_size, (int, np.integer))
                                        or isinstance(vocabulary_size, bool) or vocabulary_size < 1):
        raise ValueError(f"vocabulary_size must be a positive integer or None, got {vocabulary_size!r}.")
    files = [path for path in _expand_paths(file_pattern) if not path.endswith(SETTINGS_SUFFIX)]
    if not files:
        raise ValueError(f"No TFRecord shards in {file_pattern!r}.")
    masker = getattr(masker, "masker", masker)  # a BertPretrainingPreprocessor masks with its masker
    _check_record_layout(files[0], max_seq_length, max_predictions_per_seq, static=masker is None)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset, cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    features = _record_features(max_seq_length, max_predictions_per_seq, static=masker is None)

    def parse(serialized):
        record = tf.io.parse_example(serialized, features)
        if vocabulary_size is not None:
            checked = ["input_ids"] + (["masked_lm_ids"] if masker is None else [])
            record = _check_token_ids(record, checked, int(vocabulary_size), file_pattern)
        parsed = {
            "token_ids": record["input_ids"],
            "segment_ids": record["segment_ids"],
            "padding_mask": tf.cast(record["input_mask"], tf.bool),
            "next_sentence_labels": record["next_sentence_labels"],
        }
        if masker is None:
            parsed.update(
                mask_positions=record["masked_lm_positions"],
                mask_ids=record["masked_lm_ids"],
                mask_weights=record["masked_lm_weights"],
            )
        return parsed

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if masker is not None:
        dataset = mask_dataset(dataset.map(_cast_token_ids), masker, seed=seed, new_masks_each_epoch=True)
    return dataset.map(to_inputs_and_targets, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def _check_token_ids(record, names, vocabulary_size, file_pattern):
    """`record` with its `names` fields checked to hold ids in `[0, vocabulary_size)` (one min and max each)."""
    checks = []
    for name in names:
        ids = record[name]
        where = f"TFRecords {file_pattern}: feature {name}"
        checks.append(tf.debugging.assert_less(
            tf.reduce_max(ids, name=f"largest_{name}"), tf.constant(vocabulary_size, ids.dtype, name="vocabulary_size"),
            message=f"{where} holds a token id >= vocabulary_size {vocabulary_size} (the records were written with "
                    f"another vocabulary; ids must be in [0, {vocabulary_size}))",
            summarize=1,
        ))
        checks.append(tf.debugging.assert_non_negative(
            tf.reduce_min(ids, name=f"smallest_{name}"),
            message=f"{where} holds a negative token id (ids must be in [0, {vocabulary_size}))",
            summarize=1,
        ))
    with tf.control_dependencies(checks):
        return {key: tf.identity(value) if key in names else value for key, value in record.items()}


def _with_padding_mask(instance):
    return {**instance, "padding_mask": tf.ones_like(instance["token_ids"], tf.bool)}


def _cast_token_ids(features):
    return {**features, "token_ids": tf.cast(features["token_ids"], tf.int32)}


def pretraining_dataset(
    preprocessor,
    files=None,
    documents=None,
    batch_size=32,
    masking="dynamic",
    seed=12345,
    short_seq_prob=0.1,
    dupe_factor=1,
    padding="fixed",
    input_format="sentence_per_line",
    errors="strict",
    shuffle_buffer_size=10000,
    drop_remainder=False,
    **preprocessor_settings,
):
    """Text to batched, prefetched `(x, y)` pretraining batches, ready for `BertPretrainer.fit`.

    Reads and tokenizes the text once, then streams NSP instances (`pretraining_instances_dataset`, up to
    the preprocessor's `sequence_length`), shuffles them, pads them into batches, and masks them with the
    preprocessor's masker (`BertPretrainingPreprocessor.mask_dataset`): `"dynamic"` draws new masks every
    epoch (reproducible under `seed`), `"static"` masks every instance once and keeps the mask across epochs.
    Works under every Keras backend: the elements are plain dicts of tensors, which Keras converts for JAX
    and torch.

    Args:
        preprocessor: `BertPretrainingPreprocessor`, the source of the tokenizer, the instance length
            (`sequence_length`) and every masking setting. A `BertTokenizer` is accepted too, with the
            preprocessor's settings as keyword arguments (`seq_length` read as `sequence_length`).
        files: str or list of str. Text files, see the module docstring. Give this or `documents`.
        documents: list. In-memory documents, each a str (split with `split_sentences`) or a list of
            sentence strings.
        batch_size: int. `B`. Defaults to 32.
        masking: str. `"dynamic"` or `"static"`. Defaults to `"dynamic"`.
        seed: int. Seed of instance creation, shuffling and masks. Defaults to 12345.
        short_seq_prob: float. Defaults to 0.1.
        dupe_factor: int. Passes over the documents per epoch. Defaults to 1.
        padding: str. `"fixed"` pads to `sequence_length`; `"dynamic"` to the longest instance of the batch.
            Defaults to `"fixed"`.
        input_format: str. For `files`. Defaults to `"sentence_per_line"`.
        errors: str. `"strict"` or `"replace"`, for `files`. Defaults to `"strict"`.
        shuffle_buffer_size: int. Instances in the shuffle buffer (0 turns shuffling off). Defaults to 10000.
        drop_remainder: bool. Drop a last partial batch. Defaults to False.
        **preprocessor_settings: with a tokenizer only, the `BertPretrainingPreprocessor` arguments.

    Returns:
        tf.data.Dataset of `(x, y)` as in README.md ("Data formats", pretraining batches).

    Example:
    >>> from keras_bert_impl.preprocessing import BertPretrainingPreprocessor
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "."])
    >>> preprocessor = BertPretrainingPreprocessor(tokenizer, sequence_length=16, max_predictions_per_seq=4)
    >>> ds = pretraining_dataset(preprocessor, documents=["a b. C a.", "b c. A b c."], batch_size=2)
    >>> x, y = next(iter(ds))
    >>> x["token_ids"].shape, y["mask_ids"].shape
    (TensorShape([2, 16]), TensorShape([2, 4]))
    """
    preprocessor = as_pretraining_preprocessor(preprocessor, preprocessor_settings, "pretraining_dataset")
    tokenizer, seq_length = preprocessor.tokenizer, preprocessor.sequence_length
    if (files is None) == (documents is None):
        raise ValueError("Give exactly one of `files` (text files) and `documents` (in-memory texts).")
    if masking not in MASKING_MODES:
        raise ValueError(f"masking must be one of {MASKING_MODES}, got {masking!r}.")
    if padding not in ("fixed", "dynamic"):
        raise ValueError(f"padding must be 'fixed' or 'dynamic', got {padding!r}.")
    sentence_documents = (
        read_documents(files, input_format, errors) if files is not None else _as_sentence_documents(documents)
    )
    id_documents = tokenize_documents(sentence_documents, tokenizer)
    dataset = pretraining_instances_dataset(
        id_documents,
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
        seq_length,
        short_seq_prob,
        dupe_factor,
        seed,
    ).map(_with_padding_mask)
    if masking == "static":
        # Masked one instance at a time, before shuffling: instance i always gets the same seed.
        dataset = preprocessor.mask_dataset(dataset, seed=seed, new_masks_each_epoch=False)
    if shuffle_buffer_size:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=True)
    width = seq_length if padding == "fixed" else None
    padded_shapes = {key: [width] for key in ("token_ids", "segment_ids", "padding_mask")}
    padded_shapes["next_sentence_labels"] = []
    padding_values = {
        "token_ids": tf.constant(tokenizer.pad_token_id, tf.int32),
        "segment_ids": tf.constant(0, tf.int32),
        "padding_mask": tf.constant(False),
        "next_sentence_labels": tf.constant(0, tf.int32),
    }
    if masking == "static":
        for key, value in (("mask_positions", 0), ("mask_ids", 0), ("mask_weights", 0.0)):
            padded_shapes[key] = [preprocessor.max_predictions_per_seq]
            padding_values[key] = tf.constant(value, tf.float32 if key == "mask_weights" else tf.int32)
    dataset = dataset.padded_batch(
        batch_size, padded_shapes=padded_shapes, padding_values=padding_values, drop_remainder=drop_remainder
    )
    if masking == "dynamic":
        dataset = preprocessor.mask_dataset(dataset, seed=seed, new_masks_each_epoch=True)
    return dataset.map(to_inputs_and_targets, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
