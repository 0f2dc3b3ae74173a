"""Number theory and sequences (queries 13 and 15 of SELECTION.md)."""

from math import sqrt


# after takus69/AtCoder src/algo/util.py (query 13): gcd
def gcd_swapping(x, y):
    if x < y:
        x, y = y, x
    if y == 0:
        return x
    return gcd_swapping(y, x % y)


# after tsong/project-euler eulerlib.py (query 13): gcd
def gcd_recursive(a, b):
    if b == 0:
        return a
    return gcd_recursive(b, a % b)


# after thomaslindback/ten-euler python/utils.py (query 13): is_prime2
def is_prime_6k(n):
    if n == 2 or n == 3: return True
    if n < 2 or n % 2 == 0: return False
    if n < 9: return True
    if n % 3 == 0: return False
    r = int(sqrt(n))
    f = 5
    while f <= r:
        if n % f == 0: return False
        if n % (f + 2) == 0: return False
        f += 6
    return True


# after ki-li06/BenfordsLaw Sequences.py (query 15): fibonacci
def fibonacci_list(n):
    seq = [1, 1]
    while len(seq) < n:
        nxt = seq[-1] + seq[-2]
        seq.append(nxt)
    return seq


# after MartinThoma/algorithms medium/unit-testing/math_functions.py (query 15): fib
def fib_pair(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
