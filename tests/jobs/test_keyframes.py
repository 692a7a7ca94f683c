"""The video judge's stills as the orchestrator reads them back: `keyframes.npz` is written by a
sandboxed program, so it is hostile input, read without unpickling, size-capped and checked
array by array; only checked stills are written again, by the trusted side."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardsmith.job_spec import KEYFRAMES_FILE
from rewardsmith.jobs.video import KEYFRAMES_CAP, keep_keyframes, read_keyframes
from rewardsmith.sandbox.worker_files import WorkerFileError


def _frames(count: int = 8, height: int = 134, width: int = 200) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (count, height, width, 3), dtype=np.uint8)


def _seconds(count: int = 8) -> np.ndarray:
    return np.linspace(0.0, 7.0, count)


def _write(folder: Path, **arrays: Any) -> None:
    with (folder / KEYFRAMES_FILE).open("wb") as handle:
        np.savez(handle, **arrays)


def _refusal(folder: Path) -> str:
    with pytest.raises(WorkerFileError) as refused:
        read_keyframes(folder)
    return str(refused.value)


def test_good_stills_are_read_back_and_kept_as_a_new_file(tmp_path: Path) -> None:
    frames, seconds = _frames(), _seconds()
    _write(tmp_path, frames=frames, seconds=seconds)

    keyframes = read_keyframes(tmp_path)
    assert np.array_equal(keyframes.frames, frames) and keyframes.frames.dtype == np.uint8
    np.testing.assert_array_equal(keyframes.seconds, seconds)

    dest = tmp_path / "kept" / "keyframes.npz"
    dest.parent.mkdir()
    assert keep_keyframes(tmp_path, dest) == (8, None)
    with np.load(dest, allow_pickle=False) as kept:
        assert sorted(kept.files) == ["frames", "seconds"]
        assert np.array_equal(kept["frames"], frames)


@pytest.mark.parametrize(
    ("arrays", "reason"),
    [
        (
            {"frames": np.array([{"a": 1}] * 8, dtype=object), "seconds": _seconds()},
            "is not a readable .npz file",  # an object array is never unpickled
        ),
        ({"frames": _frames()[..., 0], "seconds": _seconds()}, "not uint8 [K, H, W, 3]"),
        ({"frames": _frames().astype(np.float32), "seconds": _seconds()}, "not uint8"),
        (
            {"frames": np.zeros((8, 10, 10, 4), np.uint8), "seconds": _seconds()},
            "not uint8 [K, H, W, 3]",
        ),
        ({"frames": _frames(height=300), "seconds": _seconds()}, "over 256 px a side"),
        ({"frames": np.zeros((40, 8, 8, 3), np.uint8), "seconds": _seconds(40)}, "not 1 to 32"),
        ({"frames": _frames(), "seconds": _seconds(7)}, "not 8 floats"),
        ({"frames": _frames(), "seconds": np.arange(8)}, "not 8 floats"),  # integers
        ({"frames": _frames(), "seconds": _seconds()[::-1].copy()}, "not finite and rising"),
        ({"frames": _frames(), "seconds": np.full(8, np.nan)}, "not finite and rising"),
        ({"frames": _frames(), "seconds": _seconds() + 1e9}, "outside 0 to"),
        ({"frames": _frames()}, "not exactly frames and seconds"),
        (
            {"frames": _frames(), "seconds": _seconds(), "extra": np.zeros(1)},
            "not exactly frames and seconds",
        ),
    ],
)
def test_hostile_stills_are_refused_with_a_reason(
    tmp_path: Path, arrays: dict[str, Any], reason: str
) -> None:
    _write(tmp_path, **arrays)

    said = _refusal(tmp_path)

    assert KEYFRAMES_FILE in said and reason in said, said
    dest = tmp_path / "kept.npz"
    count, why = keep_keyframes(tmp_path, dest)
    assert count == 0 and why is not None and reason in why
    assert not dest.exists()


def test_a_file_over_the_cap_is_never_read(tmp_path: Path) -> None:
    (tmp_path / KEYFRAMES_FILE).write_bytes(b"\0" * (KEYFRAMES_CAP + 1))

    assert "larger than the" in _refusal(tmp_path)


def test_a_small_file_that_expands_past_the_cap_is_refused(tmp_path: Path) -> None:
    big = np.zeros((32, 256, 256, 3), np.uint8)  # 6 MiB of zeros: a few KiB compressed
    buffer = io.BytesIO()
    np.savez_compressed(buffer, frames=big, seconds=_seconds(32))
    (tmp_path / KEYFRAMES_FILE).write_bytes(buffer.getvalue())
    assert len(buffer.getvalue()) < KEYFRAMES_CAP

    assert "expands to" in _refusal(tmp_path)


def test_a_link_or_junk_in_place_of_the_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.npz"
    with target.open("wb") as handle:
        np.savez(handle, frames=_frames(), seconds=_seconds())
    folder = tmp_path / "video"
    folder.mkdir()
    (folder / KEYFRAMES_FILE).symlink_to(target)
    assert "symbolic link" in _refusal(folder)

    (folder / KEYFRAMES_FILE).unlink()
    with zipfile.ZipFile(folder / KEYFRAMES_FILE, "w") as archive:
        archive.writestr("frames.npy", b"not an array")  # numpy hands such a member back as bytes
        archive.writestr("seconds.npy", b"nor this")
    assert "not uint8 [K, H, W, 3]" in _refusal(folder)
    (folder / KEYFRAMES_FILE).write_bytes(b"PK\x03\x04 truncated")
    assert "is not a readable .npz file" in _refusal(folder)

    (folder / KEYFRAMES_FILE).unlink()
    count, why = keep_keyframes(folder, tmp_path / "kept.npz")
    assert count == 0 and why is not None and "does not exist" in why
