"""Small fine-tuning tasks generated, deterministically, from the standard-library docstrings (`default_corpus`).

Sized for a few minutes of CPU training (`keras-bert quickstart`): topic classification (which area of the
standard library a sentence comes from) and SQuAD v1.1 questions about functions ("What does sqrt return?").

Example:
>>> from keras_bert_impl.data.default_corpus import collect_stdlib_docstrings
>>> documented = collect_stdlib_docstrings(["math", "json", "socket"])
>>> sqrt = next(fact for fact in routine_facts(documented)["math"] if fact.name == "sqrt")
>>> sqrt.returns, sqrt.parameters
('the square root of x', ('x',))
"""

import collections
import dataclasses
import random
import re

from keras_bert_impl.data.default_corpus import module_sentences
from keras_bert_impl.data.documents import text_lines
from keras_bert_impl.utils.atomic_io import atomic_write_text

# Topic (the class label) -> the modules whose docstrings carry it; modules absent from a Python version are skipped.
TOPIC_MODULES = {
    "networking": ("ftplib", "http", "imaplib", "nntplib", "poplib", "selectors", "smtpd", "smtplib", "socket",
                   "socketserver", "ssl", "telnetlib", "urllib", "webbrowser", "xmlrpc", "asynchat", "asyncore"),
    "files": ("bz2", "filecmp", "fileinput", "fnmatch", "genericpath", "glob", "gzip", "io", "lzma", "ntpath",
              "os", "pathlib", "posixpath", "shelve", "shutil", "tarfile", "tempfile", "zipfile", "zipimport"),
    "code_tools": ("ast", "bdb", "cProfile", "code", "codeop", "dis", "doctest", "inspect", "pdb", "pickletools",
                   "profile", "pstats", "pyclbr", "pydoc", "symtable", "timeit", "tokenize", "trace",
                   "traceback", "tracemalloc"),
    "text_formats": ("base64", "binascii", "codecs", "configparser", "csv", "difflib", "html", "json", "locale",
                     "mimetypes", "plistlib", "quopri", "re", "string", "textwrap", "uu", "xml"),
    "numbers": ("cmath", "decimal", "fractions", "heapq", "math", "numbers", "random", "statistics"),
}
_RETURNS = re.compile(r"Returns? (?P<phrase>[^\n]+?)\.(\s|$)")
_PARAMETER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclasses.dataclass(frozen=True)
class RoutineFacts:
    """What the standard library says about one function or method.

    Args:
        name: str. The name questions use: "sqrt", or "Random.randint" for a method.
        module: str. The module that defines it.
        owner_class: str or None. The class of a method; None for a function.
        parameters: tuple of str or None. Parameter names (`self` left out); None when unknown.
        returns: str or None. The phrase after "Return(s)" in the docstring's first sentence.
    """

    name: str
    module: str
    owner_class: str = None
    parameters: tuple = None
    returns: str = None


def topic_classification_examples(documented, dev_fraction=0.15, seed=0):
    """Topic-labelled docstring sentences, split into train and dev.

    Args:
        documented: dict module -> list of `DocumentedObject` (`default_corpus.collect_stdlib_docstrings`).
        dev_fraction: float. Share of the (deduplicated) sentences held out for dev. Defaults to 0.15.
        seed: int. Seed of the split. Defaults to 0.

    Returns:
        `(train, dev)`: lists of `(sentence, topic)` pairs.
    """
    if not 0.0 < dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must be in (0, 1), got {dev_fraction}.")
    sentences = module_sentences(documented)
    topics_of_sentence = collections.defaultdict(set)
    for topic, modules in TOPIC_MODULES.items():
        for module in modules:
            for sentence in sentences.get(module, ()):
                topics_of_sentence[" ".join(sentence.split())].add(topic)
    examples = sorted((sentence, next(iter(topics))) for sentence, topics in topics_of_sentence.items()
                      if len(topics) == 1)
    present = {topic for _, topic in examples}
    if len(present) < 2:
        raise ValueError(f"The docstrings give sentences for {len(present)} topic(s); at least two are needed.")
    random.Random(seed).shuffle(examples)
    dev_size = max(1, round(len(examples) * dev_fraction))
    return examples[dev_size:], examples[:dev_size]


def write_topic_tsv(path, examples, columns=("sentence", "topic")):
    """Write `(sentence, topic)` `examples` atomically as a TSV file under a `columns` header row; returns `path`."""
    lines = ["\t".join(columns)] + [f"{' '.join(sentence.split())}\t{topic}" for sentence, topic in examples]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def routine_facts(documented, max_words=16, max_parameters=5):
    """The facts of every routine that has something to ask about, per module.

    Args:
        documented: dict module -> list of `DocumentedObject`.
        max_words: int. Longer return phrases are left out. Defaults to 16.
        max_parameters: int. Longer parameter lists are left out. Defaults to 5.

    Returns:
        dict module -> list of `RoutineFacts` with a return phrase or a parameter.
    """
    facts = {}
    for module, objects in documented.items():
        found, seen = [], set()
        for entry in objects:
            if entry.kind not in ("function", "method") or entry.qualified_name in seen:
                continue
            first_paragraph = " ".join(entry.docstring.strip().split("\n\n")[0].split())
            match = _RETURNS.match(first_paragraph)
            returns = match.group("phrase").strip() if match else None
            if returns is not None and not 2 <= len(returns.split()) <= max_words:
                returns = None
            parameters = entry.parameters
            if parameters is not None and (len(parameters) > max_parameters
                                           or not all(_PARAMETER.match(name) for name in parameters)):
                parameters = None
            if returns is None and not parameters:
                continue
            seen.add(entry.qualified_name)
            owner = entry.qualified_name.split(".")[0] if entry.kind == "method" else None
            found.append(RoutineFacts(entry.qualified_name, module, owner, parameters, returns))
        if found:
            facts[module] = found
    return facts


