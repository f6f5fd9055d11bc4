import pytest

from keras_bert_impl.layers.self_attention import few_queries_are_cheaper
from benchmarks.flops import bert_flops_per_sequence

pytestmark = pytest.mark.backend_independent

# A hand count for L=1, H=2, I=4, T=3, V=10, P=2, C=3 (2 FLOPs per multiply-add):
#   encoder:   per token qkv 3*2*2=12, output 2*2=4, intermediate 2*4=8, output 4*2=8 -> 32 MACs; x 3 tokens
#              x 2 = 192
#   attention: scores 3x3 dots of length 2 and weighted sums 3x3 of width 2 -> 18 + 18 MACs -> 72
#   pooler 2*2 MACs -> 8; classifier 2*3 -> 12; NSP 2*2 -> 8
#   MLM head:  2 slots x (transform 2*2 + logits 2*10) = 48 MACs -> 96
ENCODER, ATTENTION, POOLER, CLASSIFIER, NSP, MLM = 192, 72, 8, 12, 8, 96
CONFIG = dict(num_layers=1, hidden_dim=2, intermediate_dim=4, sequence_length=3, vocabulary_size=10,
              num_predictions=2, num_classes=3)


def test_inference_is_one_forward_pass():
    assert bert_flops_per_sequence("inference", **CONFIG) == ENCODER + ATTENTION + POOLER + CLASSIFIER


def test_training_steps_are_three_forward_passes():
    assert bert_flops_per_sequence("classifier_training", **CONFIG) == 3 * (ENCODER + ATTENTION + POOLER + CLASSIFIER)
    assert bert_flops_per_sequence("pretraining", **CONFIG) == 3 * (ENCODER + ATTENTION + MLM + POOLER + NSP)
    assert bert_flops_per_sequence("pretraining_mlm", **CONFIG) == 3 * (ENCODER + ATTENTION + MLM)


def test_last_block_rows_count_keys_and_values_for_every_token():
    # L=1 and last_block_rows=2 of T=3: keys/values 2*2*2=8 MACs per token x 3 tokens; query 4, output 4,
    # feed-forward 16 MACs per row x 2 rows -> 24 + 48 = 72 MACs -> 144; attention 2 query rows -> 48.
    assert bert_flops_per_sequence("inference", **CONFIG, last_block_rows=2) == 144 + 48 + POOLER + CLASSIFIER
    assert bert_flops_per_sequence("pretraining", **CONFIG, last_block_rows=3) == bert_flops_per_sequence(
        "pretraining", **CONFIG)
    # Absorbed, 1 row, N=2: query 4 + query into input space 4 + value projection 4 + output 4 + feed-forward 16
    # MACs, scores and weighted inputs 2 * (N T H = 12) -> 32 + 24 = 56 MACs -> 112.
    assert bert_flops_per_sequence("inference", **CONFIG, last_block_rows=1, absorbed_keys_values=True,
                                   num_heads=2) == 112 + POOLER + CLASSIFIER


@pytest.mark.parametrize("workload, rows", [("inference", 1), ("pretraining", 21)])
@pytest.mark.parametrize("hidden_dim, num_heads, sequence_length", [(256, 4, 128), (64, 2, 32), (768, 12, 16)])
def test_auto_counts_the_attention_path_the_layer_takes(workload, rows, hidden_dim, num_heads, sequence_length):
    shape = dict(num_layers=2, hidden_dim=hidden_dim, intermediate_dim=4 * hidden_dim, sequence_length=sequence_length,
                 num_heads=num_heads, last_block_rows=rows)
    absorbed = few_queries_are_cheaper(rows, sequence_length, hidden_dim, num_heads)
    assert bert_flops_per_sequence(workload, **shape, absorbed_keys_values="auto") == bert_flops_per_sequence(
        workload, **shape, absorbed_keys_values=absorbed)


def test_auto_without_last_block_rows_is_the_nominal_count():
    assert bert_flops_per_sequence("inference", **CONFIG, absorbed_keys_values="auto") == bert_flops_per_sequence(
        "inference", **CONFIG)


def test_absorbed_keys_values_needs_num_heads_and_a_known_value():
    with pytest.raises(ValueError, match="num_heads"):
        bert_flops_per_sequence("inference", **CONFIG, last_block_rows=1, absorbed_keys_values="auto")
    with pytest.raises(ValueError, match="absorbed_keys_values"):
        bert_flops_per_sequence("inference", **CONFIG, last_block_rows=1, absorbed_keys_values="yes", num_heads=2)


def test_bert_base_pretraining_matches_six_n_t_plus_attention():
    # BERT-base at T=128, P=20: 85M encoder matmul parameters; 6 * N * T dominates.
    flops = bert_flops_per_sequence("pretraining", 12, 768, 3072, 128)
    encoder_params = 12 * (4 * 768 * 768 + 2 * 768 * 3072)
    assert encoder_params == 84_934_656
    expected = 6 * encoder_params * 128 + 12 * 128 * 128 * 768 * 12 + 6 * 20 * (768 * 768 + 768 * 30522)
    assert flops == expected + 6 * (768 * 768 + 2 * 768)


def test_unknown_workload_is_rejected():
    with pytest.raises(ValueError, match="workload"):
        bert_flops_per_sequence("finetuning", **CONFIG)
