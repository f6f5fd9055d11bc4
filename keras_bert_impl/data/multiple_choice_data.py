"""Multiple-choice data (SWAG): the CSV reader and the `(contexts, endings)` a multiple-choice model packs.

SWAG CSV (Zellers et al., 2018): columns `sent1`, `sent2`, `ending0`, `ending1`, ... and `label` (the right
ending's index); others are ignored. Choice N is packed as `[CLS] sent1 [SEP] sent2 endingN [SEP]` (`run_swag.py`).
"""

import csv
import dataclasses
import re

import numpy as np

from keras_bert_impl.data.classification_data import table_rows
from keras_bert_impl.data.label_vocabulary import ClassificationDataError, all_labelled

CONTEXT_COLUMN = "sent1"
ENDING_START_COLUMN = "sent2"
LABEL_COLUMN = "label"
_ENDING_COLUMN = re.compile(r"ending(\d+)")


@dataclasses.dataclass(frozen=True)
class MultipleChoiceExample:
    """One SWAG example.

    Args:
        context: str. The first sentence (`sent1`).
        ending_start: str. The start of the second sentence that every ending completes (`sent2`).
        endings: tuple of str. The candidate endings (`ending0`, `ending1`, ...).
        label: int or None. The index of the right ending; None for unlabelled data.
        source: str. The file it was read from. Defaults to "".
        line: int. 1-based line where the row starts. Defaults to 0.
    """

    context: str
    ending_start: str
    endings: tuple
    label: object = None
    source: str = ""
    line: int = 0

    @property
    def choices(self):
        """The second segment of each choice: `ending_start + " " + ending`, as `run_swag.py` joins them."""
        return tuple(f"{self.ending_start} {ending}" for ending in self.endings)


def _ending_columns(path, header):
    """The names of the ending columns, `ending0`, `ending1`, ... in order."""
    numbered = {int(match.group(1)): name for name in header if (match := _ENDING_COLUMN.fullmatch(name))}
    if len(numbered) < 2 or sorted(numbered) != list(range(len(numbered))):
        raise ClassificationDataError(f"{path}: the header needs ending columns numbered from 0 (ending0, ending1, "
                                      f"...; at least two), found {sorted(numbered.values()) or 'none'} in {header}.")
    return [numbered[index] for index in range(len(numbered))]


def _label(value, location, num_endings):
    value = value.strip()
    if not value.lstrip("-").isdigit() or not 0 <= int(value) < num_endings:
        raise ClassificationDataError(f"{location}: label {value!r} in column {LABEL_COLUMN!r} is not the index of an "
                                      f"ending (0 to {num_endings - 1}); fix the row or remove it.")
    return int(value)


def read_swag_examples(path, require_labels=True):
    """Reads a SWAG CSV file; a bad header, row, empty ending or label raises `ClassificationDataError`.

    Args:
        path: str. The file.
        require_labels: bool. Every row needs a `label`; False: an empty or missing label reads as None.
            Defaults to True.

    Returns:
        list of `MultipleChoiceExample`.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "val.csv")
    >>> with open(path, "w") as f:
    ...     _ = f.write('video-id,sent1,sent2,ending0,ending1,label\\nv1,"He sits, smiling.",He,waves.,sinks.,0\\n')
    >>> example = read_swag_examples(path)[0]
    >>> example.context, example.choices, example.label
    ('He sits, smiling.', ('He waves.', 'He sinks.'), 0)
    """
    examples = []
    for line, cells, header in table_rows(path, ",", csv.QUOTE_MINIMAL, True):
        if cells is None:
            missing = [name for name in (CONTEXT_COLUMN, ENDING_START_COLUMN) if name not in header]
            if require_labels and LABEL_COLUMN not in header:
                missing.append(LABEL_COLUMN)
            if missing:
                labelled = " and label" if require_labels else ""
                raise ClassificationDataError(f"{path}: no column {missing} in the header {header}; a SWAG file "
                                              f"names sent1, sent2, ending0, ending1, ...{labelled}.")
            endings = _ending_columns(path, header)
            columns = {name: header.index(name) for name in (CONTEXT_COLUMN, ENDING_START_COLUMN, *endings)}
            label_index = header.index(LABEL_COLUMN) if LABEL_COLUMN in header else None
            continue
        location = f"{path}, line {line}"
        if len(cells) != len(header):
            raise ClassificationDataError(f"{location}: {len(cells)} cells but the header has {len(header)} columns; "
                                          f"quote fields that contain commas.")
        empty = [name for name in endings if not cells[columns[name]].strip()]
        if empty:
            raise ClassificationDataError(f"{location}: empty ending{'s' if len(empty) > 1 else ''} {empty}; every "
                                          f"choice needs a text to score, so fill them in or remove the row.")
        label = None
        if label_index is not None and (require_labels or cells[label_index].strip()):
            label = _label(cells[label_index], location, len(endings))
        examples.append(MultipleChoiceExample(cells[columns[CONTEXT_COLUMN]], cells[columns[ENDING_START_COLUMN]],
                                              tuple(cells[columns[name]] for name in endings), label, path, line))
    if not examples:
        raise ClassificationDataError(f"{path} has no examples (it is empty or has only its header row); give a "
                                      f"file with at least one row.")
    return examples


def multiple_choice_inputs(examples):
    """`((contexts, choices), labels)` for `BertMultipleChoice.fit` from examples with equally many endings: `N`
    contexts, `N` lists of `C` choices, labels int32 `(N,)` (None when unlabelled)."""
    examples = list(examples)
    if not examples:
        raise ValueError("No examples.")
    odd = next((example for example in examples if len(example.endings) != len(examples[0].endings)), None)
    if odd is not None:
        raise ClassificationDataError(f"{odd.source}, line {odd.line}: {len(odd.endings)} endings, but the first "
                                      f"example has {len(examples[0].endings)}; every example of a batch needs the "
                                      "same number.")
    contexts = [example.context for example in examples]
    choices = [list(example.choices) for example in examples]
    if not all_labelled(examples):
        return (contexts, choices), None
    return (contexts, choices), np.asarray([example.label for example in examples], dtype=np.int32)
