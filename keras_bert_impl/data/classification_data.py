"""Sentence and sentence-pair classification data: TSV/CSV/JSONL readers and the arrays a classifier fits on.

TSV is read with `csv.QUOTE_NONE`, as GLUE's files need (MRPC has unbalanced quotes); CSV uses standard quoting;
JSONL columns are keys. A bad label or row raises `ClassificationDataError` naming the file, line and value.
"""

import csv
import dataclasses
import json
import os

import numpy as np

from keras_bert_impl.data.documents import text_lines
from keras_bert_impl.data.label_vocabulary import ClassificationDataError, LabelVocabulary, all_labelled

FILE_FORMATS = ("tsv", "csv", "jsonl")
_TABLE_DIALECTS = {"tsv": ("\t", csv.QUOTE_NONE), "csv": (",", csv.QUOTE_MINIMAL)}  # (delimiter, quoting)


@dataclasses.dataclass(frozen=True)
class ClassificationExample:
    """One example: its text(s), its raw label and where it came from.

    Args:
        texts: tuple of str. One text or a pair.
        label: str, float or None. The label as read (a float in regression mode); None for unlabeled data.
        source: str. The file it was read from. Defaults to "".
        line: int. 1-based line where the row starts. Defaults to 0.
    """

    texts: tuple
    label: object = None
    source: str = ""
    line: int = 0

    @property
    def location(self):
        """`"path, line N"` for error messages."""
        return f"{self.source}, line {self.line}"


@dataclasses.dataclass(frozen=True)
class TableLayout:
    """Where a file keeps its texts and labels.

    Args:
        text_columns: tuple of str or int. One or two column names (or 0-based indices without a header).
        label_column: str, int or None. Label column; None for unlabeled files.
        has_header: bool. The first row names the columns. Defaults to True.
        labels: tuple of str or None. The fixed label set (ids in this order); None for regression.
        regression: bool. Float labels. Defaults to False.
    """

    text_columns: tuple
    label_column: object
    has_header: bool = True
    labels: tuple = None
    regression: bool = False


# Train/dev files of the GLUE benchmark; label orders follow `run_classifier.py`'s `get_labels`.
GLUE_LAYOUTS = {
    "cola": TableLayout((3,), 1, has_header=False, labels=("0", "1")),
    "sst2": TableLayout(("sentence",), "label", labels=("0", "1")),
    "mrpc": TableLayout(("#1 String", "#2 String"), "Quality", labels=("0", "1")),
    "qqp": TableLayout(("question1", "question2"), "is_duplicate", labels=("0", "1")),
    "stsb": TableLayout(("sentence1", "sentence2"), "score", regression=True),
    "mnli": TableLayout(("sentence1", "sentence2"), "gold_label", labels=("contradiction", "entailment", "neutral")),
    "qnli": TableLayout(("question", "sentence"), "label", labels=("entailment", "not_entailment")),
    "rte": TableLayout(("sentence1", "sentence2"), "label", labels=("entailment", "not_entailment")),
    "wnli": TableLayout(("sentence1", "sentence2"), "label", labels=("0", "1")),
}


def _file_format(path, file_format):
    if file_format is None:
        file_format = os.path.splitext(path)[1].lstrip(".").lower()
    if file_format not in FILE_FORMATS:
        raise ClassificationDataError(
            f"{path}: cannot tell the file format; pass file_format as one of {FILE_FORMATS}."
        )
    return file_format


def _regression_label(value, location, column):
    if not isinstance(value, bool):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise ClassificationDataError(f"{location}: regression label {value!r} in column {column!r} is not a number.")


def _class_label(value, location, column):
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ClassificationDataError(f"{location}: label {value!r} in column {column!r} must be a string or an integer.")


def table_rows(path, delimiter, quoting, has_header):
    """Yields `(line, cells, header)` for each non-blank row of a TSV/CSV file (1-based `line`; `header` None without
    one), the header row itself first as `(line, None, header)`."""
    lines = text_lines(path, newline="", error=ClassificationDataError)
    reader = csv.reader(lines, delimiter=delimiter, quoting=quoting)
    header, previous_line = None, 0
    for cells in reader:
        line = previous_line + 1
        previous_line = reader.line_num
        if not cells:
            continue
        if has_header and header is None:
            header = cells
            yield line, None, header
            continue
        yield line, cells, header


