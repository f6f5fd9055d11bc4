"""Training recipes and utilities: `pretraining.pretrain`, `finetuning.finetune` and the per-task recipes, fit
callbacks and data-parallel setups. Models run Keras' own `train_step` / `test_step` on every backend.
"""

# What `fit(verbose=2)` runs add (`callbacks.ProgressLog`): a progress line after this many steps or seconds,
# whichever comes first. Here, not in callbacks.py, so the command line's help reads them without importing Keras.
PROGRESS_EVERY_STEPS = 100
PROGRESS_EVERY_SECONDS = 60.0
