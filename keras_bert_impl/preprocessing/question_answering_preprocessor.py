"""Raw `(question, context)` pairs (and answers) to windowed SQuAD features (`squad_span_graph`), and span logits
back to answers (`squad.decode_squad_predictions`).

Shape legend: B examples, F features (document windows of all examples), T `sequence_length`.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert_impl.preprocessing import squad_span_graph
from keras_bert_impl.preprocessing.preprocessor import Preprocessor, _as_string_tensor, as_text_batch
from keras_bert_impl.squad.squad_decoding import decode_squad_predictions
from keras_bert_impl.squad.squad_reader import SquadExample

DEFAULT_MAX_QUERY_LENGTH = 64


def _question_context(x):
    """`(questions, contexts, single)`: tf.string `(B,)` each, from a `(questions, contexts)` tuple (or a dict
    with those keys) of two str or two batches; `single` when two str were given."""
    if isinstance(x, dict) and {"question", "context"} <= set(x):
        x = x["question"], x["context"]
    if not (isinstance(x, tuple) and len(x) == 2):
        length = f" of length {len(x)}" if isinstance(x, (tuple, list)) else ""
        raise TypeError("x must be a tuple (questions, contexts): two str, or two equally long lists / arrays / "
                        f"tf.string tensors of str; got {type(x).__name__}{length}.")
    questions = _as_string_tensor(x[0], "questions")
    single = questions.shape.rank == 0
    questions, contexts = tf.reshape(questions, [-1]), as_text_batch(x[1], "contexts")
    if None not in (questions.shape[0], contexts.shape[0]) and questions.shape[0] != contexts.shape[0]:
        raise ValueError(f"Got {questions.shape[0]} questions and {contexts.shape[0]} contexts; give one context per "
                         f"question.")
    return questions, contexts, single


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertQuestionAnsweringPreprocessor(Preprocessor):
    """Raw `(question, context)` to BERT SQuAD features, and the start / end logits back to answers.

    Each example becomes one or more features `[CLS] question [SEP] window [SEP]` padded to `sequence_length`,
    windowed and decoded as `run_squad.py` does. A `BertQuestionAnswerer` holding it answers raw questions
    (`{"text", "start", "end", "score"}` each). `make_dataset` batches `batch_size` examples (as many rows as
    windows); datasets may hold `(question, context)` pairs, `{"question", "context"}` dicts or `(x, y)`.

    Args:
        tokenizer: `BertTokenizer`.
        sequence_length: int. `T`, the feature length. Defaults to 384.
        doc_stride: int. Distance between window starts, in tokens. Defaults to 128.
        max_query_length: int or None. Questions are cut to this many tokens. None: 64, or
            `(sequence_length - 3) // 2` when that is less. Defaults to None.
        n_best_size: int. Start and end candidates per window, and size of the n-best list. Defaults to 20.
        max_answer_length: int. Longest answer in tokens. Defaults to 30.
        version_2_with_negative: bool. SQuAD v2.0: the answer may be "" (no answer). Defaults to False.
        null_score_diff_threshold: float. v2.0: answer "" iff null score - best span score > this. Defaults to 0.0.
        **kwargs: passed to `keras.layers.Layer`.

    Call arguments:
        x: `(questions, contexts)`: two str, or two equally long lists / arrays / tf.string tensors `(B,)`.
        y: None, or the answers: a dict of `text` (str `(B,)`) and `answer_start` (int `(B,)`, the first code
            point in the context; -1, with text "", for none). They become the labels `{"start_positions",
            "end_positions"}` `(F,)` (0 where a window does not hold all of it; no rows if it covers no token).
        sample_weight: None, or per-example weights `(B,)` (given with `y`), repeated for every window.

    Returns:
        dict of `token_ids`, `segment_ids` int32 `(F, T)` and `padding_mask` bool `(F, T)`, F >= B rows
        (example by example, window by window), or `(x, y)` / `(x, y, sample_weight)` with targets.

    Example:
    >>> from keras_bert_impl.tokenization import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "?",
    ...                            "in", "france", "."])
    >>> preprocessor = BertQuestionAnsweringPreprocessor(tokenizer, sequence_length=10, doc_stride=2,
    ...                                                  max_query_length=4)
    >>> preprocessor(("Where is Paris?", "Paris is in France."))["token_ids"].tolist()
    [[2, 5, 6, 7, 8, 3, 7, 6, 9, 3], [2, 5, 6, 7, 8, 3, 9, 10, 11, 3]]
    """

    _config_keys = ("doc_stride", "max_query_length", "n_best_size", "max_answer_length", "version_2_with_negative",
                    "null_score_diff_threshold")

    def __init__(self, tokenizer, sequence_length=384, doc_stride=128, max_query_length=None, n_best_size=20,
                 max_answer_length=30, version_2_with_negative=False, null_score_diff_threshold=0.0, **kwargs):
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)
        if max_query_length is None:
            max_query_length = min(DEFAULT_MAX_QUERY_LENGTH, max(1, (self.sequence_length - 3) // 2))
        settings = dict(doc_stride=doc_stride, max_query_length=max_query_length, n_best_size=n_best_size,
                        max_answer_length=max_answer_length)
        for name, value in settings.items():
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}.")
            setattr(self, name, int(value))
        squad_span_graph.check_window_settings(self.sequence_length, self.max_query_length, self.doc_stride)
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)

    def call(self, x, y=None, sample_weight=None):
        if sample_weight is not None and y is None:
            raise ValueError("sample_weight needs the answers `y`.")
        if y is not None and not (isinstance(y, dict) and set(y) == {"text", "answer_start"}):
            raise ValueError("y must be the answers as a dict of `text` (answer texts) and `answer_start` (each "
                             f"answer's first code point in its context, -1 for none); got {y!r:.80}.")
        questions, contexts, _ = _question_context(x)
        if y is not None:
            y = {"text": as_text_batch(y["text"], "y['text']"), "answer_start": tf.reshape(y["answer_start"], [-1])}
        features = squad_span_graph.windowed_features(self.tokenizer, questions, contexts, self.sequence_length,
                                                      self.doc_stride, self.max_query_length, answers=y)
        if y is None:
            return features["inputs"]
        windows = features["windows"]
        labels = {name: windows[name] for name in ("start_positions", "end_positions")}
        if sample_weight is not None:
            sample_weight = tf.gather(tf.reshape(sample_weight, [-1]), windows["example_index"])
        return keras.utils.pack_x_y_sample_weight(features["inputs"], labels, sample_weight)

    def _slices(self, x, y, sample_weight):
        questions, contexts, _ = _question_context(x)
        return keras.utils.pack_x_y_sample_weight((questions, contexts), y, sample_weight)

    @tf.autograph.experimental.do_not_convert  # as the base class's: plain TensorFlow, nothing to convert
    def _preprocess_element(self, *element):
        if len(element) == 2 and all(isinstance(part, tf.Tensor) for part in element):
            element = (element,)  # a dataset of (question, context) pairs without targets
        return self.call(*element)

    def featurize(self, x):
        """`(examples, features)`: the `squad.SquadExample`s (ids "0", "1", ...) of `x = (questions, contexts)`
        and their `squad.SquadFeatures` (`features.inputs()` equals `self(x)` row for row)."""
        questions, contexts, _ = _question_context(x)
        examples = [SquadExample(str(index), question.decode("utf-8", errors="replace"),
                                 context.decode("utf-8", errors="replace"), ())
                    for index, (question, context) in enumerate(zip(questions.numpy(), contexts.numpy()))]
        return examples, self.example_features(examples)

    def example_features(self, examples, is_training=False):
        """`convert_examples_to_features` of `squad.SquadExample`s in this preprocessor's windows."""
        return squad_span_graph.convert_examples_to_features(
            examples, self.tokenizer, sequence_length=self.sequence_length, doc_stride=self.doc_stride,
            max_query_length=self.max_query_length, is_training=is_training)

    def decode(self, examples, features, outputs):
        """`squad.SquadPredictions` (answers, n-best lists, v2.0 null odds) of the model's `outputs`
        (`{"start_logits", "end_logits"}` `(F, T)` on `features`), with this preprocessor's settings."""
        start_logits, end_logits = (keras.ops.convert_to_numpy(outputs[key]) for key in ("start_logits", "end_logits"))
        return decode_squad_predictions(
            examples, features, start_logits, end_logits, n_best_size=self.n_best_size,
            max_answer_length=self.max_answer_length, version_2_with_negative=self.version_2_with_negative,
            null_score_diff_threshold=self.null_score_diff_threshold)

    def answers(self, x, outputs):
        """The answers to `x = (questions, contexts)` given the model's `outputs` on `self(x)`: a list of
        `SquadPredictions.answer` dicts `{"text", "start", "end", "score"}` (v2.0: `null_odds`), one for one pair."""
        single = _question_context(x)[2]
        examples, features = self.featurize(x)
        decoded = self.decode(examples, features, outputs)
        answers = [decoded.answer(example.qas_id) for example in examples]
        return answers[0] if single else answers
