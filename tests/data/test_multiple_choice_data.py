import numpy as np
import pytest

from keras_bert_impl.data.multiple_choice_data import (
    ClassificationDataError,
    MultipleChoiceExample,
    multiple_choice_inputs,
    read_swag_examples,
)

pytestmark = pytest.mark.backend_independent

# The full SWAG header (`regular` train.csv / val.csv): an unnamed index column, then named ones.
SWAG_CSV = (
    ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
    '0,anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street holding small horn brass instruments. '
    'A drum line","Members of the procession walk down the street holding small horn brass instruments.",A drum line,'
    'gold,passes by walking down the street playing their instruments.,has heard approaching them.,'
    '"arrives and they\'re outside dancing and asleep.",turns the lead singer watches the performance.,0\n'
    '1,lsmdc3001_21_JUMP_STREET-422,16,"He, too, smiles. Someone","He, too, smiles.",Someone,gen,'
    "pulls her toward him.,\"turns, shaking.\",falls over.,"
    '"walks off,\nslowly.",3\n'
)
# The reduced layout (columns in another order, no extras).
SHORT_CSV = "label,ending1,ending0,sent2,sent1\n1,sinks.,waves.,He,He stands.\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_full_swag_header_is_read_by_column_name(tmp_path):
    path = write(tmp_path, "val.csv", SWAG_CSV)
    first, second = read_swag_examples(path)
    assert first.context == "Members of the procession walk down the street holding small horn brass instruments."
    assert first.ending_start == "A drum line" and first.label == 0 and first.line == 2
    assert first.endings[2] == "arrives and they're outside dancing and asleep."
    # Quoted cells hold commas and a line break; the next row's line is where it starts.
    assert second.context == "He, too, smiles." and second.endings == (
        "pulls her toward him.", "turns, shaking.", "falls over.", "walks off,\nslowly.")
    assert (second.label, second.line) == (3, 3)


def test_choices_join_sent2_and_each_ending_as_run_swag_does(tmp_path):
    (example,) = read_swag_examples(write(tmp_path, "short.csv", SHORT_CSV))
    assert example.endings == ("waves.", "sinks.") and example.choices == ("He waves.", "He sinks.")
    (contexts, choices), labels = multiple_choice_inputs([example, example])
    assert contexts == ["He stands.", "He stands."] and choices == [["He waves.", "He sinks."]] * 2
    assert labels.dtype == np.int32 and labels.tolist() == [1, 1]


def test_unlabelled_test_file(tmp_path):
    path = write(tmp_path, "test.csv", "sent1,sent2,ending0,ending1\nA b.,C,d.,e.\n")
    with pytest.raises(ClassificationDataError, match=r"test.csv: no column \['label'\] in the header"):
        read_swag_examples(path)
    examples = read_swag_examples(path, require_labels=False)
    assert examples[0].label is None and multiple_choice_inputs(examples)[1] is None


HEADER = "sent1,sent2,ending0,ending1,ending2,ending3,label\n"


@pytest.mark.parametrize("text,message", [
    (HEADER + "a,b,c,d,e,f,0\na,b,c,d,e,0\n", r"bad.csv, line 3: 6 cells but the header has 7 columns"),
    (HEADER + "a,b,c,d,e,f,4\n",
     r"bad.csv, line 2: label '4' in column 'label' is not the index of an ending \(0 to 3\)"),
    (HEADER + "a,b,c,d,e,f,\n", r"bad.csv, line 2: label '' in column 'label'"),
    (HEADER + "\n\na,b,c,d,e,f,two\n", r"bad.csv, line 4: label 'two'"),
    ("sent1,ending0,ending1,label\na,b,c,0\n", r"bad.csv: no column \['sent2'\] in the header"),
    ("sent1,sent2,ending0,ending2,label\na,b,c,d,0\n", r"bad.csv: the header needs ending columns numbered from 0"),
    (HEADER, r"bad.csv has no examples"),
])
def test_bad_rows_name_file_line_and_value(tmp_path, text, message):
    with pytest.raises(ClassificationDataError, match=message):
        read_swag_examples(write(tmp_path, "bad.csv", text))


def test_examples_with_different_numbers_of_endings_are_refused():
    examples = [MultipleChoiceExample("a", "b", ("c", "d"), 0, "x.csv", 2),
                MultipleChoiceExample("a", "b", ("c", "d", "e"), 0, "x.csv", 3)]
    with pytest.raises(ClassificationDataError, match=r"x.csv, line 3: 3 endings, but the first example has 2"):
        multiple_choice_inputs(examples)