def _read_table(path, text_columns, label_column, has_header, delimiter, quoting):
    """(line, texts, raw label) of each row of a TSV/CSV file."""
    columns = text_columns + ((label_column,) if label_column is not None else ())
    indices = None
    for line, cells, header in table_rows(path, delimiter, quoting, has_header):
        if indices is None:
            indices = _column_indices(path, columns, header)
            if cells is None:
                continue
        if header is not None and len(cells) > len(header):
            raise ClassificationDataError(f"{path}, line {line}: {len(cells)} cells but the header has {len(header)} "
                                          f"columns (a stray delimiter in a text shifts the label); fix or remove the "
                                          "row.")
        needed = max(indices) + 1
        if len(cells) < needed:
            raise ClassificationDataError(f"{path}, line {line}: expected at least {needed} columns, found "
                                          f"{len(cells)}.")
        texts = tuple(cells[index] for index in indices[: len(text_columns)])
        label = cells[indices[-1]] if label_column is not None else None
        yield line, texts, label


def _column_indices(path, columns, header):
    indices = []
    for column in columns:
        if isinstance(column, int) and column >= 0 and (header is None or column < len(header)):
            indices.append(column)
        elif header is None:
            raise ClassificationDataError(f"{path}: without a header, columns are 0-based indices; got {column!r}.")
        elif isinstance(column, int):
            raise ClassificationDataError(f"{path}: column index {column} is outside the header ({len(header)} "
                                          "columns).")
        elif column in header:
            indices.append(header.index(column))
        else:
            raise ClassificationDataError(f"{path}: no column {column!r} in the header {header}.")
    return indices


