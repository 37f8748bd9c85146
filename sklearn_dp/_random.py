"""Where every fit's random bits come from (docs/randomness.md).

Estimators, transformers and searches obtain the generator of a fit from
:func:`fit_generator`, and nowhere else:

* ``random_state=None`` (the default, for anything released): a ChaCha20
  stream (``randomgen.ChaCha``, 20 rounds) keyed with 256 bits from the
  operating system (``secrets.randbits``), wrapped as a
  ``numpy.random.Generator``.  ChaCha20 is a cryptographically secure
  stream cipher (the generator behind Linux's ``getrandom``): its outputs do
  not reveal its key or its other outputs, so a noise draw that leaks does not
  give away the others.  numpy's own bit generators (PCG64, Philox, SFC64,
  MT19937) are statistical generators: a few outputs determine the state.
* an int seed: ``PCG64(SeedSequence(seed))``, the same fit bit for bit every
  time, **for demonstrations and tests only**: anyone who knows the seed
  regenerates the noise.  A fit charged to a budget keys the seed with the
  budget's identity and its ledger entry (:func:`charged_entropy`), so no two
  charged fits share noise, within one budget or across budgets; such a fit
  is then not reproducible (a new budget has a new identity).
* a ``numpy.random.Generator`` or ``RandomState``: refused for private fits
  (finite epsilon).  ``__init__`` stores parameters as given and ``fit``
  never changes them, so the fitted object would keep the caller's
  generator (in pickles, ``get_params()`` and ``clone``), and its state
  after the fit regenerates the fit's noise: stepping a PCG64 back by the
  fit's draws, or a ``RandomState`` back by its one draw, and refitting on
  two neighbouring data sets tells which one was used, with certainty.
  Non-private fits (``epsilon=inf``) accept them as scikit-learn does.

A search hands each run and its refit a stream of its own as a
:class:`SecretStream`, which only the library creates; the search puts the
caller's ``random_state`` back on the model it publishes.
"""

from __future__ import annotations

import hashlib
import secrets
from numbers import Integral

import numpy as np

__all__ = [
    "SecretStream",
    "check_random_state",
    "fit_generator",
    "secure_generator",
    "split",
    "charged_entropy",
]

#: Bits of operating-system entropy keying a ChaCha20 stream (its full key).
KEY_BITS = 256


def _os_entropy(bits):
    # One place reads the operating system's entropy (tests patch it).
    return secrets.randbits(bits)


def secure_generator(key=None):
    """A ``numpy.random.Generator`` over ChaCha20 keyed with 256 bits of OS entropy.

    Parameters
    ----------
    key : int, optional
        The 256-bit key; by default read from the operating system.

    Returns
    -------
    numpy.random.Generator
        A generator whose bit generator is ``randomgen.ChaCha`` (20 rounds,
        counter 0).
    """
    from randomgen import ChaCha

    if key is None:
        key = _os_entropy(KEY_BITS)
    return np.random.Generator(ChaCha(key=int(key), counter=0, rounds=20))


# Only the private searches hold it: a SecretStream a user could build around
# their own generator would pass the refusal of generator objects.
_SEARCH_TOKEN = object()


class SecretStream:
    """A generator a search hands to one of its inner fits (never a user's object).

    The inner fit draws from ``generator`` as it is; the search replaces the
    stream by the caller's ``random_state`` on the model it publishes, so the
    stream never leaves the search.

    Parameters
    ----------
    generator : numpy.random.Generator
        The inner fit's stream.
    """

    def __init__(self, generator, token=None):
        if token is not _SEARCH_TOKEN:
            raise ValueError(
                "SecretStream is internal to sklearn_dp's private searches; pass "
                "random_state=None or an int seed."
            )
        self._token = token
        self.generator = generator

    def __repr__(self):
        return "SecretStream()"


def _refusal(random_state, owner):
    kind = type(random_state).__name__
    return ValueError(
        f"{owner}: random_state={kind}(...) is refused for a private fit (finite epsilon). "
        "The fitted object would keep the generator in its parameters (pickles, "
        "get_params(), clone), and its state regenerates the fit's noise, which then "
        "protects nothing. Pass random_state=None (the default: fresh cryptographically "
        "secure randomness, for anything you release), or an int seed for a reproducible "
        "demo or test (a seed regenerates the noise too: never release a model fitted "
        "with one)."
    )


