"""Data pipelines for BERT: pair packing, pretraining instances and TFRecords, masked-LM masking.

The names load lazily, so that the TensorFlow-free modules (`label_vocabulary`) do not import TensorFlow.
"""

from keras_bert_impl.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "MaskedLMMasker": "keras_bert_impl.data.masking",
    "mask_dataset": "keras_bert_impl.data.masking",
    "SegmentPacker": "keras_bert_impl.data.packing",
    "truncate_pair": "keras_bert_impl.data.packing",
    "read_documents": "keras_bert_impl.data.documents",
    "tokenize_documents": "keras_bert_impl.data.documents",
    "pretraining_dataset": "keras_bert_impl.data.pretraining_batches",
    "pretraining_instances_dataset": "keras_bert_impl.data.pretraining_batches",
    "read_pretraining_tfrecords": "keras_bert_impl.data.pretraining_tfrecords",
    "write_pretraining_tfrecords": "keras_bert_impl.data.pretraining_tfrecords",
    "split_sentences": "keras_bert_impl.data.documents",
    "LabelVocabulary": "keras_bert_impl.data.label_vocabulary",
    "classification_arrays": "keras_bert_impl.data.classification_data",
    "read_classification_examples": "keras_bert_impl.data.classification_data",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
