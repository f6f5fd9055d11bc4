"""Predict with a fine-tuned model directory: classify texts, or answer questions about a context.

    # classifier (a finetune-classifier run's best/): one text per --text, or one per line of --input-file;
    # a TAB inside a text separates a sentence pair
    keras-bert predict --model runs/topics/best --text "Open a socket and send the bytes."
    keras-bert predict --model runs/mrpc/best --input-file pairs.tsv --output-file predictions.tsv
    # question answerer (a finetune-squad run's best/)
    keras-bert predict --model runs/squad/best --question "What does math.sqrt return?" \\
        --context "math.sqrt returns the square root of x. math.floor returns the floor of x."
    keras-bert predict --model runs/squad/best --squad-file dev.json --output-file predictions.json
    # token classifier (a finetune-ner run's best/): the entities of each --text / --input-file line
    keras-bert predict --model runs/ner/best --text "Peter Blackburn spoke in Brussels."
    # multiple choice (a finetune-multiple-choice run's best/): context<TAB>ending0<TAB>ending1... per text
    keras-bert predict --model runs/swag/best --text $'He sat at the piano.\\tHe played.\\tHe swam away.'

The model class and the tokenizer come from the directory (`cli.model_directories`), and so do the settings
the model was fine-tuned with (its `preprocessor.json`: packing length; SQuAD windows, decoding and the tuned
v2.0 null threshold), which flags given here override. Classifier output:
`index<TAB>prediction<TAB>probability<TAB>text` lines (the score for regression models), to stdout or
`--output-file` (with a header row; `keras-bert evaluate` reads it). Question answering prints the answer,
or writes predictions.json (`{question id: answer}`) for a SQuAD file, decoded as `run_squad.py` does.
Token classifiers write one JSON object per text: `{"index", "text", "entities"}`, each entity
`{"text", "type", "start", "end", "score"}` with character offsets into the text (long texts are windowed
with the model's `--sequence-length` and stride).
"""

import json
import sys

from keras_bert_impl.cli.arguments import UsageError, positive_int


def add_arguments(parser):
    """Define the `keras-bert predict` flags on `parser`."""
    parser.add_argument("--model", required=True, help="fine-tuned model directory with vocab.txt beside it")
    parser.add_argument("--output-file", help="write the predictions here instead of printing them")
    parser.add_argument("--batch-size", type=positive_int, default=64, help="(default: %(default)s)")
    parser.add_argument("--sequence-length", "--max-seq-length", type=positive_int,
                        help="tokens per packed input (default: the model's fine-tuning length from its "
                             "preprocessor.json, else 128 for classifiers, 384 for QA; at most the position table)")
    classify = parser.add_argument_group("classifier")
    classify.add_argument("--text", action="append", help="a text to classify or tag (repeatable; TAB separates "
                          "a pair)")
    classify.add_argument("--input-file", help="UTF-8 file, one text (or TAB-separated pair) per line")
    answer = parser.add_argument_group("question answerer")
    answer.add_argument("--question", help="the question")
    answer.add_argument("--context", help="the text to find the answer in")
    answer.add_argument("--context-file", help="read the context from this file")
    answer.add_argument("--squad-file", help="a SQuAD JSON file: answer all of its questions")
    answer.add_argument("--doc-stride", type=positive_int, help="(default: the model's, else 128)")
    answer.add_argument("--max-query-length", type=positive_int, help="(default: the model's, else 64)")
    answer.add_argument("--n-best-size", type=positive_int, help="(default: the model's, else 20)")
    answer.add_argument("--max-answer-length", type=positive_int, help="(default: the model's, else 30)")
    answer.add_argument("--version-2", action="store_true", help="allow \"\" (no answer), SQuAD v2.0 style "
                        "(default: on for a model fine-tuned with --version-2)")
    answer.add_argument("--null-score-diff-threshold", type=float,
                        help="v2.0: answer \"\" when null score - best span score exceeds this (default: the "
                             "threshold the fine-tuning run tuned and saved with the model, else 0.0)")


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
        from keras_bert_impl.data.classification_data import not_utf8_error

        try:
            with open(args.input_file, encoding="utf-8") as handle:
                texts.extend(line.rstrip("\n") for line in handle if line.strip())
        except UnicodeDecodeError:
            raise not_utf8_error(args.input_file) from None
    if not texts:
        raise ValueError(f"No texts to classify in {args.input_file}.")
    return texts


