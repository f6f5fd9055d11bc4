"""Windowed SQuAD features (one row per document window) and what decoding needs, as NumPy arrays.

`preprocessing.convert_examples_to_features` builds them (the windowing of `run_squad.py`); decoding
(`squad_decoding`) reads them; `BertQuestionAnsweringPreprocessor.make_dataset(features.inputs(),
features.labels())` batches them.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class SquadFeatures:
    """Packed SQuAD features (one row per document window) plus what decoding needs.

    `F` features, `T` = sequence_length.

    Args:
        token_ids: int32 `(F, T)`. `[CLS] question [SEP] window [SEP]`, then padding.
        segment_ids: int32 `(F, T)`. 0 for `[CLS] question [SEP]`, 1 for the window and its `[SEP]`.
        padding_mask: bool `(F, T)`. True on real tokens.
        start_positions: int32 `(F,)`. Answer start token (0 = [CLS] for impossible / out of window); 0 when
            the features were built without labels.
        end_positions: int32 `(F,)`. Answer end token (inclusive).
        example_index: int32 `(F,)`. Index of the example (in the list given) this feature came from.
        window_start: int32 `(F,)`. Document token index of the window's first token.
        token_char_starts: int32 `(F, T)`. Context character where each window token starts; -1 for
            tokens outside the window ([CLS], question, [SEP], padding).
        token_char_ends: int32 `(F, T)`. Context character one past each window token's end; -1 outside.
        token_is_max_context: bool `(F, T)`. True where this window is the token's max-context window.
        skipped_example_indices: list of int. Training examples left out because their answer covers no
            token (e.g. only characters the tokenizer drops).
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    window_start: np.ndarray
    token_char_starts: np.ndarray
    token_char_ends: np.ndarray
    token_is_max_context: np.ndarray
    skipped_example_indices: list = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.token_ids)

    @property
    def sequence_length(self):
        """T, the padded sequence length."""
        return self.token_ids.shape[1]

    def inputs(self):
        """The backbone inputs: `{"token_ids", "segment_ids", "padding_mask"}` NumPy arrays."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids, "padding_mask": self.padding_mask}

    def labels(self):
        """The QA labels: `{"start_positions", "end_positions"}` NumPy arrays."""
        return {"start_positions": self.start_positions, "end_positions": self.end_positions}
