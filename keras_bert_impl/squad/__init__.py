"""SQuAD question answering data: reading, windowed features, decoding, evaluation, null-threshold tuning."""

from keras_bert_impl.squad.null_threshold import TunedNullThreshold, tune_null_threshold
from keras_bert_impl.squad.squad_decoding import (
    SquadFeatures, SquadPredictions, decode_squad_predictions, write_squad_predictions
)
from keras_bert_impl.squad.squad_evaluation import (
    evaluate_squad_files, evaluate_v1, evaluate_v2, exact_match_score, f1_score, normalize_answer
)
from keras_bert_impl.squad.squad_reader import (
    SquadAnswer,
    SquadExample,
    SquadExamples,
    SquadFormatError,
    parse_squad_examples,
    read_squad_examples,
    scorable_squad_json,
)
