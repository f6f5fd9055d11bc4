"""WordPiece tokenization (TensorFlow / tensorflow-text at the data edge)."""

from keras_bert_impl.tokenization.bert_tokenizer import BertTokenizer, split_words
from keras_bert_impl.tokenization.vocabulary_training import train_wordpiece_vocabulary

__all__ = ["BertTokenizer", "split_words", "train_wordpiece_vocabulary"]
