/* PLACEHOLDER: CUDA bodies of tasks/pool.c. */
#include "tasks/cuda/pool_cuda_internal.h"
