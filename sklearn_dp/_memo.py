"""Caches of pure functions of public inputs that keep no statistics.

``functools.lru_cache`` counts its hits and misses (``cache_info()``) and
reorders its entries on every hit.  A private search calls the calibrations
once per run, with the keys it already computed for its public plan, so
those counts (and the recency order) grow with the number of runs and the
candidates run, which the selection keeps secret: anyone in the process
could read them after the search.  :func:`memoize` keeps only the entries:
a hit changes nothing, so what the cache holds is a function of the keys
ever computed (here: public plans), never of how often they were used.

Some keys are not public: inside a search's runs, a noise scale can depend
on a run's own released value (a released row bound sets the sensitivity of
the next release), and those values, like the number of runs, stay secret.
Within :func:`frozen` a cache only reads: a miss is computed and not kept.
"""

from __future__ import annotations

import contextlib
import functools
import threading

__all__ = ["memoize", "frozen", "is_frozen"]

# A count, not a context variable: threads a run starts (a threaded Dask
# scheduler, joblib's threading backend) do not inherit context variables,
# and a cache entry added from one of them would be as readable as any.
# Freezing the whole process while a search runs costs other threads only
# their cache writes, never a result.
_frozen_depth = 0
_frozen_lock = threading.Lock()


@contextlib.contextmanager
def frozen():
    """Within this block no cache of :func:`memoize` gains an entry, in any thread (hits still read)."""
    global _frozen_depth
    with _frozen_lock:
        _frozen_depth += 1
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1


def is_frozen():
    """Whether a :func:`frozen` block is open anywhere in the process."""
    return _frozen_depth > 0


# Separates positional from keyword arguments in a key (as functools does).
_KEYWORDS = object()


def memoize(maxsize):
    """Decorator: cache a function's results by argument, with no hit counts.

    Parameters
    ----------
    maxsize : int
        Entries kept; when full, the oldest entry (first computed) is dropped.

    Returns
    -------
    callable
        The decorator.  The wrapped function has ``cache_clear()`` and
        ``__wrapped__`` (the function itself), as with ``functools.lru_cache``,
        and no ``cache_info()``.
    """

    def decorate(function):
        entries = {}
        lock = threading.Lock()

        @functools.wraps(function)
        def cached(*args, **kwargs):
            key = args + (_KEYWORDS, *sorted(kwargs.items())) if kwargs else args
            try:
                return entries[key]
            except KeyError:
                pass
            value = function(*args, **kwargs)
            if is_frozen():
                return value
            with lock:
                if key not in entries:
                    if len(entries) >= maxsize:
                        # Insertion order: a hit never moves an entry.
                        del entries[next(iter(entries))]
                    entries[key] = value
            return value

        cached.cache_clear = entries.clear
        return cached

    return decorate
