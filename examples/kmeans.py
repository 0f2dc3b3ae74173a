"""k-means clustering (Lloyd's algorithm) with a convergence test.

Each iteration assigns every point to its nearest centroid, then moves each centroid to the
mean of its points -- or leaves it where it is when no point chose it. The loop stops early
once no centroid moves by more than ``tol``. ``autolax.jit`` turns the per-cluster loop
into a ``lax.scan`` whose appended centroids are stacked for free, the empty-cluster test
into a ``lax.cond``, and the outer loop with its ``break`` into a ``lax.while_loop`` that
stops at convergence; under ``jax.grad`` that loop is differentiated as a masked
``lax.scan`` (iterations after convergence are skipped), so the function stays
differentiable.

    >>> import autolax
    >>> centroids, labels, iterations = autolax.jit(kmeans)(points, initial_centroids)
"""

import jax.numpy as jnp


def kmeans(points, centroids, max_iter=50, tol=1e-4):
    """Refines ``centroids`` (k, d) for ``points`` (n, d); returns (centroids, labels, iterations)."""
    for iteration in range(max_iter):
        distances = jnp.sum((points[:, None, :] - centroids[None, :, :]) ** 2, axis=-1)
        labels = jnp.argmin(distances, axis=1)
        new_centroids = []
        for j in range(centroids.shape[0]):
            members = labels == j
            count = jnp.sum(members)
            if count > 0:
                center = jnp.sum(points * members[:, None], axis=0) / count
            else:
                center = centroids[j]  # an empty cluster stays put
            new_centroids.append(center)
        new_centroids = jnp.stack(new_centroids)
        shift = jnp.max(jnp.abs(new_centroids - centroids))
        centroids = new_centroids
        if shift <= tol:
            break
    return centroids, labels, iteration + 1
