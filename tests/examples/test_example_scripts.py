"""The example scripts run end to end with tiny settings and produce what they print and promise.

Each script's `main(argv)` runs in this process on tiny data: a few standard-library modules' docstrings, a
WordPiece vocabulary learned from them, the `tiny` preset, a handful of steps. Pretraining and checkpoint
conversion run under every backend (their data reaches `fit` through tf.data, which feeds every backend);
the fine-tuning and export scripts are checked in the TensorFlow pass, as the `keras-bert` commands they
mirror are (tests/cli).
"""

import importlib.util
import json
import os
import re

import pytest

from tests.helpers import real_checkpoint_dir

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = ["base64", "json", "math", "shutil", "smtplib", "socket", "statistics", "string", "tarfile", "textwrap",
           "inspect", "traceback"]
SCRIPTS = ["pretrain", "finetune_classifier", "finetune_squad", "export_and_query", "convert_huggingface_checkpoint"]


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(REPO_ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def printed_number(pattern, output):
    match = re.search(pattern, output)
    assert match, f"{pattern!r} not in the output:\n{output}"
    return float(match.group(1))


@pytest.fixture(scope="module")
def documented():
    from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings

    return collect_stdlib_docstrings(MODULES)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, documented):
    from keras_bert_impl.data.default_corpus import write_docstring_corpus

    return write_docstring_corpus(str(tmp_path_factory.mktemp("corpus")), documented, eval_every=4)


@pytest.fixture(scope="module")
def pretrained_dir(tmp_path_factory, corpus):
    """A tiny (random-weight) backbone saved with a vocabulary learned from the corpus: what --init-checkpoint
    and --vocab take."""
    from keras_bert_impl import BertBackbone, BertTokenizer, train_wordpiece_vocabulary

    # The vocabulary is learned elsewhere first: save_pretrained writes only into an empty (or its own) folder.
    vocabulary = os.path.join(str(tmp_path_factory.mktemp("vocabulary")), "vocab.txt")
    train_wordpiece_vocabulary(corpus["train"], 400, output_path=vocabulary)
    tokenizer = BertTokenizer(vocabulary)
    directory = str(tmp_path_factory.mktemp("tiny_bert"))
    BertBackbone.from_scratch("tiny", vocabulary_size=tokenizer.vocabulary_size(), max_sequence_length=128,
                              num_layers=1).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.mark.backend_independent
@pytest.mark.parametrize("script", SCRIPTS)
def test_help_shows_the_usage_lines(capsys, script):
    with pytest.raises(SystemExit) as exit_:
        load_example(script).main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and f"python examples/{script}.py" in out and "--output" in out


@pytest.mark.backend_independent
def test_docstring_corpus_script_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        load_example("docstring_corpus").main(["--help"])
    assert exit_.value.code == 0 and "--vocabulary-size" in capsys.readouterr().out


@pytest.mark.slow
def test_pretrain_learns_a_vocabulary_saves_a_model_and_resumes(tmp_path, capsys, corpus):
    from keras_bert_impl import BertBackbone, BertTokenizer

    out = tmp_path / "pretrain"
    argv = ["--input-files", corpus["train"], "--eval-files", corpus["eval"], "--vocabulary-size", "300",
            "--sequence-length", "32", "--max-predictions-per-seq", "5", "--batch-size", "8", "--steps", "4",
            "--checkpoint-every", "2", "--output-dir", str(out)]
    assert load_example("pretrain").main(argv) == 0
    output = capsys.readouterr().out
    assert 0.0 <= printed_number(r"MLM accuracy (\d\.\d+)", output) <= 1.0
    assert 0.0 <= printed_number(r"NSP accuracy (\d\.\d+)", output) <= 1.0
    assert os.listdir(out / "checkpoints") == ["finished.json"]  # removed once final/ is written; the record stays
    tokenizer = BertTokenizer.from_pretrained(str(out / "final"))
    backbone = BertBackbone.from_pretrained(str(out / "final"))
    assert tokenizer.vocabulary_size() == backbone.vocabulary_size <= 300 and backbone.num_layers == 2

    # The same command again finds the finished run's record, loads final/ and trains nothing more.
    assert load_example("pretrain").main(argv) == 0
    output = capsys.readouterr().out
    assert "Resuming at step 4" in output and "Epoch" not in output


@pytest.mark.backend_independent
def test_pretrain_rejects_steps_that_are_not_whole_checkpoint_intervals(capsys):
    with pytest.raises(SystemExit) as exit_:
        load_example("pretrain").main(["--steps", "5", "--checkpoint-every", "2"])
    assert exit_.value.code == 2 and "multiple of --checkpoint-every" in capsys.readouterr().err


