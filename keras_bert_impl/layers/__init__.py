from keras_bert_impl.layers.activations import ACTIVATIONS, get_activation
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.encoder_block import BertEncoderBlock
from keras_bert_impl.layers.self_attention import BertSelfAttention

__all__ = ["ACTIVATIONS", "BertEmbeddings", "BertEncoderBlock", "BertSelfAttention", "get_activation"]
