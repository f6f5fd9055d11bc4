"""The SQuAD v1.1 / v2.0 recipe of `run_squad.py` as one library call: `finetune_squad`.

`train_file` trains. `dev_file` is scored after every epoch and picks `best/` (v2.0: and tunes the null threshold,
unless `threshold_file` / `tune_fraction` does). `threshold_file` only tunes the v2.0 threshold. `tune_fraction` holds
out that share of the training articles: they tune the threshold and, without a dev file, pick `best/`. `test_file` is
predicted and scored when it has gold answers; it never tunes or picks. A fixed `null_score_diff_threshold` replaces the
tuning; with none of these the threshold is the initial checkpoint's (else 0.0).
"""

import dataclasses
import json
import os

from keras_bert_impl.training import finetuning


@dataclasses.dataclass(frozen=True)
class SquadFiles(finetuning.FinetuningFiles):
    """The SQuAD JSON files of a run (module docstring): `FinetuningFiles`' fields, and:

    Args:
        threshold_file: str or None. v2.0 only. Defaults to None.
        skip_unscorable_questions: bool. Leave out questions of the scored files that repeat an id or lack
            `answers` without `is_impossible` (their number is printed) instead of refusing the file. Defaults to False.
    """

    threshold_file: str = None
    skip_unscorable_questions: bool = False


@dataclasses.dataclass(frozen=True)
class SquadSettings:
    """Windows and decoding, as `run_squad.py`'s flags (and `BertQuestionAnsweringPreprocessor`'s arguments).

    Args:
        version_2: bool. SQuAD v2.0: questions may have no answer. Defaults to False.
        sequence_length: int. Tokens per window: `[CLS] question [SEP] document part [SEP]`. Defaults to 384.
        doc_stride: int. Distance between window starts. Defaults to 128.
        max_query_length: int. Questions are cut to this many tokens. Defaults to 64.
        n_best_size: int. Start and end candidates per window. Defaults to 20.
        max_answer_length: int. Longest answer in tokens. Defaults to 30.
        null_score_diff_threshold: float or None. v2.0: a fixed threshold instead of a tuned one. Defaults to None.
    """

    version_2: bool = False
    sequence_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = None


class _SquadRun:
    """One run's model, data sets and scoring: the closures of the recipe, named."""

    def __init__(self, model, tokenizer, files, squad, settings):
        self.model, self.tokenizer, self.files, self.squad, self.settings = model, tokenizer, files, squad, settings
        self.tune = self.dev = self.threshold_set = self.test_json = None

    def prepare(self, squad_json, source):
        """`(squad_json, examples, features)` of a scored file."""
        from keras_bert_impl.squad import parse_squad_examples, scorable_squad_json
        from keras_bert_impl.squad.squad_reader import require_questions

        skip = self.files.skip_unscorable_questions
        squad_json, skipped = scorable_squad_json(squad_json, source, skip_unscorable=skip)
        if skipped:
            print(f"skipped {skipped} questions of {source} that cannot be scored (a repeated id, or no 'answers' "
                  f"without is_impossible)")
        require_questions(squad_json, source)
        examples = parse_squad_examples(squad_json, source=source)
        return squad_json, examples, self.model.preprocessor.example_features(examples)

    def logits(self, features):
        return self.model.predict(features.inputs(), batch_size=self.settings.eval_batch_size, verbose=0)

    def score(self, data, output_dir=None):
        """Official scores on `data` at the model's threshold; on the tuning set, tune it first (one pass)."""
        squad_json, examples, features = data
        logits = self.logits(features)
        tunes = data is self.threshold_set
        preprocessor = self.model.preprocessor
        results = finetuning.evaluate_squad_predictions(
            examples, features, logits["start_logits"], logits["end_logits"], squad_json, output_dir=output_dir,
            version_2_with_negative=self.squad.version_2, n_best_size=self.squad.n_best_size,
            max_answer_length=self.squad.max_answer_length,
            null_score_diff_threshold=None if tunes else preprocessor.null_score_diff_threshold)
        if tunes:
            preprocessor.null_score_diff_threshold = results["null_score_diff_threshold"]
        return results

    @property
    def selection(self):
        """What picks `best/`: the dev file, else the held-out articles."""
        return self.dev or self.tune

    def evaluate_epoch(self, model):
        """Tune the threshold (saved with the epoch's model), then score the selection set."""
        if self.threshold_set is not None and self.threshold_set is not self.selection:
            self.score(self.threshold_set)
        results = self.score(self.selection) if self.selection is not None else {}
        if self.squad.version_2:
            results["null_score_diff_threshold"] = model.preprocessor.null_score_diff_threshold
        return results

    def read(self, train_json):
        """Hold out the tuning articles of `train_json`, read and check the other files; the training articles left."""
        from keras_bert_impl.squad.squad_reader import load_squad_json, require_questions

        files = self.files
        if files.tune_fraction:
            train_json, held_out = finetuning.split_articles(train_json, files.tune_fraction, self.settings.seed)
            print(f"tune fraction {files.tune_fraction}: {len(held_out['data'])} of "
                  f"{len(held_out['data']) + len(train_json['data'])} training articles held out")
            self.tune = self.prepare(held_out, f"{files.train_file} (held-out articles)")
        self.dev = self.prepare(load_squad_json(files.dev_file), files.dev_file) if files.dev_file else None
        if self.squad.version_2 and self.squad.null_score_diff_threshold is None:
            self.threshold_set = (self.prepare(load_squad_json(files.threshold_file), files.threshold_file)
                                  if files.threshold_file else self.tune or self.dev)
        if files.test_file:
            self.test_json = load_squad_json(files.test_file)
            require_questions(self.test_json, files.test_file)
        return train_json

    def train(self, train_json):
        """Fine-tune on `train_json`'s answered questions; the epoch the run started from."""
        from keras_bert_impl.squad import parse_squad_examples

        train_file = self.files.train_file
        examples = parse_squad_examples(train_json, is_training=True, source=train_file)
        if examples.skipped:
            print(f"skipped {len(examples.skipped)} training questions whose answer does not match the context")
        if not len(examples):
            raise ValueError(f"{train_file} has no training questions ({len(examples.skipped)} skipped); give a "
                             f"SQuAD file whose data[].paragraphs[].qas[] hold answered questions, or train 0 "
                             f"epochs (--epochs 0) to predict only.")
        features = self.model.preprocessor.example_features(examples, is_training=True)
        selection, scored = self.selection, self.selection or self.threshold_set
        return finetuning.finetune(
            self.model, features.inputs(), features.labels(), self.settings, self.tokenizer,
            counts=f"{len(examples)} training questions, {len(features)} windows",
            evaluate=self.evaluate_epoch if scored else None, monitor="f1" if selection else None,
            selection_name="dev" if self.dev else "held-out").trained_from

    def predict_test(self, test_file, test_dir):
        """Predict `test_file` (as `read` loaded it) into `test_dir`, and score it when it has gold answers."""
        from keras_bert_impl.squad import parse_squad_examples, write_squad_predictions
        from keras_bert_impl.squad.squad_reader import squad_questions

        test_json = self.test_json
        labelled = any("answers" in question or "is_impossible" in question  # scored when it carries labels
                       for *_, question in squad_questions(test_json, test_file))
        if labelled:
            print("test:", json.dumps(self.score(self.prepare(test_json, test_file), test_dir)))
        else:
            examples = parse_squad_examples(test_json, source=test_file)
            features = self.model.preprocessor.example_features(examples)
            write_squad_predictions(self.model.preprocessor.decode(examples, features, self.logits(features)),
                                    test_dir)
        print(f"test predictions written to {os.path.join(test_dir, 'predictions.json')}")


