from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.presets import PRESETS

__all__ = ["BertBackbone", "PRESETS"]