@pytest.mark.backend_independent
def test_finetune_classifier_takes_sequence_length_or_its_deprecated_alias_not_both(capsys):
    with pytest.raises(SystemExit) as exit_:
        load_example("finetune_classifier").main(["--preset", "tiny", "--vocab", "vocab.txt", "--sequence-length",
                                                  "32", "--max-seq-length", "32"])
    assert exit_.value.code == 2 and "deprecated alias" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_classifier_on_the_generated_topic_task(tmp_path, capsys, pretrained_dir):
    from keras_bert_impl import BertClassifier
    from keras_bert_impl.data.docstring_tasks import TOPIC_MODULES

    out = tmp_path / "classifier"
    assert load_example("finetune_classifier").main([
        "--preset", "tiny", "--vocab", os.path.join(pretrained_dir, "vocab.txt"), "--max-train-examples", "48",
        "--sequence-length", "32", "--batch-size", "16", "--epochs", "1", "--output-dir", str(out)]) == 0
    output = capsys.readouterr().out
    accuracy = printed_number(r"dev: accuracy (\d\.\d+)", output)
    assert 0.0 <= accuracy <= 1.0 and 0.0 < printed_number(r"always '\w+': accuracy (\d\.\d+)", output) < 1.0
    assert (out / "data" / "train.tsv").is_file()
    with open(out / "model" / "eval_results.json") as handle:
        assert json.load(handle) == {"accuracy": pytest.approx(accuracy, abs=5e-4)}
    assert list(BertClassifier.from_pretrained(str(out / "model")).labels) == sorted(TOPIC_MODULES)


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_classifier_on_a_glue_task_from_a_checkpoint(tmp_path, capsys, pretrained_dir):
    rows = [("1", "The cat sat on the mat.", "A cat was sitting on the mat."),
            ("0", "The socket is closed.", "Numbers are added together."),
            ("1", "Return the square root of x.", "Returns the square root of x."),
            ("0", "Copy the file to the directory.", "The mail server sends a message.")]
    for name, repeat in (("train.tsv", 6), ("dev.tsv", 2)):
        lines = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
        lines += [f"{label}\t{i}\t{i}\t{a}\t{b}" for i, (label, a, b) in enumerate(rows * repeat)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    # --max-seq-length is the deprecated alias of --sequence-length: it still works, with a warning.
    with pytest.warns(FutureWarning, match="--sequence-length"):
        assert load_example("finetune_classifier").main([
            "--task", "mrpc", "--train-file", str(tmp_path / "train.tsv"), "--dev-file", str(tmp_path / "dev.tsv"),
            "--init-checkpoint", pretrained_dir, "--max-seq-length", "32", "--batch-size", "8", "--epochs", "1",
            "--output-dir", str(tmp_path / "mrpc")]) == 0
    output = capsys.readouterr().out
    assert "24 training and 8 dev examples; labels ['0', '1']" in output
    assert "BertPreprocessor packs 32 tokens" in output
    assert 0.0 <= printed_number(r"dev: accuracy (\d\.\d+)", output) <= 1.0
    assert 0.0 <= printed_number(r", f1 (\d\.\d+)", output) <= 1.0


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_squad_on_the_generated_questions(tmp_path, capsys, pretrained_dir):
    out = tmp_path / "squad"
    assert load_example("finetune_squad").main([
        "--preset", "tiny", "--vocab", os.path.join(pretrained_dir, "vocab.txt"), "--max-train-questions", "24",
        "--max-dev-questions", "12", "--sequence-length", "48", "--doc-stride", "16", "--max-query-length", "12",
        "--batch-size", "16", "--epochs", "1", "--output-dir", str(out)]) == 0
    output = capsys.readouterr().out
    assert 0.0 <= printed_number(r"exact match (\d+\.\d)", output) <= printed_number(r"F1 (\d+\.\d)", output) <= 100
    assert output.count("predicted ") == 3
    with open(out / "predictions.json") as handle:
        predictions = json.load(handle)
    questions = int(re.search(r"and (\d+) dev questions", output).group(1))
    assert len(predictions) == questions >= 12 and (out / "model" / "vocab.txt").is_file()


@pytest.mark.slow
@pytest.mark.backend_independent
def test_finetune_squad_v2_from_a_checkpoint_tunes_the_null_threshold(tmp_path, capsys, documented, pretrained_dir):
    from keras_bert_impl.data.docstring_tasks import routine_squad

    for split, squad in zip(("train", "dev"), routine_squad(documented, dev_every=3)):
        squad["version"] = "v2.0"
        for article in squad["data"]:
            for number, paragraph in enumerate(article["paragraphs"]):
                paragraph["qas"].append({"id": f"{article['title']}-{number}-none", "answers": [],
                                         "question": "Who wrote this function?", "is_impossible": True})
        (tmp_path / f"{split}.json").write_text(json.dumps(squad))
    out = tmp_path / "squad2"
    assert load_example("finetune_squad").main([
        "--version-2", "--train-file", str(tmp_path / "train.json"), "--dev-file", str(tmp_path / "dev.json"),
        "--init-checkpoint", pretrained_dir, "--max-train-questions", "24", "--max-dev-questions", "12",
        "--sequence-length", "64", "--doc-stride", "32", "--max-query-length", "12", "--epochs", "1",
        "--output-dir", str(out)]) == 0
    output = capsys.readouterr().out
    assert 0.0 <= printed_number(r"F1 (\d+\.\d)", output) <= 100.0 and "SQuAD v2.0" in output
    with open(out / "model" / "eval_results.json") as handle:
        results = json.load(handle)
    assert results["NoAns_total"] > 0 and results["HasAns_total"] > 0 and (out / "null_odds.json").is_file()


@pytest.mark.slow
@pytest.mark.backend_independent
def test_export_and_query_serves_what_the_keras_models_compute(tmp_path, capsys, pretrained_dir):
    from keras_bert_impl import BertBackbone, BertClassifier, BertQuestionAnswerer, BertTokenizer
    from keras_bert_impl.training.finetuning import save_finetuned

    # Untrained tiny models: enough to check the served probabilities and that the answer is a span of the context.
    tokenizer = BertTokenizer.from_pretrained(pretrained_dir)
    classifier, question_answerer = str(tmp_path / "classifier"), str(tmp_path / "question_answerer")
    save_finetuned(BertClassifier(BertBackbone.from_pretrained(pretrained_dir), 3, labels=["a", "b", "c"]),
                   classifier, tokenizer)
    save_finetuned(BertQuestionAnswerer(BertBackbone.from_pretrained(pretrained_dir)), question_answerer, tokenizer)
    context = "The socket module is defined in the standard library. It sends data over the network."
    assert load_example("export_and_query").main([
        "--classifier", classifier, "--question-answerer", question_answerer, "--context", context,
        "--question", "What does it send?", "--text", "Open a socket.", "--text", "Add two numbers.",
        "--output-dir", str(tmp_path / "export")]) == 0
    output = capsys.readouterr().out
    assert printed_number(r"max \|served - Keras\| probability: (\S+)", output) <= 1e-4
    assert len(re.findall(r"^  [abc] +\d\.\d\d  (Open a socket\.|Add two numbers\.)$", output, flags=re.M)) == 2
    answer = re.search(r"answer:   '(.*)' \((?:characters (\d+)-(\d+)|no span)", output)
    assert answer and (answer.group(2) is None or context[int(answer.group(2)):int(answer.group(3))] == answer.group(1))
    for name in ("classifier", "question_answerer"):
        assert (tmp_path / "export" / name / "saved_model.pb").is_file()


@pytest.mark.slow
@pytest.mark.backend_independent
def test_export_and_query_without_a_model_fine_tunes_a_quick_classifier(tmp_path, capsys):
    from keras_bert_impl.data.docstring_tasks import TOPIC_MODULES

    assert load_example("export_and_query").main(["--quick-examples", "16", "--output-dir", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    assert "fine-tuning MiniLM on 16 sentences" in output
    assert printed_number(r"max \|served - Keras\| probability: (\S+)", output) <= 1e-4
    served_labels = re.findall(r"^  (\w+) +\d\.\d\d  ", output, flags=re.M)
    assert len(served_labels) == 3 and set(served_labels) <= set(TOPIC_MODULES)
    assert (tmp_path / "classifier" / "saved_model.pb").is_file()


@pytest.mark.slow
@pytest.mark.backend_independent
def test_convert_huggingface_checkpoint_matches_transformers(tmp_path, capsys):
    pytest.importorskip("transformers")
    from keras_bert_impl import BertBackbone

    out, hf_out = tmp_path / "converted", tmp_path / "huggingface"
    assert load_example("convert_huggingface_checkpoint").main([
        "--input", real_checkpoint_dir(), "--output", str(out), "--huggingface-output", str(hf_out)]) == 0
    output = capsys.readouterr().out
    assert printed_number(r"sequence_output (\S+),", output) <= 1e-4
    assert printed_number(r"pooled_output (\S+)", output) <= 1e-4
    assert printed_number(r"Converted copy .* max \|difference\| (\S+)", output) == 0.0
    assert {"config.json", "model.safetensors", "vocab.txt"} <= set(os.listdir(out))
    assert BertBackbone.from_pretrained(str(hf_out)).num_layers == 6


@pytest.mark.slow
@pytest.mark.backend_independent
def test_demo_ranks_sentences_and_reloads_both_formats(tmp_path, capsys):
    load_example("demo").main(["--output-dir", str(tmp_path)])
    output = capsys.readouterr().out
    ranked = [line.split(None, 1)[1] for line in output.splitlines() if line.startswith("  +") or line.startswith("  -")]
    # The query asks about fine-tuning for question answering: the two QA sentences rank first.
    assert {sentence.split()[0] for sentence in ranked[:2]} == {"Fine-tuning", "Question"}
    assert ranked[-1].startswith("The recipe for banana bread")
    assert output.count("Saved and reloaded") == 2 and "Demo finished." in output
    assert os.path.isfile(tmp_path / "minilm_huggingface" / "config.json")
