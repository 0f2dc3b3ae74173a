"""Binary search (query 10 of SELECTION.md). Python 2 code is read as Python 3 (``print``
as a function; ``/`` of two ints, Python 2's floor division, as ``//``)."""


# after Hiten-chan/discrete_math bin_search.py (query 10): bin_search
def bin_search_or_message(arr, key):
    lo = 0
    hi = int(len(arr) + 1)
    while lo < hi - 1:
        mid = int((lo + hi) / 2)
        if arr[mid] < key:
            lo = mid
        else:
            hi = mid

    if arr[hi] == key:
        return hi
    elif arr[0] == key:
        return 0
    else:
        return 'Not found'


# after justinxaustin/SYCS100 projects/bsearch/BlackExcellencebsearch.py (query 10): binary_search
def bisect_index(arr, x, small=0, big=None):
    if big is None:
        big = len(arr)
    while small < big:
        mid = (small + big) // 2
        here = arr[mid]
        if here < x:
            small = mid + 1
        elif here > x:
            big = mid
        else:
            return mid
    return -1


# after hongta/practice-python search/binary_search.py (query 10): binary_search
def recursive_search(arr, needle):

    def search(lo, hi):
        print(lo, hi)
        mid = lo + (hi - lo) // 2
        if lo > hi:
            return False
        elif arr[mid] < needle:
            return search(mid + 1, hi)
        elif arr[mid] > needle:
            return search(lo, mid - 1)
        else:
            return mid

    return search(0, len(arr) - 1)


# after danielcodes/practice-problems binary_search.py (query 10): binarySearch
def search_low_high(arr, x):

    low = 0
    high = len(arr) - 1

    while low <= high:
        mid = (high + low) // 2

        if x == arr[mid]:
            return mid
        elif x < arr[mid]:
            high = mid - 1
        else:
            low = mid + 1

    return -1
