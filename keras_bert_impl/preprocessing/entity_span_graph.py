"""Token-classification logits -> tagged words and entities with character offsets, as TensorFlow ops: the one
entity decoder, run eagerly by `BertTokenClassificationPreprocessor.decode` and in the graph by the exported
`serve_text`, on the features of `token_classification_preprocessor.window_features`:

- each word's prediction is its first sub-token's, in the one window that owns it (`word_index`); a word
  without any token (made only of characters the tokenizer deletes) is tagged "O";
- its tag is the argmax of the logits (the first on a tie), its score the softmax probability of that tag;
- entities are read from the tags as conlleval reads them (`metrics.entity_chunks`): a chunk starts at a `B-`
  tag or at an `I-` tag not continuing the previous word's type, and continues over `I-` tags of its type;
  an entity's score is the mean score of its words.

Shape legend: B texts, W windows, T tokens per window, C tags, N words of all texts, E entities per text
(the most any text of the batch has).
"""

import tensorflow as tf

from keras_bert_impl.preprocessing.squad_span_graph import byte_span_to_answer
from keras_bert_impl.metrics.entity_metrics import OUTSIDE_TAG, split_tag


def _tag_tables(labels):
    """Per class id: whether it is a `B-` tag, an `I-` tag, and its entity type's index (-1 for "O")."""
    if OUTSIDE_TAG not in labels:
        raise ValueError(f"Decoding entities needs IOB tags with 'O' among the labels; got {list(labels)}.")
    parts = [split_tag(label) for label in labels]
    types = sorted({entity_type for _, entity_type in parts if entity_type})
    type_index = [types.index(entity_type) if entity_type else -1 for _, entity_type in parts]
    return (tf.constant([prefix == "B" for prefix, _ in parts]), tf.constant([prefix == "I" for prefix, _ in parts]),
            tf.constant(type_index, tf.int64), tf.constant(types or [""], tf.string))


def word_tags(features, logits, labels):
    """Each word's tag id and score (module docstring).

    Args:
        features: dict from `window_features`.
        logits: float `(W, T, C)`.
        labels: sequence of str. The IOB2 tag of each class id, "O" among them.

    Returns:
        (int64 `(N,)`, float32 `(N,)`): the tag ids and scores of all words of all texts, in order.
    """
    _tag_tables(labels)  # the labels' check
    word_starts = features["word_starts"]
    num_words = tf.shape(word_starts.flat_values, out_type=tf.int64)[0]
    scored = tf.where(features["word_index"] >= 0)  # (K, 2) window, position of each word's first token
    word = tf.gather(word_starts.row_starts(), tf.gather(features["example_index"], scored[:, 0])) + tf.cast(
        tf.gather_nd(features["word_index"], scored), tf.int64)  # (K,) flat word id
    word_logits = tf.cast(tf.gather_nd(logits, scored), tf.float32)  # (K, C)
    outside = list(labels).index(OUTSIDE_TAG)
    word_tag = tf.tensor_scatter_nd_update(tf.fill([num_words], tf.constant(outside, tf.int64)), word[:, None],
                                           tf.argmax(word_logits, axis=-1))  # (N,)
    word_score = tf.tensor_scatter_nd_update(tf.zeros([num_words]), word[:, None],
                                             tf.reduce_max(tf.nn.softmax(word_logits, axis=-1), axis=-1))  # (N,)
    return word_tag, word_score


def decode_entities(features, logits, labels):
    """The entities of each text of `features` given the model's `logits` on `features["inputs"]`.

    Args:
        features, logits, labels: as `word_tags`'.

    Returns:
        dict of `entity_text`, `entity_type` tf.string `(B, E)` ("" past a text's entities), `entity_start`,
        `entity_end` int64 `(B, E)` (code point offsets into the text, end exclusive; -1 past its entities),
        `entity_score` float32 `(B, E)` (0 past its entities) and `num_entities` int32 `(B,)`.
    """
    word_tag, word_score = word_tags(features, logits, labels)
    is_begin_tag, is_inside_tag, tag_type, type_names = _tag_tables(labels)
    word_starts, word_ends = features["word_starts"], features["word_ends"]
    num_texts = word_starts.nrows()

    # conlleval chunks, word by word (module docstring).
    word_text = word_starts.value_rowids()  # (N,)
    word_type = tf.gather(tag_type, word_tag)
    same_text_as_previous = tf.concat([[False], tf.equal(word_text[1:], word_text[:-1])], axis=0)
    previous_type = tf.where(same_text_as_previous, tf.concat([[-1], word_type[:-1]], axis=0), -1)
    continues = tf.gather(is_inside_tag, word_tag) & tf.equal(word_type, previous_type)
    begins = (tf.gather(is_begin_tag, word_tag) | tf.gather(is_inside_tag, word_tag)) & ~continues
    chunk = tf.math.cumsum(tf.cast(begins, tf.int64)) - 1  # (N,) the chunk a word is in, if any
    chunk_words = tf.where(word_type >= 0)[:, 0]  # the words inside a chunk
    num_chunks = tf.reduce_sum(tf.cast(begins, tf.int64))
    chunk_of_word = tf.gather(chunk, chunk_words)
    first_words = tf.where(begins)[:, 0]  # (M,) M entities of all texts
    byte_start = tf.gather(word_starts.flat_values, first_words)
    byte_end = tf.math.unsorted_segment_max(tf.gather(word_ends.flat_values, chunk_words), chunk_of_word, num_chunks)
    score = tf.math.unsorted_segment_mean(tf.gather(word_score, chunk_words), chunk_of_word, num_chunks)
    entity_text_index = tf.gather(word_text, first_words)  # (M,)
    text, start, end = byte_span_to_answer(tf.gather(features["text"], entity_text_index), byte_start, byte_end)

    def per_text(values, fill):
        ragged = tf.RaggedTensor.from_value_rowids(values, entity_text_index, nrows=num_texts, validate=False)
        return ragged.to_tensor(default_value=fill)

    return {
        "entity_text": per_text(text, ""),
        "entity_type": per_text(tf.gather(type_names, tf.gather(word_type, first_words)), ""),
        "entity_start": per_text(start, tf.constant(-1, tf.int64)),
        "entity_end": per_text(end, tf.constant(-1, tf.int64)),
        "entity_score": per_text(score, 0.0),
        "num_entities": tf.math.bincount(tf.cast(entity_text_index, tf.int32), minlength=tf.cast(num_texts, tf.int32),
                                         maxlength=tf.cast(num_texts, tf.int32)),
    }