def _write_or_print(args, text):
    if args.output_file:
        from keras_bert_impl.utils.atomic_io import atomic_write_text

        atomic_write_text(args.output_file, text)
        print(f"Predictions written to {args.output_file}")
    else:
        sys.stdout.write(text)


def classify(args, model, tokenizer):
    """Classify `args`' texts; write or print the predictions."""
    import numpy as np

    from keras_bert_impl.preprocessing import BertPreprocessor
    from keras_bert_impl.training.finetuning import predict_logits

    texts = _texts(args)
    pairs = [tuple(text.split("\t", 1)) for text in texts]
    if len({len(pair) for pair in pairs}) != 1:
        raise ValueError("Mix of single texts and TAB-separated pairs; give one kind per run.")
    saved = model.preprocessor.sequence_length if model.preprocessor is not None else 128
    length = min(args.sequence_length or saved, model.backbone.max_sequence_length)
    segments = tuple(list(segment) for segment in zip(*pairs))
    inputs = BertPreprocessor(tokenizer, length)(segments if len(segments) == 2 else segments[0])
    logits = np.asarray(predict_logits(model, inputs, args.batch_size))
    lines = ["index\tprediction\tprobability\ttext"] if args.output_file else []
    for index, (row, text) in enumerate(zip(logits, texts)):
        shown = text.replace("\t", " | ")
        if model.is_regression:
            lines.append(f"{index}\t{float(row[0]):.6f}\t\t{shown}")
            continue
        probabilities = np.exp(row - row.max())
        probabilities /= probabilities.sum()
        class_id = int(np.argmax(row))
        label = model.labels[class_id] if model.labels else str(class_id)
        lines.append(f"{index}\t{label}\t{probabilities[class_id]:.4f}\t{shown}")
    _write_or_print(args, "\n".join(lines) + "\n")


QUESTION_ANSWERING_SETTINGS = ("sequence_length", "doc_stride", "max_query_length", "n_best_size",
                                "max_answer_length", "null_score_diff_threshold")


def answering_preprocessor(args, model, tokenizer):
    """The model's `BertQuestionAnsweringPreprocessor` settings (those of its fine-tuning run, else the
    defaults), with the flags given here instead."""
    from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor

    saved = model.preprocessor.get_config() if model.preprocessor is not None else {}
    settings = {name: saved[name] for name in QUESTION_ANSWERING_SETTINGS if name in saved}
    settings.update({name: getattr(args, name) for name in QUESTION_ANSWERING_SETTINGS
                     if getattr(args, name) is not None})
    length = min(settings.get("sequence_length", 384), model.backbone.max_sequence_length)
    settings["sequence_length"] = length
    if "max_query_length" in settings:  # a window shorter than the question would hold no context
        settings["max_query_length"] = min(settings["max_query_length"], length - 4)
    settings["version_2_with_negative"] = args.version_2 or bool(saved.get("version_2_with_negative"))
    return BertQuestionAnsweringPreprocessor(tokenizer, **settings)


def answer(args, model, tokenizer):
    """Answer `args`' question(s); write or print the answers."""
    from keras_bert_impl.squad import convert_examples_to_features, read_squad_examples
    from keras_bert_impl.squad.squad_reader import SquadExample
    from keras_bert_impl.training.finetuning import predict_logits

    preprocessor = answering_preprocessor(args, model, tokenizer)
    if args.squad_file:
        examples = read_squad_examples(args.squad_file)
    else:
        context = args.context
        if args.context_file:
            with open(args.context_file, encoding="utf-8") as handle:
                context = handle.read()
        examples = [SquadExample("question", args.question, context, ())]
    features = convert_examples_to_features(examples, tokenizer, sequence_length=preprocessor.sequence_length,
                                            doc_stride=preprocessor.doc_stride,
                                            max_query_length=preprocessor.max_query_length)
    decoded = preprocessor.decode(examples, features, predict_logits(model, features.inputs(), args.batch_size))
    if args.squad_file:
        _write_or_print(args, json.dumps(decoded.predictions, indent=2, ensure_ascii=False) + "\n")
    else:
        _write_or_print(args, decoded.predictions["question"] + "\n")


