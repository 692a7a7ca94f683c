"""Imported first by the programs that use SB3 but never log (the evaluator, the video program).

SB3 imports TensorBoard's writer wherever the tensorboard package is installed: 0.24 s of every
such program's start on 2 cores (benchmarks/program_startup.py). Marked absent here, SB3 skips
it, as it does where tensorboard is not installed. Only the training worker keeps a TensorBoard log.
"""

import sys

sys.modules.setdefault("torch.utils.tensorboard", None)  # type: ignore[arg-type]
