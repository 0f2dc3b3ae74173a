"""Random walks and the Game of Life (queries 6 and 7 of SELECTION.md). Random draws are an
argument (an array drawn once, by the test, from a seeded generator)."""

import jax.numpy as jnp

LIFE_SIZE = 5
life_board = jnp.array([[0, 1, 0, 0, 0], [0, 1, 1, 0, 0], [1, 0, 0, 0, 1], [0, 0, 1, 1, 0], [0, 0, 0, 0, 1]])


# after martindwyer/DataScienceResources DataScienceMachineLearningBootcamp/CourseExercises/99_Notes_Numpy.py
# (query 6): the pure-Python walk of the script, as a function (`random.randint(0, 1)` is draws[i])
def walk_positions(draws, steps):
    position = 0
    walk = [position]
    for i in range(steps):
        step = 1 if draws[i] else -1
        position += step
        walk.append(position)
    return walk


# after niall-oc/things finance/bidask/monte_carlo.py (query 6): trend
def running_trend(path):
    result = [0]
    for p in path:
        result.append(result[-1] + p)
    return result


# after FelipeMQ/CS1100 sorts/conwaylifegame7.py (query 7): play_life
def life_step_counting(a, cnt):
    xmax, ymax = a.shape
    b = a.copy()
    for x in range(xmax):
        for y in range(ymax):
            n = jnp.sum(a[max(x - 1, 0):min(x + 2, xmax), max(y - 1, 0):min(y + 2, ymax)]) - a[x, y]
            if a[x, y]:
                if n < 2 or n > 3:
                    b[x, y] = 0
            elif n == 3:
                cnt += 1
                b[x, y] = 1
    return b, cnt


# after Djdcann/scripts life.py (query 7): neighbors (it reads the module's board and size)
def live_neighbours(x, y):
    x1 = x - 1 if x else x
    y1 = y - 1 if y else y
    x2 = x + 1 if x + 1 < LIFE_SIZE else x
    y2 = y + 1 if y + 1 < LIFE_SIZE else y
    return jnp.sum(life_board[x1:x2 + 1, y1:y2 + 1])


# after anna-jana/numerics-physics-stuff game_of_life.py (query 7): step (`np.int`, removed
# from NumPy, is `int`)
def life_step_rolled(space):
    count = sum(jnp.roll(space, (dr, dc), (0, 1)) for dr in (-1, 0, 1) for dc in (-1, 0, 1)) - space
    return ((count == 3) | (space & (count == 2))).astype(int)
