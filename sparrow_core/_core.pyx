# cython: language_level=3
# distutils: language = c++
"""The compiled core of sparrow: Cython bindings over the C++17 kernels in csrc/sparrow/.

One extension, assembled from the included parts below (uvloop style); the C++ declarations
live in _kernels.pxd. Broken contracts raise ValueError (C++ std::invalid_argument through
`except +`) or TypeError, never crash.
"""
cimport cython
cimport numpy as cnp
import numpy as np
from cpython.number cimport PyNumber_Index
from libc.stdint cimport INT32_MAX, INT32_MIN, int32_t, int64_t, uint64_t
from libc.string cimport memcpy
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector

from sparrow_core._kernels cimport *

cnp.import_array()

include "_convert.pxi"
include "_rng.pxi"
include "_sampling.pxi"
include "_queue.pxi"
include "_task_table.pxi"
include "_steal.pxi"
include "_pipeline.pxi"
include "_resources.pxi"
include "_sim.pxi"
include "_sim_resources.pxi"
