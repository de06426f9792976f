/* PLACEHOLDER: CUDA bodies of tasks/compare.c, and_gates.c, relu.c and b2a.c. */
#include "tasks/cuda/compare_cuda_internal.h"