def check_random_state(random_state, *, private, owner="The estimator"):
    """Refuse what a fit cannot use (public: a function of the parameters only).

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator, numpy.random.RandomState or SecretStream
        The fit's ``random_state`` parameter.
    private : bool
        Whether the fit is private (finite epsilon).
    owner : str
        Named in the message.

    Raises
    ------
    ValueError
        For a ``Generator`` or ``RandomState`` in a private fit, or for a
        value that is no random state.
    """
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        if private:
            raise _refusal(random_state, owner)
        return
    if isinstance(random_state, SecretStream):
        if getattr(random_state, "_token", None) is not _SEARCH_TOKEN:
            raise ValueError("SecretStream is internal to sklearn_dp's private searches.")
        return
    if random_state is None:
        return
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator; got {random_state!r}."
    )


def charged_entropy(seed, reservation):
    """A 256-bit seed for a seeded fit charged as ``reservation``: unique to its ledger entry.

    The seed, the budget's identity (a random uuid for an in-memory budget,
    the ledger file and its creation time for an SQLite one) and the entry number go through SHA-256 with
    fixed-width framing, so that no two entries of any budgets give the same
    stream.

    Parameters
    ----------
    seed : int
        The caller's seed.
    reservation : sklearn_dp.budget.Reservation
        The fit's reservation.

    Returns
    -------
    int
        Entropy for ``numpy.random.SeedSequence``.
    """
    digest = hashlib.sha256()
    for part in ("sklearn_dp charged fit", str(int(seed)), reservation.budget._identity):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "little") + encoded)
    digest.update(int(reservation.entry_id).to_bytes(16, "little"))
    return int.from_bytes(digest.digest(), "little")


def fit_generator(random_state, *, private, reservation=None, owner="The estimator"):
    """The generator of one fit: its noise and its sampling.

    Call it after the reservation (with ``reservation``, or None when the fit
    is not charged), and :func:`check_random_state` before it.  If the
    operating system gives no entropy the error surfaces (there is no
    fallback seed) and the reservation is marked failed.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator, numpy.random.RandomState or SecretStream
        The fit's ``random_state`` parameter.
    private : bool
        Whether the fit is private (finite epsilon).
    reservation : sklearn_dp.budget.Reservation or None
        The fit's ledger entry, if it is charged to a budget.
    owner : str
        Named in a refusal.

    Returns
    -------
    numpy.random.Generator
        None: a fresh ChaCha20 generator (:func:`secure_generator`); an int:
        ``PCG64(SeedSequence(seed))``, keyed with the ledger entry when
        charged (:func:`charged_entropy`); a ``SecretStream``: its
        generator; a ``Generator`` (non-private fits): itself; a
        ``RandomState`` (non-private fits): a PCG64 seeded from one draw.
    """
    check_random_state(random_state, private=private, owner=owner)
    if random_state is None:
        try:
            return secure_generator()
        except BaseException as exc:
            # No entropy, no fit; nothing was read, and the spend stands.
            if reservation is not None:
                reservation.fail(exc)
            raise
    if isinstance(random_state, SecretStream):
        return random_state.generator
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int64).max, dtype=np.int64))
    entropy = int(random_state)
    if reservation is not None:
        entropy = charged_entropy(entropy, reservation)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def make_rng(random_state):
    """The generator a solver draws from.

    Solvers receive the estimator's generator and use it as it is.  Called
    directly, a solver accepts any random state: it returns a result and
    keeps nothing, so a caller's generator cannot end up in a published
    object.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        None: a fresh ChaCha20 generator keyed with 256 bits of OS entropy;
        an int: ``PCG64(SeedSequence(seed))`` (reproducible, for demos and
        tests); a ``Generator``: itself; a ``RandomState``: a PCG64 seeded
        from one of its draws.

    Returns
    -------
    numpy.random.Generator
        The generator.
    """
    return fit_generator(random_state, private=False)


def split(rng, n):
    """``n`` independent child generators of ``rng`` (for separate streams of one fit).

    A ChaCha20 generator keys each child with 256 bits of its own output,
    which (ChaCha20 being a secure pseudo-random function) are independent
    keys that reveal nothing of the parent or of each other; any other
    generator spawns children from its ``SeedSequence`` (``Generator.spawn``).

    Parameters
    ----------
    rng : numpy.random.Generator
        The parent.
    n : int
        Number of children.

    Returns
    -------
    list of numpy.random.Generator
    """
    from randomgen import ChaCha

    bits = rng.bit_generator
    if not isinstance(bits, ChaCha):
        # Generator.spawn (numpy >= 1.25), spelled for numpy 1.23 and 1.24 too.
        seed_seq = getattr(bits, "seed_seq", None) or bits._seed_seq
        return [np.random.Generator(type(bits)(child)) for child in seed_seq.spawn(n)]
    # Not ChaCha's seed_seq: randomgen gives a keyed ChaCha an unused
    # SeedSequence of 128 OS bits, which its key does not depend on.
    keys = bits.random_raw(4 * n).reshape(n, 4)
    return [secure_generator(int.from_bytes(key.tobytes(), "little")) for key in keys]
