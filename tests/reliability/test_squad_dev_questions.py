"""Issue #16 item 6: a SQuAD dev question without `answers` was scored as unanswerable and two questions with
one id were merged, silently changing the scores. Both are errors naming the question, its id and the field;
`--skip-unscorable-questions` leaves them out of an evaluation and says how many."""

import json
import pathlib

import pytest

from keras_bert_impl.squad import SquadFormatError, evaluate_v2, parse_squad_examples
from tests.cli.cli_test_utils import run_cli
from tests.training.finetuning_test_utils import write_tiny_checkpoint

pytestmark = pytest.mark.backend_independent

SQUAD_SAMPLE = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "squad" / (
    "squad-v2.0-dev-sample.json")


@pytest.fixture
def dev_file(tmp_path):
    """The first paragraph of the real SQuAD 2.0 dev sample (5 answerable, 4 unanswerable questions), with
    the answers of qas[1] removed and qas[2] repeated under the id of qas[0]."""
    if not SQUAD_SAMPLE.is_file():
        pytest.skip(f"{SQUAD_SAMPLE} is absent (see ../shared/data/README.md)")
    sample = json.loads(SQUAD_SAMPLE.read_text(encoding="utf-8"))
    article = sample["data"][0]
    paragraph = article["paragraphs"][0]
    questions = paragraph["qas"]
    del questions[1]["answers"]
    questions.append({**questions[2], "id": questions[0]["id"]})
    bad = {"version": sample["version"], "data": [{**article, "paragraphs": [paragraph]}]}
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    return path, questions


def _predictions(tmp_path, questions):
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps({question["id"]: "" for question in questions}))
    return path


def test_question_without_answers_is_an_error_naming_it(tmp_path, capsys, dev_file):
    path, questions = dev_file
    status, out, err = run_cli(capsys, "evaluate", "--squad-file", path, "--predictions",
                               _predictions(tmp_path, questions))
    assert status == 1 and not out
    assert len(err.strip().splitlines()) == 1
    assert (f"{path}: data[0].paragraphs[0].qas[1] (id {questions[1]['id']!r}) is missing the field 'answers' and is "
            f"not marked is_impossible") in err
    assert "pass --skip-unscorable-questions" in err and "(2 such questions in the file)" in err


def test_repeated_question_id_is_an_error_naming_it(tmp_path, capsys, dev_file):
    path, questions = dev_file
    data = json.loads(path.read_text())
    data["data"][0]["paragraphs"][0]["qas"][1]["answers"] = []  # only the repeated id is left wrong
    data["data"][0]["paragraphs"][0]["qas"][1]["is_impossible"] = True
    path.write_text(json.dumps(data))
    status, _, err = run_cli(capsys, "evaluate", "--squad-file", path, "--predictions",
                             _predictions(tmp_path, questions))
    assert status == 1
    assert (f"data[0].paragraphs[0].qas[9] (id {questions[0]['id']!r}) repeats the field 'id' of "
            f"data[0].paragraphs[0].qas[0]") in err
    with pytest.raises(SquadFormatError, match="repeats the field 'id'"):
        parse_squad_examples(data, source=str(path))  # predict --squad-file: answers keyed by id would merge
    with pytest.raises(SquadFormatError, match="repeats the field 'id'"):
        evaluate_v2(data, {question["id"]: "" for question in questions})


def test_skip_flag_leaves_them_out_and_counts_them(tmp_path, capsys, dev_file):
    path, questions = dev_file
    status, out, err = run_cli(capsys, "evaluate", "--squad-file", path, "--predictions",
                               _predictions(tmp_path, questions), "--skip-unscorable-questions")
    assert status == 0, err
    results = json.loads(out)
    assert results["skipped_unscorable_questions"] == 2
    assert results["total"] == 8 and results["HasAns_total"] == 4 and results["NoAns_total"] == 4


def test_finetune_squad_refuses_the_dev_file_before_training_and_skips_on_request(tmp_path, capsys, dev_file):
    path, _ = dev_file
    checkpoint = write_tiny_checkpoint(tmp_path / "checkpoint")
    common = ("finetune-squad", "--epochs", 0, "--dev-file", path, "--init-checkpoint", checkpoint,
              "--max-seq-length", 64, "--doc-stride", 32, "--max-query-length", 16, "--version-2")
    status, _, err = run_cli(capsys, *common, "--output-dir", tmp_path / "refused")
    assert status == 1 and "is missing the field 'answers'" in err
    assert not (tmp_path / "refused").exists()
    status, out, err = run_cli(capsys, *common, "--output-dir", tmp_path / "run", "--skip-unscorable-questions")
    assert status == 0, err
    assert f"skipped 2 questions of {path} that cannot be scored" in out
    results = json.loads((tmp_path / "run" / "eval_results.json").read_text())
    assert results["HasAns_total"] == 4 and results["NoAns_total"] == 4
