"""Scripted LLM replies for loop tests: good, broken and empty reward code for CartPole."""

GOOD_UPRIGHT = """Here is a reward that keeps the pole upright and the cart centred.

```python
import numpy as np


def compute_reward(state, action, next_state):
    upright = 1.0 - np.abs(next_state.pole_angle) / 0.21
    centred = -0.1 * np.abs(next_state.cart_position)
    return upright + centred, {"upright": upright, "centred": centred}
```
"""

GOOD_ALIVE = """```python
import numpy as np


def compute_reward(state, action, next_state):
    alive = np.ones_like(next_state.pole_angle)
    return alive, {"alive": alive}
```
"""

# Pays for spinning the pole: a reward that ranks good episodes below bad ones.
BAD_SIGN = """```python
import numpy as np


def compute_reward(state, action, next_state):
    tilt = np.abs(next_state.pole_angle)
    return tilt, {"tilt": tilt}
```
"""

SYNTAX_ERROR = """```python
def compute_reward(state, action, next_state)
    return state.pole_angle, {}
```
"""

NO_CODE = "I am sorry, I cannot help with writing reward functions today."
