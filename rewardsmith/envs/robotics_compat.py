"""Gymnasium-Robotics 1.4.2 on MuJoCo 4: its joint helpers compare joint types the way MuJoCo 4's
enums no longer answer, so every Fetch and Shadow hand environment fails on creation.

`gymnasium_robotics.utils.mujoco_utils` asserts `joint_type in (mjtJoint.mjJNT_HINGE, ...)`
where `joint_type` is a numpy integer read from `model.jnt_type`. Under MuJoCo 4 the enum's
`__eq__` answers False to a numpy integer (the reverse comparison still answers True), so the
assertion fails for every hinge and slide joint. The replacements below do the same thing
with plain integers; they are installed only where the library's own check misbehaves, so
with MuJoCo 3 (Meta-World's environment) the library is left as it is.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
_BALL = int(mujoco.mjtJoint.mjJNT_BALL)


def enum_membership_broken() -> bool:
    """Whether a numpy joint type fails the library's `in (enum, enum)` test, as on MuJoCo 4."""
    slide = mujoco.mjtJoint.mjJNT_SLIDE
    return np.int32(int(slide)) not in (mujoco.mjtJoint.mjJNT_HINGE, slide)


def _joint(model: Any, name: str) -> tuple[int, int]:
    joint_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if joint_id == -1:
        raise ValueError(f"Joint with name '{name}' is not part of the model!")
    return joint_id, int(model.jnt_type[joint_id])


def _span(joint_type: int, free: int, ball: int) -> int:
    return free if joint_type == _FREE else ball if joint_type == _BALL else 1


def set_joint_qpos(model: Any, data: Any, name: str, value: Any) -> None:
    """As the library's: write a joint's positions (7 for a free joint, 4 ball, else 1)."""
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_qposadr[joint_id]
    data.qpos[start : start + _span(joint_type, 7, 4)] = np.array(value)


def set_joint_qvel(model: Any, data: Any, name: str, value: Any) -> None:
    """As the library's: write a joint's velocities (6 for a free joint, 3 ball, else 1)."""
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_dofadr[joint_id]
    data.qvel[start : start + _span(joint_type, 6, 3)] = np.array(value)


def get_joint_qpos(model: Any, data: Any, name: str) -> np.ndarray:
    """As the library's: a copy of a joint's positions."""
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_qposadr[joint_id]
    return np.asarray(data.qpos[start : start + _span(joint_type, 7, 4)]).copy()


def get_joint_qvel(model: Any, data: Any, name: str) -> np.ndarray:
    """As the library's, ball joints included (it reads 4 velocities for them; kept so)."""
    joint_id, joint_type = _joint(model, name)
    start = model.jnt_dofadr[joint_id]
    return np.asarray(data.qvel[start : start + _span(joint_type, 6, 4)]).copy()


def patch_joint_helpers() -> None:
    """Install the replacements where MuJoCo's enums break the library's checks (idempotent).

    The environments call them through the module (`self._utils.set_joint_qpos`), so replacing
    the module's attributes reaches every environment made afterwards.
    """
    if not enum_membership_broken():
        return
    from gymnasium_robotics.utils import mujoco_utils

    mujoco_utils.set_joint_qpos = set_joint_qpos
    mujoco_utils.set_joint_qvel = set_joint_qvel
    mujoco_utils.get_joint_qpos = get_joint_qpos
    mujoco_utils.get_joint_qvel = get_joint_qvel
