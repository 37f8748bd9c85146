"""How a blockwise pass over X cuts its rows: block sizes by bytes, not by a share of n.

Every pass over the rows (products, Gram updates, bounds) walks X in blocks
of rows, each copied to float64 where it needs to be; these rules keep a
block's copy small next to X and a pass over a small X to a few blocks.
"""

from __future__ import annotations

__all__ = [
    "block_rows",
    "block_ranges",
    "fine_block_ranges",
    "BLOCK_ROWS",
    "GRAM_BLOCK_BYTES",
    "BLOCK_BYTES_SHARE",
    "SPARSE_BLOCK_BYTES_SHARE",
    "MIN_BLOCK_BYTES",
    "MIN_BLOCK_ROWS",
]

#: Most rows per block when a product accumulates in float64 or a bound is
#: computed (65536 x 100 float64 is 52 MB, far below the X it comes from).
BLOCK_ROWS = 65536

#: Bytes of one float64 block of rows (4 MiB): the BLAS products (and the
#: symmetric update of a Gram matrix) are as fast on such blocks as on the
#: whole matrix, and the block costs no memory to speak of next to X.
GRAM_BLOCK_BYTES = 1 << 22

#: A block's float64 working copy holds at most about this share of X's own
#: bytes (so the copy of a block of a small or float32 X stays a small
#: fraction of X), but at least ``MIN_BLOCK_BYTES``: below that, a pass's
#: fixed cost per block (a few numpy calls and a block design) outweighs its
#: arithmetic (a pass over a small X in 64 blocks cost 3x one in one).
BLOCK_BYTES_SHARE = 1.0 / 16.0
#: The same share for a sparse X: a sparse block's products make several
#: temporaries of its size (transposes, scaled copies, slabs of a Gram update).
SPARSE_BLOCK_BYTES_SHARE = 1.0 / 64.0
MIN_BLOCK_BYTES = 1 << 16
MIN_BLOCK_ROWS = 128


def block_rows(n_rows, n_features, nnz=None, itemsize=8):
    """Rows per block of a blockwise pass over X.

    Sized by bytes, not by a share of the rows: a block's float64 working
    copy (for a sparse X with ``nnz`` stored entries, of its CSR rows: 12
    bytes an entry) is about ``GRAM_BLOCK_BYTES``, at most
    ``BLOCK_BYTES_SHARE`` of X's bytes (``itemsize`` bytes an entry of a
    dense X; ``SPARSE_BLOCK_BYTES_SHARE`` of a sparse X's), at least
    ``MIN_BLOCK_BYTES`` (and ``MIN_BLOCK_ROWS`` rows), and at most
    ``BLOCK_ROWS`` rows.  A dense float32 X is blocked as a float64 X of its
    shape (``itemsize`` counts as 8).  A block's copy stays small next to X whatever its
    shape, and a pass over a small dense X makes a few blocks, not dozens
    (its fit would otherwise be mostly per-block overhead).
    """
    n_rows = int(n_rows)
    if nnz is None:
        per_row = 8 * max(1, int(n_features))
        # A float32 X gets the blocks of the float64 X of its shape (their
        # float64 copies are 1/8 of its own bytes, not 1/16): halving them
        # doubled the per-block costs that dominate a pass over a small X.
        share = n_rows * max(1, int(n_features)) * max(8, int(itemsize)) * BLOCK_BYTES_SHARE
    else:
        per_row = 12 * max(1.0, nnz / max(1, n_rows))
        share = 12 * max(float(nnz), n_rows) * SPARSE_BLOCK_BYTES_SHARE
    budget = min(GRAM_BLOCK_BYTES, max(MIN_BLOCK_BYTES, share))
    return int(max(MIN_BLOCK_ROWS, min(BLOCK_ROWS, budget // per_row)))


def block_ranges(n_rows, n_features, nnz=None, itemsize=8):
    """``(start, stop)`` of the row blocks of a pass over X (see :func:`block_rows`)."""
    step = block_rows(n_rows, n_features, nnz, itemsize)
    return [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]


def fine_block_ranges(n_rows, n_features, nnz=None):
    """Blocks of at most ``1/64`` of the rows (at least 16), for scans over entries.

    For passes that hold several index or value arrays (8 bytes an entry
    each) per entry of their block, where :func:`block_ranges`' blocks (at
    least ``MIN_BLOCK_ROWS`` rows) would make temporaries a sizeable share
    of a small sparse X.
    """
    step = max(16, min(block_rows(n_rows, n_features, nnz), -(-int(n_rows) // 64)))
    return [(start, min(start + step, n_rows)) for start in range(0, n_rows, step)]
