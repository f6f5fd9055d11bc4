"""Predict with a fine-tuned model directory: classify, tag or choose for texts, or answer questions.

    keras-bert predict --model runs/mrpc/best --input-file pairs.tsv --output-file predictions.tsv
    keras-bert predict --model runs/squad/best --question "What does math.sqrt return?" \\
        --context "math.sqrt returns the square root of x. math.floor returns the floor of x."
    keras-bert predict --model runs/swag/best --text $'He sat at the piano.\\tHe played.\\tHe swam away.'

The model, its task and its preprocessor come from the directory (`models.load_task`), with the settings it was
fine-tuned with, which flags given here override; `model.predict` and `decode_predictions` do the rest. A TAB
separates a sentence pair, or a context and its endings. Classifiers print `index<TAB>prediction<TAB>probability
<TAB>text` lines (a header row with `--output-file`, which `keras-bert evaluate` reads); token classifiers one
JSON object per text with its entities; question answering the answer, or predictions.json for `--squad-file`.
Output row i answers input text i (`--text` ones first, then the lines of `--input-file`): a blank line is not
predicted but keeps its row, with an empty prediction (no entities), so rows never shift.
"""

import json
import sys

from keras_bert_impl.cli.arguments import (
    UsageError,
    add_question_answering_arguments,
    positive_int,
    question_answering_settings,
)


def add_arguments(parser):
    parser.add_argument("--model", required=True, help="fine-tuned model directory with vocab.txt beside it")
    parser.add_argument("--output-file", help="write the predictions here instead of printing them")
    parser.add_argument("--batch-size", type=positive_int, default=64, help="(default: %(default)s)")
    parser.add_argument("--sequence-length", "--max-seq-length", type=positive_int,
                        help="tokens per packed input (default: the model's fine-tuning length from its "
                             "preprocessor.json, else 128 for classifiers, 384 for QA; at most the position table)")
    classify = parser.add_argument_group("classifier")
    classify.add_argument("--text", action="append", help="a text to classify or tag (repeatable; TAB separates "
                          "a pair)")
    classify.add_argument("--input-file", help="UTF-8 file, one text (or TAB-separated pair) per line; output row "
                          "i is line i+1 (after any --text), and an empty line gets a row with an empty prediction")
    answer = parser.add_argument_group("question answerer")
    answer.add_argument("--question", help="the question")
    answer.add_argument("--context", help="the text to find the answer in")
    answer.add_argument("--context-file", help="read the context from this file")
    answer.add_argument("--squad-file", help="a SQuAD JSON file: answer all of its questions")
    add_question_answering_arguments(answer)


def check_arguments(args):
    """Raise `UsageError` unless the inputs form one classification or one question-answering request."""
    classify = bool(args.text or args.input_file)
    answer = bool(args.question or args.context or args.context_file or args.squad_file)
    if classify == answer:
        raise UsageError("give texts to classify (--text / --input-file) or questions to answer "
                         "(--question with --context / --context-file, or --squad-file)")
    if args.context == "":
        raise UsageError("--context is empty: give the text the answer is taken from (or --context-file)")
    if answer and not args.squad_file and not (args.question and (args.context or args.context_file)):
        raise UsageError("--question needs --context or --context-file (or use --squad-file)")


def _texts(args):
    texts = list(args.text or [])
    if args.input_file:
        from keras_bert_impl.data.documents import text_lines
        from keras_bert_impl.data.label_vocabulary import ClassificationDataError

        lines = text_lines(args.input_file, error=ClassificationDataError)
        texts.extend(line.rstrip("\n") for line in lines)  # empty ones too: output row i is line i + 1
    if not any(text.strip() for text in texts):
        raise ValueError(f"No texts to classify: {args.input_file or '--text'} holds only blank ones; give at least "
                         f"one non-blank text.")
    return texts


def _questions(args):
    """`(question ids, questions, contexts)` of `--squad-file`, or of the one `--question`."""
    if args.squad_file:
        from keras_bert_impl.squad import read_squad_examples

        examples = read_squad_examples(args.squad_file)
        return ([example.qas_id for example in examples], [example.question_text for example in examples],
                [example.context_text for example in examples])
    context = args.context
    if args.context_file:
        with open(args.context_file, encoding="utf-8") as handle:
            context = handle.read()
    return ["question"], [args.question], [context]


