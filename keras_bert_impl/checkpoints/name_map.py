"""The one table that maps our variable paths to Hugging Face and original google-research/bert names.

Each `WeightSpec` names one of our variables (`variable.path`) and its tensor(s) in each foreign format;
three names are our fused query/key/value projection, concatenated along the output axis. Layouts live in
`conversion.py`: Hugging Face weights are `[out, in]`, original kernels `[in, out]` unless `original_out_in`.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class WeightSpec:
    ours: str
    kind: str  # "kernel" ([in, out] here), "vector" (bias / LayerNorm), "embedding" ([rows, H])
    huggingface: tuple
    original: tuple
    original_out_in: bool = False


def _dense(ours, huggingface, original):
    return [
        WeightSpec(f"{ours}/kernel", "kernel", (f"{huggingface}.weight",), (f"{original}/kernel",)),
        WeightSpec(f"{ours}/bias", "vector", (f"{huggingface}.bias",), (f"{original}/bias",)),
    ]


def _layer_norm(ours, huggingface, original):
    return [
        WeightSpec(f"{ours}/gamma", "vector", (f"{huggingface}.weight",), (f"{original}/gamma",)),
        WeightSpec(f"{ours}/beta", "vector", (f"{huggingface}.bias",), (f"{original}/beta",)),
    ]


def _fused_qkv(ours, huggingface, original):
    parts = ("query", "key", "value")
    return [
        WeightSpec(
            f"{ours}/kernel",
            "kernel",
            tuple(f"{huggingface}.{p}.weight" for p in parts),
            tuple(f"{original}/{p}/kernel" for p in parts),
        ),
        WeightSpec(
            f"{ours}/bias",
            "vector",
            tuple(f"{huggingface}.{p}.bias" for p in parts),
            tuple(f"{original}/{p}/bias" for p in parts),
        ),
    ]


def backbone_weight_specs(num_layers):
    """Specs for every `BertBackbone` variable. Hugging Face names are relative to `BertModel`."""
    hf, tf = "embeddings", "bert/embeddings"
    specs = [
        WeightSpec("embeddings/token_embedding/embeddings", "embedding",
                   (f"{hf}.word_embeddings.weight",), (f"{tf}/word_embeddings",)),
        WeightSpec("embeddings/segment_embedding/embeddings", "embedding",
                   (f"{hf}.token_type_embeddings.weight",), (f"{tf}/token_type_embeddings",)),
        WeightSpec("embeddings/position_embeddings", "embedding",
                   (f"{hf}.position_embeddings.weight",), (f"{tf}/position_embeddings",)),
        *_layer_norm("embeddings/layer_norm", f"{hf}.LayerNorm", f"{tf}/LayerNorm"),
    ]
    for i in range(num_layers):
        ours, hf, tf = f"encoder_layer_{i}", f"encoder.layer.{i}", f"bert/encoder/layer_{i}"
        specs += [
            *_fused_qkv(f"{ours}/self_attention/query_key_value",
                        f"{hf}.attention.self", f"{tf}/attention/self"),
            *_dense(f"{ours}/self_attention/attention_output",
                    f"{hf}.attention.output.dense", f"{tf}/attention/output/dense"),
            *_layer_norm(f"{ours}/attention_layer_norm",
                         f"{hf}.attention.output.LayerNorm", f"{tf}/attention/output/LayerNorm"),
            *_dense(f"{ours}/intermediate_dense", f"{hf}.intermediate.dense", f"{tf}/intermediate/dense"),
            *_dense(f"{ours}/output_dense", f"{hf}.output.dense", f"{tf}/output/dense"),
            *_layer_norm(f"{ours}/output_layer_norm", f"{hf}.output.LayerNorm", f"{tf}/output/LayerNorm"),
        ]
    specs += _dense("pooler_dense", "pooler.dense", "bert/pooler/dense")
    return specs


# Tensors some checkpoints carry that are not weights (buffers) or are tied copies of other weights.
IGNORED_FOREIGN_TENSORS = (
    "embeddings.position_ids",
    "cls.predictions.decoder.weight",  # tied to the word embeddings
    "global_step",
)


def pretraining_head_specs():
    """Specs for `BertPretrainer`'s masked-LM and next-sentence heads. Hugging Face names are absolute
    (`BertForPreTraining`); the MLM output projection is tied to the word embeddings and has no spec."""
    mlm, hf, tf = "masked_lm_head", "cls.predictions", "cls/predictions"
    return [
        *_dense(f"{mlm}/transform_dense", f"{hf}.transform.dense", f"{tf}/transform/dense"),
        *_layer_norm(f"{mlm}/transform_layer_norm", f"{hf}.transform.LayerNorm", f"{tf}/transform/LayerNorm"),
        WeightSpec(f"{mlm}/output_bias", "vector", (f"{hf}.bias",), (f"{tf}/output_bias",)),
        WeightSpec("next_sentence_head/kernel", "kernel", ("cls.seq_relationship.weight",),
                   ("cls/seq_relationship/output_weights",), original_out_in=True),
        WeightSpec("next_sentence_head/bias", "vector", ("cls.seq_relationship.bias",),
                   ("cls/seq_relationship/output_bias",)),
    ]


def classifier_head_specs():
    """Specs for `BertClassifier`'s output layer (`BertForSequenceClassification`, `run_classifier.py`)."""
    return [
        WeightSpec("classifier_dense/kernel", "kernel", ("classifier.weight",), ("output_weights",),
                   original_out_in=True),
        WeightSpec("classifier_dense/bias", "vector", ("classifier.bias",), ("output_bias",)),
    ]


def question_answering_head_specs():
    """Specs for `BertQuestionAnswerer`'s span layer (`BertForQuestionAnswering`, `run_squad.py`); row / column
    0 is the start logit, 1 the end logit."""
    return [
        WeightSpec("span_dense/kernel", "kernel", ("qa_outputs.weight",), ("cls/squad/output_weights",),
                   original_out_in=True),
        WeightSpec("span_dense/bias", "vector", ("qa_outputs.bias",), ("cls/squad/output_bias",)),
    ]


def token_classifier_head_specs():
    """Specs for `BertTokenClassifier`'s output layer (`BertForTokenClassification`; the original has none)."""
    return [
        WeightSpec("token_classifier_dense/kernel", "kernel", ("classifier.weight",), ()),
        WeightSpec("token_classifier_dense/bias", "vector", ("classifier.bias",), ()),
    ]


def multiple_choice_head_specs():
    """Specs for `BertMultipleChoice`'s scoring layer (`BertForMultipleChoice`; the original has none)."""
    return [
        WeightSpec("multiple_choice_dense/kernel", "kernel", ("classifier.weight",), ()),
        WeightSpec("multiple_choice_dense/bias", "vector", ("classifier.bias",), ()),
    ]
