"""Dynamic programming (queries 4 and 12 of SELECTION.md). Strings become arrays of
character codes where the program only compares characters; a program that compares whole
strings keeps them (as static arguments). Python 2's ``range`` used as a list is ``list(range(...))``."""


# after tarunganesh2004/DP-in-Python 01Knapsack(DP).py (query 4): knapDp
def knapsack_table(profit, weight, cap):
    n = len(profit)
    table = [[0] * (cap + 1) for _ in range(n + 1)]

    for i in range(1, n + 1):
        for j in range(1, cap + 1):
            if weight[i - 1] <= j:
                table[i][j] = max(table[i - 1][j], profit[i - 1] + table[i - 1][j - weight[i - 1]])
            else:
                table[i][j] = table[i - 1][j]

    return table[n][cap], table


# after jrying/algorithm_practice string/two_strings/shortest_edit_distance/shortest_edit_distance.py (query 12): sed
def edit_distance_table(a, b):
    t = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        t[i][0] = i
    for j in range(len(b) + 1):
        t[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = min(t[i - 1][j], t[i - 1][j - 1], t[i][j - 1])
            if a[i - 1] != b[j - 1]:
                t[i][j] += 1
    return t[len(a)][len(b)]


# after lokicui/study algorithm/similarity.py (query 12): levenshtein
def levenshtein_swap(first, second):
    if len(first) > len(second):
        first, second = second, first
    if len(first) == 0:
        return len(second)
    if len(second) == 0:
        return len(first)
    if first == second:
        return 0
    rows = len(first) + 1
    cols = len(second) + 1
    matrix = [list(range(cols)) for x in range(rows)]
    for i in range(1, rows):
        for j in range(1, cols):
            deletion = matrix[i - 1][j] + 1
            insertion = matrix[i][j - 1] + 1
            substitution = matrix[i - 1][j - 1]
            if first[i - 1] != second[j - 1]:
                substitution += 1
            matrix[i][j] = min(insertion, deletion, substitution)
    return matrix[rows - 1][cols - 1]


# after malabz/Jtmsa Levenshtein_distance.py (query 12): LSD
def levenshtein_grid(seq_a, seq_b):

    m = len(seq_a)
    n = len(seq_b)

    grid = [[0] * (n + 1) for _ in range(m + 1)]

    for i in range(m + 1):
        grid[i][0] = i
    for j in range(n + 1):
        grid[0][j] = j

    for i in range(0, m):
        for j in range(0, n):
            if seq_a[i] == seq_b[j]:
                grid[i + 1][j + 1] = grid[i][j]
            else:
                low = min(grid[i + 1][j], grid[i][j + 1], grid[i][j])
                grid[i + 1][j + 1] = low + 1
    return grid[-1][-1]