@finetuning.claims_output_dir
def finetune_squad(files, squad, source, settings):
    """Fine-tune (or, with `settings.epochs == 0`, only score) a `BertQuestionAnswerer` as `run_squad.py`.

    Writes into `settings.output_dir`: `last/` and, when a dev file or held-out articles score the epochs, `best/`
    (by F1), each with the tokenizer, the preprocessor (with that epoch's v2.0 null threshold) and
    `eval_results.json`; then for the final model `predictions.json`, `nbest_predictions.json`, `null_odds.json`
    (v2.0) and `eval_results.json` for the dev file, and the same in `test/` for the test file.

    Args:
        files, squad: `SquadFiles`, `SquadSettings`.
        source, settings: `finetuning.ModelSource`, `finetuning.FinetuningSettings`.

    Returns:
        dict: the final model's dev scores (empty without a dev file).
    """
    import keras

    from keras_bert_impl.preprocessing import BertQuestionAnsweringPreprocessor
    from keras_bert_impl.squad.squad_reader import load_squad_json
    from keras_bert_impl.models.question_answerer import BertQuestionAnswerer
    from keras_bert_impl.models.task import saved_preprocessor
    keras.utils.set_random_seed(settings.seed)
    tokenizer = source.tokenizer()
    threshold = squad.null_score_diff_threshold
    if threshold is None:  # a fine-tuned checkpoint's tuned threshold, until this run tunes one
        threshold = saved_preprocessor(source.init_checkpoint)[1].get("null_score_diff_threshold", 0.0)
    # The run's settings travel with the model it saves (preprocessor.json), for predict and export.
    preprocessor = BertQuestionAnsweringPreprocessor(
        tokenizer, sequence_length=squad.sequence_length, doc_stride=squad.doc_stride,
        max_query_length=squad.max_query_length, n_best_size=squad.n_best_size,
        max_answer_length=squad.max_answer_length, version_2_with_negative=squad.version_2,
        null_score_diff_threshold=threshold)
    model = source.build(BertQuestionAnswerer, tokenizer, preprocessor,
                         max_sequence_length=max(512, squad.sequence_length))
    run = _SquadRun(model, tokenizer, files, squad, settings)
    train_json = run.read(load_squad_json(files.train_file) if settings.epochs else None)
    trained_from = run.train(train_json) if settings.epochs else 0
    if ((not settings.epochs or trained_from >= settings.epochs) and run.threshold_set is not None
            and run.threshold_set is not run.dev):
        run.score(run.threshold_set)  # nothing trained in this run (no epochs, or a finished run's rerun): tune now
    if squad.version_2:
        print(f"null score threshold: {model.preprocessor.null_score_diff_threshold:.4f}")
    dev_results = {}
    if run.dev:
        dev_results = run.score(run.dev, settings.output_dir)
        print("dev:", json.dumps(dev_results))
        print(f"predictions written to {os.path.join(settings.output_dir, 'predictions.json')}")
    if files.test_file:
        run.predict_test(files.test_file, os.path.join(settings.output_dir, "test"))
    return dev_results
