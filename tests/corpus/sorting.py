"""Sorting (queries 3 and 17 of SELECTION.md). Functions that sort their argument in place
return it at the end (a JAX array is a value: the caller sees the result only so)."""


# after huizhongxue/cs330 sorting.py (query 3): bubbleSort
def sink_sort(arr):
    for i in range(0, len(arr) - 1, 1):
        for j in range(i, -1, -1):
            if arr[j] > arr[j + 1]:
                held = arr[j]
                arr[j] = arr[j + 1]
                arr[j + 1] = held
    return arr


# after AzeemSubhani7/Data-Structures-and-Algorithms sorting/temporary.py (query 3): bubble_sort
# (as in the original, `j` advances only after a swap: the loop ends only on inputs in
# strictly decreasing order)
def bubble_while(arr):
    size = len(arr)
    i = 0
    while (i < size - 1):
        j = 0
        while (j < size - 1 - i):
            if (arr[j] > arr[j + 1]):
                held = arr[j]
                arr[j] = arr[j + 1]
                arr[j + 1] = held
                j = j + 1
        i = i + 1
    return arr


# after asskicker54/alg lab2/task1/sorts.py (query 17): selection_sort
def selection_sort_swap(arr):
    for i in range(0, len(arr) - 1):
        smallest = i
        for j in range(i + 1, len(arr)):
            if arr[j] < arr[smallest]:
                smallest = j

        arr[i], arr[smallest] = arr[smallest], arr[i]
    return arr


# after Kelvinhaa/comp algorithm.py (query 17): selection_sort
def selection_sort_min(values):
    for i in range(len(values) - 1):
        best = i
        for j in range(i + 1, len(values)):
            if values[j] < values[best]:
                best = j

        values[i], values[best] = values[best], values[i]

    return values


# after hannapunzal/Sorting-Algorithms quick.py (query 17): partition
def lomuto_partition(arr, low, high):

    pivot = arr[high]

    i = low - 1

    for j in range(low, high):
        if arr[j] <= pivot:
            i = i + 1

            (arr[i], arr[j]) = (arr[j], arr[i])

    (arr[i + 1], arr[high]) = (arr[high], arr[i + 1])

    return i + 1, arr