def _statements(fact):
    """Each fact as `(before, answer, after, questions)`: the sentence is `before + answer + after` and every
    question in `questions` is answered by `answer`."""
    name = fact.name
    statements = [(f"{name} is defined in the ", fact.module, " module.", [f"Which module defines {name}?"])]
    if fact.returns is not None:
        statements.append((f"{name} returns ", fact.returns, ".",
                           [f"What does {name} return?", f"What is returned by {name}?"]))
    if fact.parameters:
        *others, last = fact.parameters
        listed, noun = (f"{', '.join(others)} and {last}", "arguments") if others else (last, "argument")
        statements.append((f"{name} takes the {noun} ", listed, ".", [f"What arguments does {name} take?"]))
    elif fact.parameters is not None:
        statements.append((f"{name} takes no arguments.", "", "", []))
    if fact.owner_class is not None:
        statements.append((f"{name} is a method of the ", fact.owner_class, " class.",
                           [f"Which class is {name} a method of?"]))
    return statements


def _paragraph(fact, question_prefix, rng):
    """One context stating `fact`'s statements in random order, and its questions with answer offsets."""
    statements = _statements(fact)
    rng.shuffle(statements)
    context, questions = "", []
    for before, answer, after, asked in statements:
        if context:
            context += " "
        answer_start = len(context) + len(before)
        context += before + answer + after
        for question in asked:
            questions.append({"id": f"{question_prefix}-{len(questions)}", "question": question,
                              "answers": [{"text": answer, "answer_start": answer_start}]})
    return {"context": context, "qas": questions}


def routine_squad(documented, dev_every=5, seed=0):
    """SQuAD v1.1 train and dev dicts of questions about functions; dev asks about modules never seen in training.

    Args:
        documented: dict module -> list of `DocumentedObject`.
        dev_every: int. Every `dev_every`-th module with facts goes to dev. Defaults to 5.
        seed: int. Seed of the sentence order in the contexts. Defaults to 0.

    Returns:
        `(train, dev)`: SQuAD JSON objects (`{"version": "1.1", "data": [...]}`), one article per module.
    """
    if int(dev_every) < 2:
        raise ValueError(f"dev_every must be >= 2, got {dev_every}.")
    facts = routine_facts(documented)
    splits = {"train": [], "dev": []}
    rng = random.Random(seed)
    for position, module in enumerate(sorted(facts)):
        paragraphs = [_paragraph(fact, f"{module}-{index}", rng) for index, fact in enumerate(facts[module])]
        splits["dev" if position % dev_every == 0 else "train"].append({"title": module, "paragraphs": paragraphs})
    if not splits["train"] or not splits["dev"]:
        raise ValueError(f"Only {len(facts)} modules document routines; too few for a train/dev split.")
    return tuple({"version": "1.1", "data": splits[split]} for split in ("train", "dev"))


def subsample_squad(squad, max_questions, seed=0):
    """Whole paragraphs of a SQuAD dict, drawn at random (under `seed`) until they hold at least `max_questions`
    questions (None: `squad` unchanged), as a SQuAD dict."""
    if max_questions is None:
        return squad
    if int(max_questions) < 1:
        raise ValueError(f"max_questions must be >= 1 (or None for all), got {max_questions}.")
    paragraphs = [(article.get("title", ""), paragraph) for article in squad["data"]
                  for paragraph in article["paragraphs"]]
    random.Random(seed).shuffle(paragraphs)
    kept, count = {}, 0
    for title, paragraph in paragraphs:
        if count >= max_questions:
            break
        kept.setdefault(title, []).append(paragraph)
        count += len(paragraph["qas"])
    return {"version": squad.get("version", "1.1"),
            "data": [{"title": title, "paragraphs": kept_paragraphs} for title, kept_paragraphs in kept.items()]}


def question_count(squad):
    """The number of questions in a SQuAD dict."""
    return sum(len(paragraph["qas"]) for article in squad["data"] for paragraph in article["paragraphs"])


def first_sentence_baseline(squad):
    """Official SQuAD v1.1 scores of answering every question with its context's first sentence."""
    from keras_bert_impl.data.documents import split_sentences
    from keras_bert_impl.squad import evaluate_v1

    predictions = {question["id"]: split_sentences(paragraph["context"])[0]
                   for article in squad["data"] for paragraph in article["paragraphs"] for question in paragraph["qas"]}
    return evaluate_v1(squad, predictions)


def first_of_each_topic(topic_examples):
    """The first `(sentence, topic)` of each topic, in the examples' order (held-out examples to show)."""
    first = {}
    for sentence, topic in topic_examples:
        first.setdefault(topic, sentence)
    return [(sentence, topic) for topic, sentence in first.items()]


def first_of_each_question_kind(squad):
    """The first `(question, context, gold answer)` of each kind of question (its first two words), in order."""
    first = {}
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                kind = " ".join(question["question"].split()[:2])
                first.setdefault(kind, (question["question"], paragraph["context"], question["answers"][0]["text"]))
    return list(first.values())


def most_frequent_token_share(tokenizer, path):
    """`(the most frequent token of path's text, its share of the tokens)`: the masked-LM accuracy of guessing it."""
    sentences = [line.strip() for line in text_lines(path) if line.strip()]
    counts = collections.Counter(token for ids in tokenizer.tokenize(sentences) for token in ids)
    token_id, count = counts.most_common(1)[0]
    return tokenizer.id_to_token(token_id), count / sum(counts.values())
