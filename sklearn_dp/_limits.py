"""Public ranges of the numeric parameters (estimators and solver options share them)."""

#: Range of the public scale parameters (bounds, radii, step sizes, penalty
#: strengths).  Solvers multiply, square and invert several of them for their
#: public constants (smoothness, step sizes, noise scales), which overflows or
#: divides by zero in floating point far outside this range.  Rescale the data
#: with public constants to stay inside it.
MIN_SCALE, MAX_SCALE = 1e-30, 1e30

#: Range of a finite epsilon.  Beyond MAX_EPSILON a guarantee says nothing
#: (a likelihood ratio above e^100), and the numerical composition of the row
#: count with the solver slows down in proportion to epsilon (about a minute at
#: 1000); far below MIN_EPSILON the noise calibration underflows (shares of
#: epsilon down to MIN_EPSILON * MIN_FRACTION are calibrated).  epsilon=inf is
#: the same solver without noise.
MIN_EPSILON, MAX_EPSILON = 1e-3, 100.0

#: Smallest share of epsilon a solver option may give a part of a mechanism.
MIN_FRACTION = 1e-3
