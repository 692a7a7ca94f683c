"""The trusted reader of a sandbox's video: real MP4s pass, and every planted or damaged file,
and every file that is not a file, is refused with a reason (and never copied)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import imageio.v2 as iio
import numpy as np
import pytest

from rewardsmith.sandbox.video_file import check_video, keep_video

CAP = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def real_mp4(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a real H.264 MP4 (24 frames of a moving square), as ffmpeg writes it."""
    path = tmp_path_factory.mktemp("real") / "real.mp4"
    writer = iio.get_writer(
        path, format="FFMPEG", fps=12, codec="libx264", pixelformat="yuv420p", macro_block_size=2
    )
    for t in range(24):
        frame = np.zeros((48, 64, 3), np.uint8)
        frame[10:30, 2 * t : 2 * t + 16] = (200, 80, 40)
        writer.append_data(frame)
    writer.close()
    return path.read_bytes()


@pytest.fixture
def video(tmp_path: Path, real_mp4: bytes) -> Path:
    """A fresh copy of the real MP4, in a folder of its own."""
    folder = tmp_path / "sandbox_out"
    folder.mkdir()
    path = folder / "rollout.mp4"
    path.write_bytes(real_mp4)
    return path


def boxes(data: bytes) -> list[tuple[int, bytes, int]]:
    """(offset, type, size) of each top-level box of a plain (32-bit sizes) MP4."""
    found, offset = [], 0
    while offset < len(data):
        size, kind = struct.unpack(">I4s", data[offset : offset + 8])
        found.append((offset, kind, size))
        offset += size
    return found


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def synthetic(*chunks: bytes) -> bytes:
    """A structurally valid MP4 made of the given boxes after a 20-byte `ftyp`."""
    return struct.pack(">I4s4sI4s", 20, b"ftyp", b"isom", 512, b"isom") + b"".join(chunks)


def box(kind: bytes, payload: bytes = b"") -> bytes:
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def test_real_mp4_is_accepted(video: Path, real_mp4: bytes) -> None:
    assert [kind for _, kind, _ in boxes(real_mp4)].count(b"moov") == 1
    assert check_video(video, CAP) is None
    assert check_video(video, len(real_mp4)) is None  # exactly at the cap


def test_64_bit_and_to_the_end_box_sizes_are_understood(tmp_path: Path) -> None:
    moov = box(b"moov", b"\x00" * 32)
    large_mdat = struct.pack(">I4sQ", 1, b"mdat", 16 + 100) + b"\x01" * 100
    open_mdat = struct.pack(">I4s", 0, b"mdat") + b"\x02" * 100

    assert check_video(write(tmp_path / "a.mp4", synthetic(moov, large_mdat)), CAP) is None
    assert check_video(write(tmp_path / "b.mp4", synthetic(moov, open_mdat)), CAP) is None


def test_symlink_to_a_real_mp4_is_refused(video: Path) -> None:
    link = video.with_name("link.mp4")
    link.symlink_to(video)

    assert check_video(link, CAP) == "not a regular file (a symbolic link)"


def test_hard_linked_file_is_refused(video: Path) -> None:
    os.link(video, video.with_name("other.mp4"))

    assert check_video(video, CAP) == "the file has 2 hard links; a video must have exactly one"


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.mp4"
    os.mkfifo(fifo)

    assert check_video(fifo, CAP) == "not a regular file (a fifo)"


def test_directory_and_missing_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dir.mp4").mkdir()

    assert check_video(tmp_path / "dir.mp4", CAP) == "not a regular file (a directory)"
    assert (
        check_video(tmp_path / "none.mp4", CAP)
        == "cannot read the video: No such file or directory"
    )


def test_empty_file_is_refused(tmp_path: Path) -> None:
    assert check_video(write(tmp_path / "e.mp4", b""), CAP) == "the video file is empty"


def test_file_over_the_cap_is_refused(video: Path, real_mp4: bytes) -> None:
    reason = check_video(video, len(real_mp4) - 1)

    assert reason == f"video larger than the cap ({len(real_mp4)} > {len(real_mp4) - 1} bytes)"


