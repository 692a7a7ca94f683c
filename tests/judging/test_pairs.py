"""Which pair comes next: close scores first, each pair once a round, the human anchor early,
sides alternating; `remaining` counts what is left."""

from __future__ import annotations

from pathlib import Path

from rewardsmith.judging.pairs import HUMAN_ANCHOR, Contestant, next_pair, open_pairs, remaining
from rewardsmith.runs.judgements import Judgement


def contestants(tmp_path: Path, anchor: bool = False) -> list[Contestant]:
    video = tmp_path / "v.mp4"
    video.write_bytes(b"x")
    found = [Contestant(f"r00c0{i}", video, float(i * 100), "code") for i in range(4)]
    found.append(Contestant("r00c09", None, 50.0, "code"))  # no video: never shown
    if anchor:
        found.append(Contestant(HUMAN_ANCHOR, video, 280.0, None, is_anchor=True))
    return found


def test_every_pair_is_shown_once_and_remaining_counts_down(tmp_path: Path) -> None:
    pool = contestants(tmp_path)
    judgements: list[Judgement] = []
    seen = set()
    assert remaining(pool, judgements) == 6
    while (pair := next_pair(pool, judgements)) is not None:
        left, right = pair
        assert frozenset((left.key, right.key)) not in seen
        assert "r00c09" not in (left.key, right.key)
        seen.add(frozenset((left.key, right.key)))
        judgements.append(Judgement(left.key, right.key, "left", "t"))
        assert remaining(pool, judgements) == 6 - len(judgements)
    assert len(seen) == 6 and open_pairs(pool, judgements) == []


def test_the_first_pair_holds_the_anchor_and_close_fitness(tmp_path: Path) -> None:
    pool = contestants(tmp_path, anchor=True)
    pair = next_pair(pool, [])
    assert pair is not None
    keys = {pair[0].key, pair[1].key}
    assert keys == {HUMAN_ANCHOR, "r00c03"}  # 280 vs 300: the closest pair with the anchor


def test_close_scores_come_first(tmp_path: Path) -> None:
    pool = contestants(tmp_path)
    # c00 beat everyone, c03 lost to everyone: c01 and c02 are the close, informative pair.
    judgements = [
        Judgement("r00c00", "r00c01", "left", "t"),
        Judgement("r00c00", "r00c02", "left", "t"),
        Judgement("r00c03", "r00c01", "right", "t"),
        Judgement("r00c03", "r00c02", "right", "t"),
    ]
    pair = next_pair(pool, judgements)
    assert pair is not None and {pair[0].key, pair[1].key} == {"r00c01", "r00c02"}


def test_sides_alternate(tmp_path: Path) -> None:
    pool = contestants(tmp_path)[:2]
    first = next_pair(pool, [])
    flipped = next_pair(
        [*pool, Contestant("x", None, None, None)], [Judgement("p", "q", "left", "t")]
    )
    assert first is not None and flipped is not None
    assert (first[0].key, first[1].key) == (flipped[1].key, flipped[0].key)


def test_the_best_so_far_joins_the_next_rounds_page_and_comes_first(tmp_path: Path) -> None:
    """The incumbent (the run's best after the last earlier selection) is a contestant of the
    next round, labelled as such: its choices make the round's scores comparable with it."""
    from rewardsmith.judging.pairs import round_contestants
    from rewardsmith.runs.candidate import CandidateKey
    from rewardsmith.runs.store import RunStore

    run = RunStore(tmp_path).create_run("cartpole", {}, ["test"], 0)
    for round_, idx, fitness in [(0, 0, 20.0), (0, 1, 30.0), (1, 0, 25.0), (1, 1, 40.0)]:
        run.upsert_candidate(round_, idx, status="trained", fitness=fitness)
        files = run.candidate(CandidateKey(round_, idx))
        files.video_path.parent.mkdir(parents=True, exist_ok=True)
        files.video_path.write_bytes(b"mp4")
    run.write_round_file(0, "summary_a0.json", {"round": 0, "attempt": 0, "best": "r00c01"})
    assert [c.key for c in round_contestants(run, 0)] == ["r00c00", "r00c01"]
    page = round_contestants(run, 1)
    assert [(c.key, c.is_incumbent) for c in page] == [
        ("r00c01", True),
        ("r01c00", False),
        ("r01c01", False),
    ]
    assert page[0].label == "r00c01 (the best so far)" and page[1].label == "r01c00"
    first = next_pair(page, [])
    assert first is not None and "r00c01" in {first[0].key, first[1].key}
    run.close()
