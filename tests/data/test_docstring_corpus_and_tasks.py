"""The default corpus (standard-library docstrings) and the tasks generated from it."""

import collections

import pytest

from keras_bert_impl.data.default_corpus import (
    clean_paragraphs,
    collect_stdlib_docstrings,
    module_sentences,
    write_docstring_corpus,
)
from keras_bert_impl.data.docstring_tasks import (
    TOPIC_MODULES,
    first_of_each_question_kind,
    first_of_each_topic,
    first_sentence_baseline,
    most_frequent_token_share,
    question_count,
    routine_facts,
    routine_squad,
    subsample_squad,
    topic_classification_examples,
    write_topic_tsv,
)
from keras_bert_impl.squad import evaluate_v1, parse_squad_examples

pytestmark = pytest.mark.backend_independent

MODULES = ["base64", "json", "math", "shutil", "smtplib", "socket", "statistics", "string", "tarfile", "textwrap",
           "inspect", "traceback"]


@pytest.fixture(scope="module")
def documented():
    return collect_stdlib_docstrings(MODULES)


def test_clean_paragraphs_drops_code_and_markup():
    docstring = "Return the ``square root`` of :func:`x` now.\n\n>>> sqrt(4)\n2.0\n\n    indented code here\nShort."
    assert clean_paragraphs(docstring) == ["Return the square root of x now."]


def test_corpus_is_deterministic_and_split_by_module(documented, tmp_path):
    first = write_docstring_corpus(tmp_path / "a", documented, eval_every=4)
    second = write_docstring_corpus(tmp_path / "b", collect_stdlib_docstrings(MODULES), eval_every=4)
    assert (tmp_path / "a" / "train.txt").read_text() == (tmp_path / "b" / "train.txt").read_text()
    counts = [{key: value for key, value in summary.items() if not isinstance(value, str)}  # not the paths
              for summary in (first, second)]
    assert counts[0] == counts[1] and counts[0]
    modules = sorted(module_sentences(documented))
    assert first["eval_documents"] == len(modules[::4])
    assert first["train_documents"] + first["eval_documents"] == len(modules)
    documents = (tmp_path / "a" / "train.txt").read_text().strip().split("\n\n")
    assert len(documents) == first["train_documents"] and all(len(d.split("\n")) >= 2 for d in documents)


def test_topic_examples_are_labelled_by_module_and_split_without_overlap(documented):
    train, dev = topic_classification_examples(documented, dev_fraction=0.2, seed=3)
    assert topic_classification_examples(documented, dev_fraction=0.2, seed=3) == (train, dev)
    assert not {s for s, _ in train} & {s for s, _ in dev}
    topics = collections.Counter(topic for _, topic in train + dev)
    assert set(topics) == set(TOPIC_MODULES) and len(dev) == round(0.2 * (len(train) + len(dev)))
    sentences = module_sentences(documented)
    socket_sentence = next(s for s in sentences["socket"] if s in {t for t, _ in train + dev})
    assert dict(train + dev)[socket_sentence] == "networking"


def test_routine_facts_come_from_signatures_and_docstrings(documented):
    facts = {fact.name: fact for fact in routine_facts(documented)["math"]}
    assert facts["sqrt"].returns == "the square root of x" and facts["sqrt"].parameters == ("x",)
    assert facts["sqrt"].module == "math" and facts["sqrt"].owner_class is None
    method = next(fact for fact in routine_facts(documented)["tarfile"] if fact.owner_class is not None)
    assert method.name.startswith(f"{method.owner_class}.")


