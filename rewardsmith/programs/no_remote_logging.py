"""Imported first by the training worker: TensorBoard's writer and SB3 without the optional
packages they look for but the worker never uses.

TensorBoard's file layer imports boto3 (S3 paths) and fsspec (other remote paths) wherever they are
installed, and SB3 imports `tqdm.rich` for a progress bar: about 0.16 CPU-s of every training
program's start (docs/benchmarks.md), paid per candidate. The worker writes its log to a local
folder, in a sandbox without network, and shows no progress bar. Marked absent here, both
libraries take the branch they take where those packages are not installed.
"""

import sys

for _name in ("boto3", "botocore", "fsspec", "tqdm.rich"):
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
