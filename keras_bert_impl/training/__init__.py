"""Training recipes and utilities: `pretraining.pretrain`, `finetuning.finetune` and the per-task recipes, fit
callbacks and data-parallel setups. Models run Keras' own `train_step` / `test_step` on every backend.
"""