def _read_jsonl(path, text_columns, label_column):
    for line, text in enumerate(text_lines(path, error=ClassificationDataError), start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except json.JSONDecodeError as error:
            message = f"{path}, line {line}: malformed JSON at column {error.colno}: {error.msg}."
            raise ClassificationDataError(message) from error
        if not isinstance(record, dict):
            raise ClassificationDataError(f"{path}, line {line}: expected a JSON object, got {type(record).__name__}.")
        texts = []
        for column in text_columns:
            if column not in record:
                raise ClassificationDataError(f"{path}, line {line}: missing the text field {column!r}.")
            if not isinstance(record[column], str):
                raise ClassificationDataError(f"{path}, line {line}: text field {column!r} must be a string, got "
                                              f"{record[column]!r:.60}.")
            texts.append(record[column])
        if label_column is not None and label_column not in record:
            raise ClassificationDataError(f"{path}, line {line}: missing the label field {label_column!r}.")
        yield line, tuple(texts), record[label_column] if label_column is not None else None


def read_classification_examples(
    path, text_columns, label_column=None, file_format=None, has_header=True, regression=False
):
    """Reads a TSV, CSV or JSONL file of texts and labels.

    Args:
        path: str. The file.
        text_columns: str, int, or a sequence of one or two. Column names (JSONL keys) or 0-based indices.
        label_column: str, int or None. Label column; None for unlabeled data. Defaults to None.
        file_format: str or None. "tsv", "csv" or "jsonl"; None takes the file extension. Defaults to None.
        has_header: bool. TSV/CSV: the first non-blank row names the columns. Defaults to True.
        regression: bool. Parse labels as floats (STS-B). Defaults to False.

    Returns:
        list of `ClassificationExample`.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.tsv")
    >>> with open(path, "w") as f:
    ...     _ = f.write("sentence\\tlabel\\nit's \\"great\\tok\\n")
    >>> read_classification_examples(path, "sentence", "label")[0].texts
    ('it\\'s "great',)
    """
    text_columns = (text_columns,) if isinstance(text_columns, (str, int)) else tuple(text_columns)
    if len(text_columns) not in (1, 2):
        raise ValueError(f"text_columns must name one or two columns, got {text_columns!r}.")
    file_format = _file_format(path, file_format)
    if file_format == "jsonl":
        rows = _read_jsonl(path, text_columns, label_column)
    else:
        rows = _read_table(path, text_columns, label_column, has_header, *_TABLE_DIALECTS[file_format])
    examples = []
    for line, texts, label in rows:
        location = f"{path}, line {line}"
        if label is not None:
            label = (_regression_label if regression else _class_label)(label, location, label_column)
        examples.append(ClassificationExample(texts, label, path, line))
    if not examples:
        header = " or has only its header row" if has_header and file_format != "jsonl" else ""
        raise ClassificationDataError(f"{path} has no examples (it is empty{header}); give a file with at least one "
                                      "row.")
    return examples


def read_glue_examples(task, path, labeled=True):
    """The `ClassificationExample`s of a GLUE task's ("cola", "sst2", ..., "wnli") train.tsv or dev.tsv `path`, with
    the label column if `labeled`."""
    layout = glue_layout(task)
    return read_classification_examples(path, layout.text_columns, layout.label_column if labeled else None, "tsv",
                                        layout.has_header, layout.regression)


def has_label_column(path, label_column, file_format=None):
    """Whether a TSV, CSV or JSONL file's header (or first record) names `label_column`; an index (also as a
    string of digits) is taken to be there. `file_format` as `read_classification_examples` takes it."""
    if isinstance(label_column, int) or label_column.isdigit():
        return True
    file_format = _file_format(path, file_format)
    if file_format != "jsonl":
        return label_column in next(table_rows(path, *_TABLE_DIALECTS[file_format], True), (0, None, []))[2]
    first = next((line for line in text_lines(path, error=ClassificationDataError) if line.strip()), "")
    try:
        return label_column in json.loads(first)
    except (json.JSONDecodeError, TypeError):
        return True  # the labelled read names the bad line


def glue_layout(task):
    """The `TableLayout` of a GLUE task's train/dev files."""
    key = task.lower().replace("-", "")
    if key not in GLUE_LAYOUTS:
        raise ValueError(f"Unknown GLUE task {task!r}; expected one of {sorted(GLUE_LAYOUTS)}.")
    return GLUE_LAYOUTS[key]


def classification_arrays(examples, label_vocabulary=None, regression=False):
    """The texts and targets of examples in the form a `BertPreprocessor` (and a classifier's `fit`) takes.

    Args:
        examples: sequence of `ClassificationExample`, all with one text or all with two.
        label_vocabulary: `LabelVocabulary` or None. Needed for labeled classification data. Defaults to None.
        regression: bool. Float labels. Defaults to False.

    Returns:
        `(x, y)`: x a list of N texts (a tuple of two for pairs); y int32 `(N,)` class ids, float32 `(N,)` scores
        for regression, or None when unlabeled.

    Example:
    >>> examples = [ClassificationExample(("good", "fine"), "yes"), ClassificationExample(("bad", "ok"), "no")]
    >>> x, y = classification_arrays(examples, LabelVocabulary(["no", "yes"]))
    >>> x, y.tolist()
    ((['good', 'bad'], ['fine', 'ok']), [1, 0])
    """
    examples = list(examples)
    if not examples:
        raise ValueError("No examples given.")
    widths = {len(example.texts) for example in examples}
    if len(widths) != 1:
        raise ValueError("Mix of single-text and text-pair examples; read them with the same text_columns.")
    segments = tuple([example.texts[index] for example in examples] for index in range(widths.pop()))
    x = segments if len(segments) == 2 else segments[0]
    if not all_labelled(examples):
        return x, None
    if regression:
        return x, np.asarray([example.label for example in examples], dtype=np.float32)
    if label_vocabulary is None:
        raise ValueError("Labeled classification data needs a label_vocabulary (LabelVocabulary.from_examples(train) "
                         "for the training set, the same vocabulary for dev and test).")
    return x, label_vocabulary.encode(examples)