def tag_entities(args, model):
    """Tag `args`' texts with a `BertTokenClassifier`; write or print their entities, one JSON line per text."""
    from keras_bert_impl.preprocessing import BertTokenClassificationPreprocessor

    if args.sequence_length:  # another window length than the fine-tuning run's
        length = min(args.sequence_length, model.backbone.max_sequence_length)
        model.preprocessor = BertTokenClassificationPreprocessor(model.preprocessor.tokenizer, sequence_length=length)
    texts = _texts(args)
    tagged = model.predict(texts, batch_size=args.batch_size, verbose=0)
    lines = [json.dumps({"index": index, "text": text, "entities": result["entities"]}, ensure_ascii=False)
             for index, (text, result) in enumerate(zip(texts, tagged))]
    _write_or_print(args, "\n".join(lines) + "\n")


def choose_endings(args, model):
    """Pick each `args` text's ending with a `BertMultipleChoice`: a text is `context<TAB>ending0<TAB>ending1...`;
    write or print `index<TAB>choice<TAB>probability<TAB>text` lines."""
    import numpy as np

    from keras_bert_impl.preprocessing import BertMultipleChoicePreprocessor

    texts = _texts(args)
    rows = [text.split("\t") for text in texts]
    if min(len(row) for row in rows) < 3 or len({len(row) for row in rows}) != 1:
        raise ValueError("A multiple-choice model takes texts of the form context<TAB>ending0<TAB>ending1..., two "
                         "or more endings and the same number on every text.")
    if args.sequence_length:  # another packing length than the fine-tuning run's
        length = min(args.sequence_length, model.backbone.max_sequence_length)
        model.preprocessor = BertMultipleChoicePreprocessor(model.preprocessor.tokenizer, sequence_length=length)
    logits = np.asarray(model.predict(([row[0] for row in rows], [row[1:] for row in rows]),
                                      batch_size=args.batch_size, verbose=0))
    lines = ["index\tprediction\tprobability\ttext"] if args.output_file else []
    for index, (row, text) in enumerate(zip(logits, texts)):
        probabilities = np.exp(row - row.max())
        probabilities /= probabilities.sum()
        choice = int(np.argmax(row))
        lines.append(f"{index}\t{choice}\t{probabilities[choice]:.4f}\t{text.replace(chr(9), ' | ')}")
    _write_or_print(args, "\n".join(lines) + "\n")


def run(args):
    """Load the model directory and classify, tag or answer, by the model's class."""
    from keras_bert_impl.cli.model_directories import load_model_directory

    model, tokenizer = load_model_directory(args.model, require_tokenizer=True)
    kind = type(model).__name__
    asked_to_classify = bool(args.text or args.input_file)
    if kind == "BertClassifier" and asked_to_classify:
        classify(args, model, tokenizer)
    elif kind == "BertTokenClassifier" and asked_to_classify:
        tag_entities(args, model)
    elif kind == "BertMultipleChoice" and asked_to_classify:
        choose_endings(args, model)
    elif kind == "BertQuestionAnswerer" and not asked_to_classify:
        answer(args, model, tokenizer)
    else:
        wanted = "texts to classify" if asked_to_classify else "questions"
        raise ValueError(f"{args.model} holds a {kind}, which does not take {wanted}; predict takes a "
                         f"BertClassifier, BertTokenClassifier or BertMultipleChoice (texts) or a "
                         f"BertQuestionAnswerer (questions).")
    return 0