def test_squad_answers_point_into_the_context_and_dev_modules_are_held_out(documented):
    train, dev = routine_squad(documented, dev_every=3, seed=1)
    assert routine_squad(documented, dev_every=3, seed=1) == (train, dev)
    train_modules = {article["title"] for article in train["data"]}
    dev_modules = {article["title"] for article in dev["data"]}
    assert train_modules and dev_modules and not train_modules & dev_modules
    for squad in (train, dev):
        examples = parse_squad_examples(squad, is_training=True)
        assert len(examples) > 0 and not examples.skipped  # every answer matches the context at answer_start
    paragraph = next(p for a in train["data"] if a["title"] == "math" for p in a["paragraphs"]
                     if p["context"].startswith("sqrt "))
    answers = {question["question"]: question["answers"][0]["text"] for question in paragraph["qas"]}
    assert answers == {"Which module defines sqrt?": "math", "What does sqrt return?": "the square root of x",
                       "What is returned by sqrt?": "the square root of x", "What arguments does sqrt take?": "x"}


def test_topic_tsv_reads_back_one_row_per_example(documented, tmp_path):
    from keras_bert_impl.data.classification_data import read_classification_examples

    train, _ = topic_classification_examples(documented, seed=0)
    rows = train[:20] + [("A sentence\twith a tab and\na newline.", "files")]
    path = write_topic_tsv(str(tmp_path / "data" / "topics.tsv"), rows)
    examples = read_classification_examples(path, "sentence", "topic")
    assert [(example.texts[0], example.label) for example in examples] == [
        (" ".join(sentence.split()), topic) for sentence, topic in rows]


def test_subsample_squad_keeps_whole_paragraphs_and_is_seeded(documented):
    train, _ = routine_squad(documented)
    total = sum(len(p["qas"]) for article in train["data"] for p in article["paragraphs"])
    sample = subsample_squad(train, 30, seed=4)
    assert sample == subsample_squad(train, 30, seed=4) != subsample_squad(train, 30, seed=5)
    paragraphs = [p for article in sample["data"] for p in article["paragraphs"]]
    count = sum(len(p["qas"]) for p in paragraphs)
    assert 30 <= count < 30 + max(len(p["qas"]) for p in paragraphs) and count < total
    originals = {article["title"]: article["paragraphs"] for article in train["data"]}
    assert all(p in originals[article["title"]] for article in sample["data"] for p in article["paragraphs"])
    # Scoring the sample scores exactly its questions.
    predictions = {q["id"]: q["answers"][0]["text"] for p in paragraphs for q in p["qas"]}
    assert evaluate_v1(sample, predictions) == {"exact_match": 100.0, "f1": 100.0}
    everything = subsample_squad(train, 10 ** 6)
    assert sum(len(p["qas"]) for article in everything["data"] for p in article["paragraphs"]) == total
    assert subsample_squad(train, None) is train
    with pytest.raises(ValueError, match="max_questions"):
        subsample_squad(train, 0)



def test_shown_examples_are_the_first_held_out_ones_of_each_kind():
    topics = [("Open a socket.", "networking"), ("Copy a file.", "files"), ("Bind the port.", "networking")]
    assert first_of_each_topic(topics) == topics[:2]
    context = "Fun is defined in the m module. Fun returns x. Gun returns y."
    questions = [{"question": question, "answers": [{"text": answer}], "id": str(index)} for index, (question, answer)
                 in enumerate((("Which module defines Fun?", "m"), ("What does Fun return?", "x"),
                               ("What does Gun return?", "y")))]
    squad = {"data": [{"paragraphs": [{"context": context, "qas": questions}]}]}
    assert first_of_each_question_kind(squad) == [("Which module defines Fun?", context, "m"),
                                                  ("What does Fun return?", context, "x")]
    assert question_count(squad) == 3
    # Every question answered with "Fun is defined in the m module.": F1 2/7 on the module question ("m" among
    # six tokens once "the" is dropped), 0 on the others; no exact match.
    baseline = first_sentence_baseline(squad)
    assert baseline["exact_match"] == 0.0 and baseline["f1"] == pytest.approx(100 * (2 / 7) / 3)


def test_most_frequent_token_share_is_the_mlm_accuracy_of_always_guessing_it(tmp_path):
    from keras_bert_impl.tokenization import BertTokenizer

    path = tmp_path / "eval.txt"
    path.write_text("the cat sat\n\nthe dog\n")
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog"])
    assert most_frequent_token_share(tokenizer, str(path)) == ("the", 2 / 5)