# The tasks that take texts; `BertQuestionAnswerer` takes questions.
TEXT_TASKS = ("BertClassifier", "BertMultipleChoice", "BertTokenClassifier")


def predict_texts(model, texts, batch_size, header):
    """Lines of predictions for `texts`: one JSON object per text with the entities a `BertTokenClassifier` finds
    in it; else `index<TAB>prediction<TAB>probability<TAB>text` lines (a TAB inside a text shown as " | ") of
    `BertClassifier` predictions (a TAB inside a text separates a pair), or of `BertMultipleChoice` choices for
    texts of the form `context<TAB>ending0<TAB>ending1...`. A blank text is not predicted: its line keeps its
    index with an empty prediction (no entities), so that output line i answers text i."""
    class_name = type(model).__name__
    given = [index for index, text in enumerate(texts) if text.strip()]
    inputs = [texts[index] for index in given]
    if class_name == "BertTokenClassifier":
        tagged = dict(zip(given, model.predict(inputs, batch_size=batch_size, verbose=0)))
        return [json.dumps({"index": index, "text": text, "entities": tagged[index]["entities"] if index in tagged
                            else []}, ensure_ascii=False) for index, text in enumerate(texts)]
    if class_name == "BertMultipleChoice":
        rows = [text.split("\t") for text in inputs]
        if min(len(row) for row in rows) < 3 or len({len(row) for row in rows}) != 1:
            raise ValueError("A multiple-choice model takes texts of the form context<TAB>ending0<TAB>ending1..., "
                             "two or more endings and the same number on every text.")
        x = ([row[0] for row in rows], [row[1:] for row in rows])
    else:
        pairs = [text.split("\t", 1) for text in inputs]
        if len({len(pair) for pair in pairs}) != 1:
            raise ValueError("Mix of single texts and TAB-separated pairs; give one kind per run.")
        x = inputs if len(pairs[0]) == 1 else tuple(list(side) for side in zip(*pairs))
    rows = dict(zip(given, model.decode_predictions(model.predict(x, batch_size=batch_size, verbose=0))))
    lines = ["index\tprediction\tprobability\ttext"] if header else []
    for index, text in enumerate(texts):
        row, shown = rows.get(index), text.replace("\t", " | ")
        if row is None:  # a blank text
            lines.append(f"{index}\t\t\t{shown}")
        elif "score" in row:  # regression
            lines.append(f"{index}\t{row['score']:.6f}\t\t{shown}")
        else:
            prediction = row["label"] if "label" in row else row["choice"]
            lines.append(f"{index}\t{prediction}\t{row['probability']:.4f}\t{shown}")
    return lines


def run(args):
    """Load the model directory's task (`models.load_task`) and classify, tag or answer, by its class."""
    from keras_bert_impl.models.task_loading import detect_task, load_task

    class_name = detect_task(args.model)
    asked_to_classify = bool(args.text or args.input_file)
    if (class_name in TEXT_TASKS) != asked_to_classify or class_name not in TEXT_TASKS + ("BertQuestionAnswerer",):
        wanted = "texts to classify" if asked_to_classify else "questions"
        raise ValueError(f"{args.model} holds a {class_name}, which does not take {wanted}; predict takes a "
                         f"BertClassifier, BertTokenClassifier or BertMultipleChoice (texts) or a "
                         f"BertQuestionAnswerer (questions).")
    # The saved preprocessor settings the flags replace.
    settings = {"sequence_length": args.sequence_length} if args.sequence_length else {}
    if not asked_to_classify:
        settings |= question_answering_settings(args)
    model = load_task(args.model, task=class_name, require_preprocessor=True, **settings)
    if asked_to_classify:
        text = "\n".join(predict_texts(model, _texts(args), args.batch_size, header=bool(args.output_file)))
    else:
        question_ids, questions, contexts = _questions(args)
        answers = model.predict((questions, contexts), batch_size=args.batch_size, verbose=0)
        # predictions.json for a SQuAD file, else the one answer.
        text = (json.dumps({question_id: found["text"] for question_id, found in zip(question_ids, answers)},
                           indent=2, ensure_ascii=False) if args.squad_file else answers[0]["text"])
    if args.output_file:
        from keras_bert_impl.utils.atomic_io import atomic_write_text

        atomic_write_text(args.output_file, text + "\n")
        print(f"Predictions written to {args.output_file}")
    else:
        sys.stdout.write(text + "\n")
    return 0
