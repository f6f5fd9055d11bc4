"""`keras-bert finetune-ner`, `predict` and `export` on a token classifier, end to end on a tiny model."""

import json
import os

import pytest

from tests.cli.cli_test_utils import SPECIAL_TOKENS, run_cli

pytestmark = pytest.mark.backend_independent  # CLI pipelines and SavedModel export

WORDS = ["peter", "paris", "lives", "in", "the", "eu", "met", "anna", "berlin", "."]
SENTENCES = [
    [("Peter", "I-PER"), ("lives", "O"), ("in", "O"), ("Paris", "I-LOC"), (".", "O")],
    [("Anna", "B-PER"), ("met", "O"), ("Peter", "B-PER"), ("in", "O"), ("Berlin", "B-LOC")],
    [("The", "O"), ("EU", "B-ORG"), ("met", "O"), ("in", "O"), ("Berlin", "B-LOC"), (".", "O")],
]


def write_conll(path, sentences, four_columns=False):
    lines = ["-DOCSTART- -X- O O", ""]
    for sentence in sentences:
        lines += [f"{word} NNP I-NP {tag}" if four_columns else f"{word} {tag}" for word, tag in sentence] + [""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def ner_run(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ner")
    (directory / "vocab.txt").write_text("\n".join(SPECIAL_TOKENS + WORDS) + "\n")
    train = write_conll(directory / "train.txt", SENTENCES * 4, four_columns=True)  # IOB1, 4 columns
    dev = write_conll(directory / "dev.txt", SENTENCES)
    flags = ["finetune-ner", "--train-file", train, "--dev-file", dev, "--test-file", dev, "--preset", "tiny",
             "--vocab", str(directory / "vocab.txt"), "--output-dir", str(directory / "run"), "--epochs", "2",
             "--batch-size", "4", "--sequence-length", "6", "--learning-rate", "1e-3", "--verbose", "0"]
    return directory, flags


@pytest.mark.slow
def test_finetune_ner_writes_models_scores_and_conlleval_predictions(capsys, ner_run):
    directory, flags = ner_run
    status, out, err = run_cli(capsys, *flags)
    assert status == 0, err
    assert "12 training sentences" in out and "tags: ['O', 'B-LOC', 'I-LOC', 'B-ORG', 'I-ORG', 'B-PER', 'I-PER']" in out
    run = directory / "run"
    for name in ("best", "last"):
        assert (run / name / "preprocessor.json").is_file() and (run / name / "label_vocabulary.json").is_file()
    preprocessor = json.loads((run / "best" / "preprocessor.json").read_text())
    assert preprocessor["class_name"] == "BertTokenClassificationPreprocessor"
    assert (preprocessor["config"]["sequence_length"], preprocessor["config"]["stride"]) == (6, 2)
    results = json.loads((run / "test_results.json").read_text())
    assert 0.0 <= results["f1"] <= 1.0 and "PER_f1" in results
    predictions = (run / "test_predictions.txt").read_text().split("\n\n")
    assert predictions[0].splitlines()[0].split(" ")[:2] == ["Peter", "B-PER"]  # IOB1 read as IOB2
    assert len(predictions) == len(SENTENCES)
    # Run again: the finished run resumes at its end and trains nothing.
    status, out, _ = run_cli(capsys, *flags)
    assert status == 0 and "test:" in out


@pytest.mark.slow
def test_finetune_ner_picks_best_on_held_out_training_sentences(capsys, ner_run):
    directory, flags = ner_run
    dev_at = flags.index("--dev-file")
    flags = flags[:dev_at] + flags[dev_at + 2:]  # no dev file: --tune-fraction picks best/
    flags[flags.index("--output-dir") + 1] = str(directory / "tuned")
    status, out, err = run_cli(capsys, *flags, "--tune-fraction", "0.25")
    assert status == 0, err
    assert "3 of 12 training rows held out" in out and "best epoch" in out and "held-out f1" in out
    run = directory / "tuned"
    assert (run / "best" / "config.json").is_file() and (run / "test_results.json").is_file()
    assert not (run / "eval_results.json").exists()  # no dev file to score


@pytest.mark.slow
def test_predict_and_export_give_entities_with_offsets(tmp_path, capsys, ner_run):
    import tensorflow as tf

    directory, flags = ner_run
    model_dir = directory / "run" / "best"
    if not model_dir.is_dir():
        assert run_cli(capsys, *flags)[0] == 0
    text = "Anna met Peter in Berlin, and the EU in Paris."
    status, out, err = run_cli(capsys, "predict", "--model", model_dir, "--text", text)
    assert status == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["text"] == text
    for entity in result["entities"]:
        assert text[entity["start"]:entity["end"]] == entity["text"] and entity["type"] in ("LOC", "ORG", "PER")
    status, out, err = run_cli(capsys, "export", "--model", model_dir, "--output", tmp_path / "served")
    assert status == 0, err
    served = tf.saved_model.load(str(tmp_path / "served"))
    outputs = served.signatures["serve_text"](text=tf.constant([text]))
    count = int(outputs["num_entities"][0])
    served_entities = [(outputs["entity_text"][0, i].numpy().decode("utf-8"), int(outputs["entity_start"][0, i]))
                       for i in range(count)]
    assert served_entities == [(entity["text"], entity["start"]) for entity in result["entities"]]
    assert os.path.isfile(tmp_path / "served" / "saved_model.pb")


@pytest.mark.parametrize("extra,message", [
    (["--stride", "9"], "--stride 9 is longer than a window's 4 tokens"),
    (["--epochs", "0", "--preset", "tiny"], "--epochs 0 scores a trained model"),
])
def test_flags_that_do_not_fit_are_refused(capsys, ner_run, extra, message):
    _, flags = ner_run
    status, _, err = run_cli(capsys, *flags, *extra)
    assert status == 2 and message in err
