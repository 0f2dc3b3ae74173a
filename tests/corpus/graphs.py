"""Shortest paths (query 5 of SELECTION.md)."""

import heapq
import heapq as hq
from math import inf

INF = float('Inf')


# after oweijane/data-structures-and-algorithms shortest_path/single_source/dijkstra.py (query 5): dijkstra
def dijkstra_heap(weights, source):
    count = len(weights)
    best = [inf] * count
    done = [False] * count
    heap = [(0, source)]
    while heap:
        dist, v = heapq.heappop(heap)
        if done[v]: continue
        done[v] = True
        best[v] = dist
        for u, w in enumerate(weights[v]):
            if w == inf or done[u]: continue
            heapq.heappush(heap, (dist + w, u))
    return best


# after hello02923/108-1-Algorithm HW6/06170108.py (query 5): Graph.Dijkstra (the method
# reads the module's graph object `g`; here the matrix is a parameter)
def dijkstra_greedy(graph, s):

    nodes = [i for i in range(0, len(graph))]
    visited = []

    if s in nodes:
        visited.append(s)
        nodes.remove(s)
    else:
        return None

    distance = {s: 0}
    named = {str(s): 0}
    for i in nodes:
        distance[i] = graph[s][i]

    k = pre = s

    while nodes:
        mid_distance = float('inf')
        for v in visited:
            for d in nodes:
                new_distance = graph[s][v] + graph[v][d]
                if new_distance < mid_distance and graph[v][d] != 0:
                    mid_distance = new_distance
                    graph[s][d] = new_distance
                    k = d
                    pre = v
        distance[k] = mid_distance
        visited.append(k)
        nodes.remove(k)

        for i in range(0, len(graph)):
            named[str(i)] = distance[i]
    return named


# after revathi1319/APS-2020 dij.py (query 5): dijkstra
def dijkstra_relax(graph, s):
    n = len(graph)

    queue = [(0, s)]

    dist = [INF for i in range(n)]
    dist[s] = 0

    while len(queue) != 0:
        (cost, u) = hq.heappop(queue)

        for v in range(n):
            if dist[v] > dist[u] + graph[u][v]:
                dist[v] = dist[u] + graph[u][v]
                hq.heappush(queue, (dist[v], v))

    return dist
