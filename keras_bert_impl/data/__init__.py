"""Data pipelines for BERT: pair packing, pretraining instances and TFRecords, masked-LM masking."""

from keras_bert_impl.data.masking import MaskedLMMasker, mask_dataset
from keras_bert_impl.data.packing import SegmentPacker, truncate_pair
from keras_bert_impl.data.documents import read_documents, tokenize_documents
from keras_bert_impl.data.pretraining_batches import pretraining_dataset, pretraining_instances_dataset
from keras_bert_impl.data.pretraining_tfrecords import read_pretraining_tfrecords, write_pretraining_tfrecords
from keras_bert_impl.data.sentence_splitting import split_sentences
from keras_bert_impl.data.classification_data import LabelVocabulary, classification_arrays, read_classification_examples
