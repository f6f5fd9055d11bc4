"""Preprocessors: tokenizer + packing (+ masking, + SQuAD windowing) as serializable Keras layers that own
their settings, run in `tf.data` under every backend, and let task models take raw text (TensorFlow edge)."""

from keras_bert_impl.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_impl.preprocessing.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert_impl.preprocessing.preprocessor import Preprocessor
from keras_bert_impl.preprocessing.pretraining_preprocessor import BertPretrainingPreprocessor
from keras_bert_impl.preprocessing.question_answering_preprocessor import BertQuestionAnsweringPreprocessor
from keras_bert_impl.preprocessing.squad_span_graph import convert_examples_to_features
from keras_bert_impl.preprocessing.token_classification_preprocessor import BertTokenClassificationPreprocessor

__all__ = ["BertMultipleChoicePreprocessor", "BertPreprocessor", "BertPretrainingPreprocessor",
           "BertQuestionAnsweringPreprocessor", "BertTokenClassificationPreprocessor", "Preprocessor",
           "convert_examples_to_features"]