def test_png_and_garbage_are_refused(tmp_path: Path) -> None:
    png = tmp_path / "frame.mp4"
    iio.imwrite(png, np.zeros((8, 8, 3), np.uint8), format="PNG")
    garbage = write(tmp_path / "g.mp4", np.random.default_rng(0).bytes(5000))

    assert check_video(png, CAP) == "not an MP4 file (no ftyp box at the start)"
    assert check_video(garbage, CAP) == "not an MP4 file (no ftyp box at the start)"


def test_implausible_ftyp_size_is_refused(tmp_path: Path, real_mp4: bytes) -> None:
    data = struct.pack(">I", 0xFFFFFFF0) + real_mp4[4:]

    assert check_video(write(tmp_path / "f.mp4", data), CAP) == (
        "not an MP4 file (implausible ftyp box size 4294967280)"
    )


def test_truncated_mp4_is_refused(tmp_path: Path, real_mp4: bytes) -> None:
    reason = check_video(write(tmp_path / "t.mp4", real_mp4[:-100]), CAP)

    offset, _, size = boxes(real_mp4)[-1]
    assert reason == f"box at byte {offset} claims {size} bytes; the file has {size - 100}"


@pytest.mark.parametrize("filler", ["random", "zeros"])
def test_mp4_with_a_megabyte_appended_is_refused(
    tmp_path: Path, real_mp4: bytes, filler: str
) -> None:
    tail = np.random.default_rng(1).bytes(2**20) if filler == "random" else bytes(2**20)

    reason = check_video(write(tmp_path / "x.mp4", real_mp4 + tail), CAP)

    assert reason is not None
    assert reason.startswith(f"box at byte {len(real_mp4)} claims") or reason == (
        f"not an MP4 box type at byte {len(real_mp4)}"
    )


def test_box_claiming_more_than_the_file_is_refused(tmp_path: Path, real_mp4: bytes) -> None:
    offset, _, size = boxes(real_mp4)[-1]
    data = bytearray(real_mp4)
    data[offset : offset + 4] = struct.pack(">I", size + 1)

    reason = check_video(write(tmp_path / "c.mp4", bytes(data)), CAP)

    assert reason == f"box at byte {offset} claims {size + 1} bytes; the file has {size}"


def test_box_smaller_than_its_header_is_refused(tmp_path: Path) -> None:
    data = synthetic(box(b"moov"), struct.pack(">I4s", 4, b"free") + b"\x00" * 8)

    assert check_video(write(tmp_path / "s.mp4", data), CAP) == (
        "box at byte 28 claims 4 bytes; the file has 16"
    )


def test_mp4_without_moov_is_refused(tmp_path: Path, real_mp4: bytes) -> None:
    data = real_mp4.replace(b"moov", b"moox", 1)

    assert check_video(write(tmp_path / "m.mp4", data), CAP) == (
        "the MP4 has no moov box (an unfinished or truncated recording)"
    )


def test_too_many_boxes_are_refused(tmp_path: Path) -> None:
    data = synthetic(box(b"moov"), *[box(b"free")] * 2000)

    assert check_video(write(tmp_path / "n.mp4", data), CAP) == "more than 1024 top-level boxes"


def test_keep_video_copies_an_accepted_file(video: Path, real_mp4: bytes, tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    dest = write(kept / "video.mp4", b"an older video")

    assert keep_video(video, dest, CAP) is None

    assert dest.read_bytes() == real_mp4
    assert video.read_bytes() == real_mp4  # copied, not moved
    assert os.stat(dest).st_ino != os.stat(video).st_ino and os.stat(dest).st_nlink == 1
    assert sorted(p.name for p in kept.iterdir()) == ["video.mp4"]


@pytest.mark.parametrize("damage", ["symlink", "truncated", "over_cap", "fifo"])
def test_keep_video_refuses_and_leaves_nothing(
    video: Path, real_mp4: bytes, tmp_path: Path, damage: str
) -> None:
    src = video.with_name("src.mp4")
    if damage == "symlink":
        src.symlink_to(video)
    elif damage == "fifo":
        os.mkfifo(src)
    else:
        write(src, real_mp4[:-100] if damage == "truncated" else real_mp4 * 2)
    kept = tmp_path / "kept"
    kept.mkdir()

    reason = keep_video(src, kept / "video.mp4", len(real_mp4) + 10)

    assert reason is not None
    assert list(kept.iterdir()) == []
